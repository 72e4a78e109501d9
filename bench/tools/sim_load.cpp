// sim_load: streaming load against arbiter-sim engines, to show the
// simulator is never the bottleneck (docs/simulator.md, "Server: speed").
//
//   sim_load --port-file PATH [--concurrency 2400] [--duration 10] [--warmup 2]
//            [--max-tokens 2000] [--prompt-chars 64] [--pid PID]
//
// Keeps `concurrency` streaming /v1/completions requests open (ignore_eos,
// so each lasts max_tokens tokens; a finished one is replaced at once),
// spread round-robin over the engines' ports, on one thread. Counts SSE
// events ("data: " lines) in the measured window and prints one JSON line:
// events/s, completed requests, the engines' running + waiting requests
// (from /metrics, mid-window), the engines' utilisation (modelled step
// seconds per wall second, from arbiter_sim_busy_seconds_total) and, with
// --pid, the simulator's CPU use in cores over the window (/proc/PID/stat).
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <boost/asio.hpp>

namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;
template <class T = void>
using Task = net::awaitable<T>;
constexpr auto kTuple = net::as_tuple(net::use_awaitable);

struct Options {
  std::string port_file;  // arbiter-sim --port-file output: one port per line
  int concurrency = 2400;
  double duration_s = 10;
  double warmup_s = 2;
  int max_tokens = 2000;
  int prompt_chars = 64;
  int pid = 0;  // the simulator, for CPU accounting
  std::string model = "tiny";
};

struct Counters {
  std::uint64_t events = 0;     // "data: " seen
  std::uint64_t completed = 0;  // streams that ended
  std::uint64_t failed = 0;     // connect/write errors
};

std::optional<Options> parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--port-file") o.port_file = value;
    else if (flag == "--concurrency") o.concurrency = std::stoi(value);
    else if (flag == "--duration") o.duration_s = std::stod(value);
    else if (flag == "--warmup") o.warmup_s = std::stod(value);
    else if (flag == "--max-tokens") o.max_tokens = std::stoi(value);
    else if (flag == "--prompt-chars") o.prompt_chars = std::stoi(value);
    else if (flag == "--pid") o.pid = std::stoi(value);
    else if (flag == "--model") o.model = value;
    else return std::nullopt;
  }
  if (o.port_file.empty() || o.concurrency < 1 || o.duration_s <= 0) return std::nullopt;
  return o;
}

// utime + stime of a process, in seconds.
double cpu_seconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Counts "data: " in a byte stream that arrives in pieces.
class EventCounter {
 public:
  std::uint64_t feed(std::string_view bytes) {
    static constexpr std::string_view kPattern = "data: ";
    std::uint64_t n = 0;
    if (!carry_.empty()) {
      // Matches that start in the previous piece and end in this one.
      const std::string edge = carry_ + std::string(bytes.substr(0, kPattern.size() - 1));
      for (auto at = edge.find(kPattern); at != std::string::npos && at < carry_.size();
           at = edge.find(kPattern, at + 1)) {
        ++n;
      }
    }
    for (auto at = bytes.find(kPattern); at != std::string_view::npos; at = bytes.find(kPattern, at + kPattern.size())) {
      ++n;
    }
    carry_.assign(bytes.substr(bytes.size() - std::min(bytes.size(), kPattern.size() - 1)));
    return n;
  }

 private:
  std::string carry_;  // the last bytes of the previous piece (shorter than the pattern)
};

Task<void> client(tcp::endpoint ep, std::string request, Counters& c, const bool& stop) {
  const auto ex = co_await net::this_coro::executor;
  std::vector<char> buf(16 * 1024);
  while (!stop) {
    tcp::socket s(ex);
    auto [cec] = co_await s.async_connect(ep, kTuple);
    if (cec) {
      ++c.failed;
      continue;
    }
    auto [wec, wn] = co_await net::async_write(s, net::buffer(request), kTuple);
    if (wec) {
      ++c.failed;
      continue;
    }
    EventCounter counter;
    for (;;) {
      auto [ec, n] = co_await s.async_read_some(net::buffer(buf), kTuple);
      if (ec) break;  // Connection: close: the stream ended
      c.events += counter.feed(std::string_view(buf.data(), n));
    }
    ++c.completed;
  }
}

Task<std::string> get(tcp::endpoint ep, std::string target) {
  tcp::socket s(co_await net::this_coro::executor);
  co_await s.async_connect(ep, kTuple);
  const std::string req = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  co_await net::async_write(s, net::buffer(req), kTuple);
  std::string out;
  std::vector<char> buf(64 * 1024);
  for (;;) {
    auto [ec, n] = co_await s.async_read_some(net::buffer(buf), kTuple);
    if (ec) break;
    out.append(buf.data(), n);
  }
  co_return out;
}

