// loadgen: a loopback HTTP/1.1 load generator for the gateway overhead
// benchmark (bench/overhead.sh).
//
//   loadgen open   --url URL [--rate 1000] [--duration 10] [--warmup 1] [--connections 16]
//   loadgen closed --url URL [--concurrency 32] [--duration 10] [--warmup 1] [--ramp 0]
//   (--ramp S: the connections' first requests spread evenly over S seconds)
//   (URL http:// or https://; --ca FILE: the CA an https:// server's
//   certificate must chain to; TLS 1.3, certificate verified)
//   loadgen free-port [N]        print N distinct free loopback TCP ports
//   loadgen merge FILE           pool runs of the same label and mode (JSON lines)
//   loadgen report FILE          Markdown tables from a file of run results
//
// A run POSTs a ~1 KB OpenAI chat request over keep-alive connections and
// prints one JSON object on stdout. With --stream 1 the request asks for a
// stream, and the run also reports events received, time to the first event
// and the gaps between events (bench/overhead.sh STREAM=1). Runs are bounded in time: in-flight
// requests are abandoned `--timeout` seconds after the window closes.
#include <sys/prctl.h>

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include "loadgen/client.hpp"
#include "loadgen/cpu.hpp"
#include "loadgen/merge.hpp"
#include "loadgen/report.hpp"
#include "loadgen/runner.hpp"
#include "loadgen/stats.hpp"

namespace loadgen {
namespace {

constexpr int kMaxThreads = 64;
constexpr int kMaxConnections = 10000;
constexpr double kMaxDurationS = 600;
constexpr double kMaxRate = 1e6;

struct Options {
  Mode mode = Mode::kOpen;
  std::string url;
  bool tls = false;
  std::string ca_file;
  std::string host;
  uint16_t port = 0;
  std::string path;
  std::string label;
  std::string model = "m1";
  std::size_t body_bytes = 1024;
  bool stream = false;
  std::vector<std::string> headers;
  double rate = 1000;
  double duration_s = 10;
  double warmup_s = 1;
  double timeout_s = 5;
  double ramp_s = 0;
  int connections = 0;  // 0: the mode's default
  int threads = 1;
  std::vector<std::pair<std::string, int>> cpu_pids;  // name=PID: processes to charge CPU to
  std::string samples_path;  // raw latency samples for `loadgen merge`
};

[[noreturn]] void usage(const std::string& error) {
  std::cerr << "loadgen: " << error << "\n"
            << "usage:\n"
               "  loadgen open   --url http://127.0.0.1:PORT/PATH [--rate R] [--duration S] [--warmup S]\n"
               "                 [--connections N] [common options]\n"
               "  loadgen closed --url http://127.0.0.1:PORT/PATH [--concurrency C] [--duration S]\n"
               "                 [--warmup S] [--ramp S] [common options]\n"
               "  loadgen free-port [N]\n"
               "  loadgen merge FILE.jsonl\n"
               "  loadgen report FILE.jsonl\n"
               "common options: --label NAME --threads T --body-bytes B --model M --timeout S\n"
               "                --header 'Name: value' (repeatable) --cpu-pid NAME=PID (repeatable)\n"
               "                --samples FILE (raw latency samples, for merge)\n"
               "                --stream 1 (ask for an SSE stream; time its events)\n";
  std::exit(2);
}

double parse_number(const std::string& flag, const std::string& s, double min, double max) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || v < min || v > max) {
    usage(flag + " must be a number between " + std::to_string(min) + " and " + std::to_string(max));
  }
  return v;
}

// Only loopback targets: this tool must never load anything but this machine.
void parse_url(Options& o) {
  o.tls = o.url.starts_with("https://");
  const std::string_view scheme = o.tls ? "https://" : "http://";
  if (!o.url.starts_with(scheme)) usage("--url must start with http:// or https://");
  const std::string rest = o.url.substr(scheme.size());
  const auto slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  o.path = slash == std::string::npos ? "/" : rest.substr(slash);
  const auto colon = authority.rfind(':');
  if (colon == std::string::npos) usage("--url must name a port");
  o.host = authority.substr(0, colon);
  o.port = static_cast<uint16_t>(parse_number("--url port", authority.substr(colon + 1), 1, 65535));
  if (o.host == "localhost") o.host = "127.0.0.1";
  if (o.host == "[::1]") o.host = "::1";
  boost::system::error_code ec;
  const auto addr = boost::asio::ip::make_address(o.host, ec);
  if (ec || !addr.is_loopback()) usage("--url must be a loopback address (127.0.0.0/8, ::1, localhost)");
}

