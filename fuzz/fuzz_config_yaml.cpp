// The gateway's YAML config (gateway/config_yaml: yaml-cpp, then every
// section's checks) and --print-config (gateway/config_print). Properties:
// - any text gives a config or a list of errors: never a crash, a hang or
//   an exception out of yaml-cpp's load (other than its syntax error) or
//   parse_config;
// - a config that loads prints to YAML that loads again and prints the same
//   (the round trip config_print_test checks on the examples).
// Inputs naming api_key_file are skipped: reading a file the fuzzer names
// (/dev/zero, a pipe) is the operator's choice, not an input to harden.
#include <yaml-cpp/yaml.h>

#include <string>

#include "fuzz_check.hpp"
#include "gateway/config_print.hpp"
#include "gateway/config_yaml.hpp"

namespace arbiter {
namespace {

// Whether a key api_key_file appears anywhere (bounded: aliases can make
// the node graph cyclic).
bool names_key_file(const YAML::Node& node, int depth, int& budget) {
  if (depth > 64 || --budget < 0) return true;  // too odd to look through: skip it
  if (node.IsMap()) {
    for (const auto& kv : node) {
      if (kv.first.IsScalar() && kv.first.Scalar() == "api_key_file") return true;
      if (names_key_file(kv.first, depth + 1, budget) || names_key_file(kv.second, depth + 1, budget)) return true;
    }
  } else if (node.IsSequence()) {
    for (const auto& e : node) {
      if (names_key_file(e, depth + 1, budget)) return true;
    }
  }
  return false;
}

void check_config(const std::string& text) {
  if (text.find("api_key_file") != std::string::npos) return;
  // Loaded once, looked through, then read from the loaded document:
  // parse_config(text) is this load, its syntax error, and the same call,
  // and a second load would be half of an input's cost.
  YAML::Node root;
  try {
    root = YAML::Load(text);
    int budget = 100000;
    if (names_key_file(root, 0, budget)) return;
  } catch (const YAML::Exception&) {
    return;
  }
  const auto config = parse_config(root);
  if (!config) {
    FUZZ_CHECK(!config.error().empty());
    return;
  }
  const std::string printed = config_to_yaml(*config);
  const auto again = parse_config(printed);
  if (!again) {
    for (const std::string& e : again.error()) std::fprintf(stderr, "%s\n", e.c_str());
    std::fprintf(stderr, "%s\n", printed.c_str());
  }
  FUZZ_CHECK(again);
  FUZZ_CHECK(config_to_yaml(*again) == printed);
}

}  // namespace
}  // namespace arbiter

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  arbiter::check_config(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