double metric_sum(const std::string& text, std::string_view name) {
  double sum = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with(name) && line.size() > name.size() && (line[name.size()] == '{' || line[name.size()] == ' ')) {
      sum += std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  return sum;
}

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// Sums of vllm:num_requests_running, vllm:num_requests_waiting and
// arbiter_sim_busy_seconds_total over the engines.
struct Scrape {
  double running = 0;
  double waiting = 0;
  double busy_s = 0;
};

Task<Scrape> scrape(const std::vector<tcp::endpoint>& eps) {
  Scrape s;
  const std::string target = "/metrics";
  for (const auto& ep : eps) {
    const std::string text = co_await get(ep, target);
    s.running += metric_sum(text, "vllm:num_requests_running");
    s.waiting += metric_sum(text, "vllm:num_requests_waiting");
    s.busy_s += metric_sum(text, "arbiter_sim_busy_seconds_total");
  }
  co_return s;
}

Task<void> measure(const Options& o, std::vector<tcp::endpoint> eps, Counters& c, bool& stop) {
  net::steady_timer timer(co_await net::this_coro::executor);
  timer.expires_after(seconds(o.warmup_s));
  co_await timer.async_wait(kTuple);
  // Events, CPU and wall time are all taken from here to after the last scrape.
  const Counters start = c;
  const double cpu_start = o.pid ? cpu_seconds(o.pid) : 0;
  const auto t0 = Clock::now();
  const Scrape first = co_await scrape(eps);
  timer.expires_after(seconds(o.duration_s / 2));
  co_await timer.async_wait(kTuple);
  const Scrape middle = co_await scrape(eps);
  timer.expires_at(t0 + seconds(o.duration_s));
  co_await timer.async_wait(kTuple);
  const Scrape last = co_await scrape(eps);
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = o.pid ? (cpu_seconds(o.pid) - cpu_start) / wall : -1;
  // Modelled step time per engine per wall second: 1.0 when every engine is
  // busy and its steps last as long as the cost model says (the simulator
  // keeps up); below 1 when an engine idles or the CPU makes steps late.
  const double utilisation = (last.busy_s - first.busy_s) / wall / static_cast<double>(eps.size());
  std::printf(
      "{\"concurrency\":%d,\"engines\":%zu,\"max_tokens\":%d,\"window_s\":%.2f,\"events\":%llu,"
      "\"events_per_s\":%.0f,\"completed\":%llu,\"failed\":%llu,\"running\":%.0f,\"waiting\":%.0f,"
      "\"engine_utilisation\":%.3f,\"sim_cpu_cores\":%.2f}\n",
      o.concurrency, eps.size(), o.max_tokens, wall, static_cast<unsigned long long>(c.events - start.events),
      static_cast<double>(c.events - start.events) / wall,
      static_cast<unsigned long long>(c.completed - start.completed),
      static_cast<unsigned long long>(c.failed - start.failed), middle.running, middle.waiting, utilisation, cpu);
  stop = true;
}

}  // namespace

int main(int argc, char** argv) {
  const auto o = parse(argc, argv);
  if (!o) {
    std::fputs("usage: sim_load --port-file PATH [--concurrency N] [--duration S] [--warmup S] "
               "[--max-tokens N] [--prompt-chars N] [--pid PID] [--model NAME]\n",
               stderr);
    return 2;
  }
  std::vector<tcp::endpoint> eps;
  {
    std::ifstream in(o->port_file);
    for (unsigned p; in >> p;) eps.emplace_back(net::ip::make_address("127.0.0.1"), static_cast<std::uint16_t>(p));
  }
  if (eps.empty()) {
    std::fprintf(stderr, "sim_load: no ports in %s\n", o->port_file.c_str());
    return 2;
  }
  const std::string body = "{\"model\":\"" + o->model + "\",\"prompt\":\"" + std::string(o->prompt_chars, 'x') +
                           "\",\"max_tokens\":" + std::to_string(o->max_tokens) +
                           ",\"ignore_eos\":true,\"stream\":true}";
  const std::string request = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                              "Connection: close\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body;
  net::io_context ioc(1);
  Counters counters;
  bool stop = false;
  for (int i = 0; i < o->concurrency; ++i) {
    net::co_spawn(ioc, client(eps[i % eps.size()], request, counters, stop), net::detached);
  }
  net::co_spawn(ioc, measure(*o, eps, counters, stop), [&ioc](std::exception_ptr) { ioc.stop(); });
  ioc.run();
  return 0;
}