Options parse_args(int argc, char** argv) {
  Options o;
  const std::string mode = argv[1];
  if (mode == "open") o.mode = Mode::kOpen;
  else if (mode == "closed") o.mode = Mode::kClosed;
  else usage("unknown mode '" + mode + "'");
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--url") o.url = value;
    else if (flag == "--label") o.label = value;
    else if (flag == "--ca") o.ca_file = value;
    else if (flag == "--model") o.model = value;
    else if (flag == "--header") o.headers.push_back(value);
    else if (flag == "--samples") o.samples_path = value;
    else if (flag == "--stream") o.stream = parse_number(flag, value, 0, 1) != 0;
    else if (flag == "--rate") o.rate = parse_number(flag, value, 1, kMaxRate);
    else if (flag == "--duration") o.duration_s = parse_number(flag, value, 0.1, kMaxDurationS);
    else if (flag == "--warmup") o.warmup_s = parse_number(flag, value, 0, kMaxDurationS);
    else if (flag == "--timeout") o.timeout_s = parse_number(flag, value, 0.1, kMaxDurationS);
    else if (flag == "--ramp") o.ramp_s = parse_number(flag, value, 0, kMaxDurationS);
    else if (flag == "--body-bytes") o.body_bytes = static_cast<std::size_t>(parse_number(flag, value, 64, 1 << 24));
    else if (flag == "--threads") o.threads = static_cast<int>(parse_number(flag, value, 1, kMaxThreads));
    else if (flag == "--connections" || flag == "--concurrency")
      o.connections = static_cast<int>(parse_number(flag, value, 1, kMaxConnections));
    else if (flag == "--cpu-pid") {
      const auto eq = value.find('=');
      if (eq == std::string::npos || eq == 0) usage("--cpu-pid wants NAME=PID");
      o.cpu_pids.emplace_back(value.substr(0, eq),
                              static_cast<int>(parse_number(flag, value.substr(eq + 1), 1, 1 << 30)));
    } else {
      usage("unknown option " + flag);
    }
  }
  if (o.url.empty()) usage("--url is required");
  parse_url(o);
  if (o.connections == 0) o.connections = o.mode == Mode::kOpen ? 16 : 32;
  if (o.threads > o.connections) o.threads = o.connections;
  if (o.label.empty()) o.label = o.url;
  return o;
}

