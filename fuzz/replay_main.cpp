// The harnesses without libFuzzer, for `make test` (ctest fuzz_replay_<name>;
// docs/security.md, "Fuzzing"): every committed seed of a harness, then a
// fixed number of mutants of each (2,000) (bytes flipped, inserted, erased, copied,
// from a fixed seed, so a run is the same every time). The harness's property
// checks (FUZZ_CHECK) run in the normal build; sanitizers and the
// coverage-guided search are `make fuzz`'s.
//
// usage: fuzz_replay_<name> [--mutants N] DIR_OR_FILE...
// A failed property aborts; the input that did it is named first and its
// bytes written to ./fuzz-replay-failure, for `fuzz_<name> FILE` to replay.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size);

namespace {

// What runs now, for the abort handler to name and keep.
char current[512];
const std::string* current_input = nullptr;

void name_input(int sig) {
  const char prefix[] = "fuzz_replay: failed on ";
  (void)!write(2, prefix, sizeof prefix - 1);
  (void)!write(2, current, std::strlen(current));
  (void)!write(2, ", saved in fuzz-replay-failure\n", 31);
  if (const int fd = open("fuzz-replay-failure", O_WRONLY | O_CREAT | O_TRUNC, 0644); fd >= 0 && current_input) {
    (void)!write(fd, current_input->data(), current_input->size());
    close(fd);
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::filesystem::path> inputs_in(const std::vector<std::string>& args) {
  std::vector<std::filesystem::path> files;
  for (const auto& arg : args) {
    if (std::filesystem::is_directory(arg)) {
      for (const auto& entry : std::filesystem::directory_iterator(arg))
        if (entry.is_regular_file()) files.push_back(entry.path());
    } else {
      files.emplace_back(arg);
    }
  }
  std::sort(files.begin(), files.end());  // the same order, so the same mutants, on every machine
  return files;
}

// One to four edits of the kinds libFuzzer starts with.
std::string mutate(std::string s, std::mt19937_64& rng) {
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < edits; ++i) {
    const std::size_t at = s.empty() ? 0 : rng() % s.size();
    switch (rng() % 5) {
      case 0:
        if (!s.empty()) s[at] = static_cast<char>(s[at] ^ (1u << (rng() % 8)));
        break;
      case 1: s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), static_cast<char>(rng())); break;
      case 2:
        if (!s.empty()) s.erase(at, 1 + rng() % std::min<std::size_t>(8, s.size() - at));
        break;
      case 3:
        if (!s.empty()) {
          const std::size_t from = rng() % s.size();
          s.insert(at, s.substr(from, 1 + rng() % 16));
        }
        break;
      default:  // a byte the parsers branch on: quote, brace, colon, digit, minus, CR, LF, NUL
        if (!s.empty()) s[at] = "\"{}:0-9\r\n\0"[rng() % 10];
        break;
    }
  }
  return s;
}

void run(const std::string& input, const std::string& name) {
  std::snprintf(current, sizeof current, "%s", name.c_str());
  current_input = &input;
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

}  // namespace

int main(int argc, char** argv) {
  long mutants = 2000;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--mutants") == 0 && i + 1 < argc) {
      mutants = std::strtol(argv[++i], nullptr, 10);
    } else {
      args.emplace_back(argv[i]);
    }
  }
  const auto files = inputs_in(args);
  if (files.empty()) {
    std::fprintf(stderr, "fuzz_replay: no inputs in the paths given\n");
    return 2;
  }
  std::signal(SIGABRT, name_input);
  std::signal(SIGSEGV, name_input);
  std::mt19937_64 rng(1);
  long runs = 0;
  for (const auto& file : files) {
    const std::string seed = read_file(file);
    run(seed, file.string());
    ++runs;
    for (long m = 0; m < mutants; ++m, ++runs) run(mutate(seed, rng), file.string() + " (mutant " + std::to_string(m) + ")");
  }
  std::printf("fuzz_replay: %zu seeds, %ld inputs, every property held\n", files.size(), runs);
  return 0;
}