int free_ports(int argc, char** argv) {
  const int n = argc > 2 ? static_cast<int>(parse_number("N", argv[2], 1, 64)) : 1;
  boost::asio::io_context ctx;
  // All bound at once so the kernel hands out distinct ports.
  std::vector<tcp::acceptor> acceptors;
  for (int i = 0; i < n; ++i) {
    acceptors.emplace_back(ctx, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  }
  for (int i = 0; i < n; ++i) std::cout << (i ? " " : "") << acceptors[i].local_endpoint().port();
  std::cout << "\n";
  return 0;
}

int run(const Options& o) {
  // Timer wake-ups as exact as the kernel allows: the default 50 µs slack
  // would show up in every open-loop sample.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

  const std::string body = make_chat_body(o.model, o.body_bytes, o.stream);
  const std::string request = make_raw_request(o.host, o.port, o.path, body, o.headers);
  const auto start = Clock::now() + std::chrono::milliseconds(50);
  auto seconds = [](double s) { return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)); };

  Plan base;
  base.mode = o.mode;
  base.endpoint = tcp::endpoint(boost::asio::ip::make_address(o.host), o.port);
  std::optional<ssl::context> tls;
  if (o.tls) {
    tls.emplace(ssl::context::tls_client);
    SSL_CTX_set_min_proto_version(tls->native_handle(), TLS1_3_VERSION);
    if (!o.ca_file.empty()) tls->load_verify_file(o.ca_file);
    tls->set_verify_mode(ssl::verify_peer);
    base.tls = &*tls;
  }
  base.request = &request;
  base.start = start;
  base.measure = start + seconds(o.warmup_s);
  base.end = base.measure + seconds(o.duration_s);
  base.kill = base.end + seconds(o.timeout_s);
  base.rate = o.rate;
  base.threads = o.threads;
  base.ramp = seconds(o.ramp_s);
  base.total_connections = o.connections;

  std::vector<std::unique_ptr<Runner>> runners;
  for (int t = 0; t < o.threads; ++t) {
    Plan p = base;
    p.thread_index = t;
    p.connections = o.connections / o.threads + (t < o.connections % o.threads ? 1 : 0);
    runners.push_back(std::make_unique<Runner>(p));
  }

  std::vector<CpuWatch> watches;
  for (const auto& [name, pid] : o.cpu_pids) watches.push_back(CpuWatch{name, with_children(pid)});

  std::vector<std::thread> threads;
  for (auto& r : runners) threads.emplace_back([&r] { r->run(); });

  // CPU is sampled at the window's edges, from this otherwise idle thread.
  std::this_thread::sleep_until(base.measure);
  for (auto& w : watches) w.start_ns = w.now_ns();
  const double self_start = self_cpu_seconds();
  std::this_thread::sleep_until(base.end);
  for (auto& w : watches) w.end_ns = w.now_ns();
  const double self_end = self_cpu_seconds();
  for (auto& t : threads) t.join();

  Stats all;
  for (auto& r : runners) all.merge(r->stats());

  boost::json::object out;
  out["label"] = o.label;
  out["mode"] = o.mode == Mode::kOpen ? "open" : "closed";
  out["url"] = o.url;
  if (o.mode == Mode::kOpen) out["rate"] = o.rate;
  if (o.ramp_s > 0) out["ramp_s"] = o.ramp_s;
  out["duration_s"] = o.duration_s;
  out["warmup_s"] = o.warmup_s;
  out["connections"] = o.connections;
  out["threads"] = o.threads;
  out["request_bytes"] = request.size();
  out["body_bytes"] = body.size();
  const uint64_t requests = o.mode == Mode::kOpen ? all.scheduled : all.completed + all.errors;
  out["requests"] = requests;
  out["completed"] = all.completed;
  out["errors"] = all.errors;
  boost::json::object kinds;
  for (const auto& [k, v] : all.error_kinds) kinds[k] = v;
  out["error_kinds"] = std::move(kinds);
  out["throughput_rps"] = round1(static_cast<double>(all.completed) / o.duration_s);
  out["response_body_bytes_mean"] =
      all.completed ? static_cast<double>(all.bytes_in) / static_cast<double>(all.completed) : 0.0;
  if (!o.samples_path.empty()) {
    if (!all.latency.save(o.samples_path) || (o.mode == Mode::kOpen && !all.service.save(o.samples_path + ".service")) ||
        (o.stream && (!all.ttft.save(o.samples_path + ".ttft") || !all.itl.save(o.samples_path + ".itl")))) {
      std::cerr << "loadgen: cannot write " << o.samples_path << "\n";
      return 1;
    }
    out["samples"] = o.samples_path;
  }
  out["latency_us"] = summarize(std::move(all.latency));
  if (o.mode == Mode::kOpen) out["service_us"] = summarize(std::move(all.service));
  if (o.stream) {
    out["events"] = all.events;
    out["ttft_us"] = summarize(std::move(all.ttft));
    out["itl_us"] = summarize(std::move(all.itl));
  }
  boost::json::object cpu;
  cpu["loadgen"] = self_end - self_start;
  for (const auto& w : watches) cpu[w.name] = w.seconds();
  out["cpu_s"] = std::move(cpu);
  std::cout << boost::json::serialize(out) << std::endl;
  return all.completed > 0 ? 0 : 1;
}

}  // namespace
}  // namespace loadgen

int main(int argc, char** argv) {
  if (argc < 2) loadgen::usage("missing mode");
  const std::string mode = argv[1];
  try {
    if (mode == "free-port") return loadgen::free_ports(argc, argv);
    if (mode == "merge") {
      if (argc != 3) loadgen::usage("merge wants one file");
      return loadgen::merge(argv[2], std::cout);
    }
    if (mode == "report") {
      if (argc != 3) loadgen::usage("report wants one file");
      return loadgen::report(argv[2], std::cout);
    }
    return loadgen::run(loadgen::parse_args(argc, argv));
  } catch (const std::exception& e) {
    std::cerr << "loadgen: " << e.what() << "\n";
    return 1;
  }
}
