#include "bench/cli.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench/capacity_bound.hpp"
#include "bench/gateway_config_writer.hpp"
#include "bench/live_run.hpp"
#include "bench/report_json.hpp"
#include "bench/report_markdown.hpp"
#include "bench/report_plots.hpp"
#include "bench/regret.hpp"
#include "bench/scenario_yaml.hpp"
#include "bench/sweep.hpp"
#include "bench/yardstick.hpp"
#include "bench/virtual_run.hpp"

namespace arbiter::bench {
namespace {

constexpr const char* kUsage =
    "usage:\n"
    "  arbiter-bench virtual --scenario FILE --out DIR [--seed N] [--jobs N] [--seeds N]\n"
    "                [--policies direct,fifo,priority,hybrid,hybrid-no-preemption,hybrid-no-affinity,hybrid-no-borrowing,\n"
    "                 hybrid-no-debounce,hybrid-tiebreak,hybrid-no-degradation,hybrid-no-lora-affinity]\n"
    "      --jobs N: N policies at a time, one thread each (default 1); --seeds N: the\n"
    "      DECISIONS.md yardstick over N runs with other arrival seeds (default 1)\n"
    "  arbiter-bench live --scenario FILE --target http://HOST:PORT --out DIR [--seed N]\n"
    "                [--label NAME] [--max-s S] [--gateway-config FILE] [--model NAME]\n"
    "                [--exact-lengths on|off] [--max-connections N] [--direct] [--requests-out FILE]\n"
    "                [--engine-seed N]\n"
    "      open-loop HTTP load in real time; tenant T authenticates as sk-bench-T\n"
    "      --requests-out FILE: one JSON line per request (times, outcome, status, backend)\n"
    "      --direct: the target is an engine (no x-arbiter-* headers; the client\n"
    "                aborts its previous request with the same supersede key)\n"
    "      --engine-seed N: the engines are arbiter-sim started with --seed N (default 0):\n"
    "                typed-along keystrokes predict their text from it\n"
    "  arbiter-bench gateway-config --scenario FILE --out FILE [--sim | --engines-url URL,...]\n"
    "                [--policy fifo|priority|hybrid|hybrid-no-degradation] [--port N] [--model NAME]\n"
    "      an arbiter config running the scenario's gateway (default --sim)\n"
    "  arbiter-bench sweep [--count N] [--seed N] [--from K] [--duration S] [--engines N]\n"
    "                [--jobs N] [--seeds N] [--out DIR] [--max-losing N] [--type-along P]\n"
    "                [--typing-through on|off] [--adaptive-capacity YAML] [--scheduler YAML]\n"
    "                [--class-scheduler CLASS:YAML] [--degradation YAML]\n"
    "      generated scenarios, each run with N arrival seeds (default 3), under fifo,\n"
    "      priority, hybrid and direct; exit 1 when hybrid loses by the yardstick of\n"
    "      DECISIONS.md (D1-D5) on more than N of them (default 0; DIR: sweep.md and\n"
    "      each losing scenario's YAML); --adaptive-capacity: every scenario's\n"
    "      engine.adaptive_capacity, a YAML flow mapping such as '{enabled: true}';\n"
    "      --scheduler: every scenario's scheduler section, e.g. '{tenant_headroom: 0.125}';\n"
    "      --class-scheduler: one class's, e.g. 'completion:{adaptive_debounce: true}';\n"
    "      --degradation: every scenario's degradation section, e.g. '{enabled: true}'\n"
    "  arbiter-bench check DIR\n"
    "      verify DIR/results.json (counts add up, percentiles ordered)\n"
    "  arbiter-bench bound --scenario FILE [--seed N] [--seeds N] [--step S] [--max-interval S]\n"
    "      the least share of requests that fail under any schedule on the scenario's\n"
    "      engines (DECISIONS.md D9; docs/arbiter-bench.md, \"Capacity bound\"): whole\n"
    "      answers, and every answer cut to its first token; the most goodput; intervals on a grid of S\n"
    "      seconds (default 5), at most --max-interval long (default 120)\n";

int usage(const std::string& problem) {
  std::cerr << "arbiter-bench: " << problem << "\n" << kUsage;
  return 2;
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = list.find(',', start);
    out.push_back(list.substr(start, comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

// Flags of a command as name -> value; `switches` take no value. False (after
// usage()) on an unknown or incomplete flag.
bool parse_flags(int argc, char** argv, const std::vector<std::string>& names,
                 const std::vector<std::string>& switches, std::map<std::string, std::string>& out,
                 int& status) {
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (std::find(switches.begin(), switches.end(), flag) != switches.end()) {
      out[flag] = "on";
    } else if (std::find(names.begin(), names.end(), flag) != names.end()) {
      if (i + 1 >= argc) {
        status = usage(flag + " needs a value");
        return false;
      }
      out[flag] = argv[++i];
    } else {
      status = usage("unknown flag " + flag);
      return false;
    }
  }
  return true;
}

template <class T>
bool parse_number(const std::string& text, T& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && end == text.data() + text.size();
}

std::string command_line(int argc, char** argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) out.append(i ? " " : "").append(argv[i]);
  return out;
}

// results.json, report.md and the plots into `out_dir`.
// `appendix`: Markdown added at the end of the report.
int write_outputs(const std::string& out_dir, const Scenario& scenario, const RunResults& results,
                  const std::string& appendix = {}) {
  const auto plots = write_plots(out_dir, scenario, results);
  std::ofstream report(out_dir + "/report.md");
  report << render_markdown(scenario, results, plots) << appendix;
  if (!write_results_json(out_dir + "/results.json", scenario, results) || !report ||
      plots.empty()) {
    std::cerr << "arbiter-bench: cannot write the results into " << out_dir << "\n";
    return 1;
  }
  return 0;
}

bool make_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) std::cerr << "arbiter-bench: cannot create " << dir << ": " << ec.message() << "\n";
  return !ec;
}

int run_live_command(int argc, char** argv) {
  std::map<std::string, std::string> f;
  int status = 0;
  if (!parse_flags(argc, argv,
                   {"--scenario", "--target", "--out", "--seed", "--label", "--max-s",
                    "--gateway-config", "--model", "--exact-lengths", "--max-connections",
                    "--requests-out", "--engine-seed"},
                   {"--direct"}, f, status)) {
    return status;
  }
  if (!f.contains("--scenario") || !f.contains("--target") || !f.contains("--out"))
    return usage("live needs --scenario, --target and --out");
  auto scenario = load_scenario(f["--scenario"]);
  if (!scenario) {
    std::cerr << "arbiter-bench: bad scenario " << scenario.error() << "\n";
    return 2;
  }
  if (scenario->lora.adapters > 0) {
    std::cerr << "arbiter-bench: live runs do not send LoRA adapters yet (the scenario's lora section); "
                 "run it in virtual time\n";
    return 2;
  }
  RunResults results;
  results.info.mode = "live";
  results.info.scenario_path = f["--scenario"];
  results.info.command = command_line(argc, argv);
  results.info.seed = scenario->seed;
  results.info.target = f["--target"];
  results.info.gateway_config = f["--gateway-config"];
  LiveOptions o;
  o.target = f["--target"];
  o.client_supersede = f.contains("--direct");
  o.request.gateway_headers = !o.client_supersede;
  if (f.contains("--label")) o.label = f["--label"];
  if (f.contains("--model")) o.request.model = f["--model"];
  if (f.contains("--engine-seed") && !parse_number(f["--engine-seed"], o.engine_text.seed))
    return usage("--engine-seed must be an integer");
  if (f.contains("--requests-out")) o.requests_out = f["--requests-out"];
  if (f.contains("--seed") && !parse_number(f["--seed"], results.info.seed))
    return usage("--seed must be an integer");
  if (f.contains("--max-s") && !(parse_number(f["--max-s"], o.max_s) && o.max_s > 0))
    return usage("--max-s must be a positive number");
  if (f.contains("--max-connections") &&
      !(parse_number(f["--max-connections"], o.max_connections) && o.max_connections > 0))
    return usage("--max-connections must be a positive integer");
  if (f.contains("--exact-lengths")) {
    if (f["--exact-lengths"] != "on" && f["--exact-lengths"] != "off")
      return usage("--exact-lengths is on or off");
    o.request.exact_lengths = f["--exact-lengths"] == "on";
  }
  if (!make_dir(f["--out"])) return 1;
  auto live = run_live(*scenario, results.info.seed, o);
  if (!live) {
    std::cerr << "arbiter-bench: " << live.error() << "\n";
    return 1;
  }
  if (o.max_s > 0) scenario->duration_s = std::min(scenario->duration_s, o.max_s);
  results.info.notes = std::move(live->notes);
  results.policies.push_back(std::move(live->summary));
  const PolicySummary& p = results.policies.back();
  std::fprintf(stderr, "%s/%s (live): %llu requests, %llu completed, goodput %.2f req/s, %.1f s\n",
               scenario->name.c_str(), p.policy.c_str(),
               static_cast<unsigned long long>(p.all.generated),
               static_cast<unsigned long long>(
                   p.all.outcomes[static_cast<std::size_t>(Outcome::kCompleted)]),
               p.all.goodput_rps, p.wall_s);
  for (const std::string& n : results.info.notes) std::fprintf(stderr, "  note: %s\n", n.c_str());
  return write_outputs(f["--out"], *scenario, results);
}

int run_gateway_config_command(int argc, char** argv) {
  std::map<std::string, std::string> f;
  int status = 0;
  if (!parse_flags(argc, argv,
                   {"--scenario", "--out", "--engines-url", "--policy", "--port", "--model"},
                   {"--sim"}, f, status)) {
    return status;
  }
  if (!f.contains("--scenario") || !f.contains("--out"))
    return usage("gateway-config needs --scenario and --out");
  if (f.contains("--sim") && f.contains("--engines-url"))
    return usage("--sim and --engines-url exclude each other");
  auto scenario = load_scenario(f["--scenario"]);
  if (!scenario) {
    std::cerr << "arbiter-bench: bad scenario " << scenario.error() << "\n";
    return 2;
  }
  GatewayConfigOptions o;
  o.command = command_line(argc, argv);
  if (f.contains("--engines-url")) o.engine_urls = split(f["--engines-url"]);
  if (f.contains("--model")) o.model = f["--model"];
  if (f.contains("--policy")) {
    o.policy = f["--policy"];
    if (!sched::policy_from_string(o.policy) && o.policy != kHybridNoDegradation) {
      return usage("--policy is fifo, priority, hybrid or hybrid-no-degradation");
    }
  }
  if (f.contains("--port") && !(parse_number(f["--port"], o.port) && o.port >= 0 && o.port < 65536))
    return usage("--port must be 0..65535");
  std::vector<std::string> warnings;
  const std::string yaml = gateway_config_yaml(*scenario, o, warnings);
  for (const std::string& w : warnings) std::cerr << "arbiter-bench: not expressed: " << w << "\n";
  std::ofstream out(f["--out"]);
  out << yaml;
  if (!out) {
    std::cerr << "arbiter-bench: cannot write " << f["--out"] << "\n";
    return 1;
  }
  return 0;
}

int run_virtual_command(int argc, char** argv) {
  std::string scenario_path, out_dir, policies, seed_text, jobs_text, seeds_text;
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    std::string* target = flag == "--scenario"   ? &scenario_path
                          : flag == "--out"      ? &out_dir
                          : flag == "--seed"     ? &seed_text
                          : flag == "--policies" ? &policies
                          : flag == "--jobs"     ? &jobs_text
                          : flag == "--seeds"    ? &seeds_text
                                                 : nullptr;
    if (target == nullptr) return usage("unknown flag " + flag);
    if (i + 1 >= argc) return usage(flag + " needs a value");
    *target = argv[++i];
  }
  if (scenario_path.empty() || out_dir.empty()) return usage("--scenario and --out are required");
  auto scenario = load_scenario(scenario_path);
  if (!scenario) {
    std::cerr << "arbiter-bench: bad scenario " << scenario.error() << "\n";
    return 2;
  }
  RunResults results;
  results.info.scenario_path = scenario_path;
  results.info.seed = scenario->seed;
  if (!seed_text.empty()) {
    auto [end, ec] =
        std::from_chars(seed_text.data(), seed_text.data() + seed_text.size(), results.info.seed);
    if (ec != std::errc{} || end != seed_text.data() + seed_text.size())
      return usage("--seed must be an integer");
  }
  unsigned seeds = 1;
  if (!seeds_text.empty() && !(parse_number(seeds_text, seeds) && seeds > 0 && seeds <= 9))
    return usage("--seeds must be an integer from 1 to 9");
  unsigned jobs = 1;
  if (!jobs_text.empty()) {
    auto [end, ec] = std::from_chars(jobs_text.data(), jobs_text.data() + jobs_text.size(), jobs);
    if (ec != std::errc{} || end != jobs_text.data() + jobs_text.size() || jobs == 0 ||
        jobs > 256) {
      return usage("--jobs must be an integer from 1 to 256");
    }
  }
  if (!policies.empty()) {
    scenario->policies = split(policies);
    for (const auto& p : scenario->policies) {
      if (!is_policy_name(p)) return usage("unknown policy " + p);
    }
  }
  results.info.command = command_line(argc, argv);
  if (!make_dir(out_dir)) return 1;
  // Policies are independent runs: `jobs` of them at a time, one thread each.
  results.policies.resize(scenario->policies.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next++) < scenario->policies.size();) {
      results.policies[i] = run_virtual(*scenario, scenario->policies[i], results.info.seed);
    }
  };
  std::vector<std::thread> threads;
  for (unsigned j = 1; j < std::min<std::size_t>(jobs, scenario->policies.size()); ++j)
    threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  for (const PolicySummary& p : results.policies) {
    std::fprintf(
        stderr, "%s/%s: %llu requests, goodput %.2f req/s, utilisation %.1f%%, %.2f s CPU\n",
        scenario->name.c_str(), p.policy.c_str(), static_cast<unsigned long long>(p.all.generated),
        p.all.goodput_rps, p.utilisation * 100, p.wall_s);
  }
  for (const Regret& r : find_regrets(*scenario, results))
    std::fprintf(stderr, "%s: hybrid loses (issue 11): %s\n", scenario->name.c_str(), describe(r).c_str());
  // DECISIONS.md D1-D5: the yardstick's policies again with other arrival
  // seeds, judged with the first run.
  std::vector<std::vector<Check>> runs{judge(*scenario, results)};
  for (unsigned k = 1; k < seeds && !runs.front().empty(); ++k) {
    RunResults more;
    for (const std::string_view p : {"fifo", "priority", "hybrid", "direct"}) {
      if (find_policy(results, p)) more.policies.push_back(run_virtual(*scenario, p, arrival_seed(results.info.seed, k)));
    }
    runs.push_back(judge(*scenario, more));
  }
  if (runs.front().empty()) return write_outputs(out_dir, *scenario, results);
  const std::vector<Regret> losses = combine(runs);
  for (const Regret& r : losses) {
    std::fprintf(stderr, "%s: hybrid loses (D1-D5, %u runs): %s\n", scenario->name.c_str(), seeds,
                 describe(r).c_str());
  }
  return write_outputs(out_dir, *scenario, results, render_verdict(losses, seeds));
}

int run_sweep_command(int argc, char** argv) {
  std::map<std::string, std::string> f;
  int status = 0;
  if (!parse_flags(argc, argv,
                   {"--count", "--seed", "--from", "--duration", "--engines", "--jobs", "--out",
                    "--max-losing", "--type-along", "--typing-through", "--adaptive-capacity",
                    "--scheduler", "--class-scheduler", "--seeds", "--degradation"},
                   {}, f, status)) {
    return status;
  }
  uint64_t seed = 1;
  uint32_t count = 200, first = 0, max_losing = 0;
  unsigned jobs = 1, seeds = 3;
  SweepShape shape;
  if (f.contains("--seed") && !parse_number(f["--seed"], seed)) return usage("--seed must be an integer");
  if (f.contains("--count") && !(parse_number(f["--count"], count) && count > 0))
    return usage("--count must be a positive integer");
  if (f.contains("--from") && !parse_number(f["--from"], first))
    return usage("--from must be an integer");
  if (f.contains("--jobs") && !(parse_number(f["--jobs"], jobs) && jobs > 0 && jobs <= 256))
    return usage("--jobs must be an integer from 1 to 256");
  if (f.contains("--seeds") && !(parse_number(f["--seeds"], seeds) && seeds > 0 && seeds <= 9))
    return usage("--seeds must be an integer from 1 to 9");
  if (f.contains("--max-losing") && !parse_number(f["--max-losing"], max_losing))
    return usage("--max-losing must be an integer");
  if (f.contains("--duration") &&
      !(parse_number(f["--duration"], shape.duration_s) && shape.duration_s >= 1))
    return usage("--duration must be at least 1 (seconds)");
  if (f.contains("--engines") &&
      !(parse_number(f["--engines"], shape.max_engines) && shape.max_engines > 0))
    return usage("--engines must be a positive integer");
  if (f.contains("--type-along") &&
      !(parse_number(f["--type-along"], shape.type_along) && shape.type_along >= 0 && shape.type_along <= 1))
    return usage("--type-along must be a number from 0 to 1");
  if (f.contains("--typing-through")) {
    if (f["--typing-through"] != "on" && f["--typing-through"] != "off")
      return usage("--typing-through is on or off");
    shape.typing_through = f["--typing-through"] == "on";
  }
  if (f.contains("--adaptive-capacity")) shape.adaptive_capacity = f["--adaptive-capacity"];
  if (f.contains("--scheduler")) shape.scheduler = f["--scheduler"];
  if (f.contains("--degradation")) shape.degradation = f["--degradation"];
  if (f.contains("--class-scheduler")) {
    const std::string& v = f["--class-scheduler"];
    const std::size_t colon = v.find(':');
    if (colon == 0 || colon == std::string::npos || colon + 1 == v.size())
      return usage("--class-scheduler is CLASS:YAML, e.g. 'completion:{adaptive_debounce: true}'");
    shape.class_name = v.substr(0, colon);
    shape.class_scheduler = v.substr(colon + 1);
  }
  const auto cases = run_sweep(seed, first, count, shape, jobs, seeds);
  std::size_t losing = 0, noisy = 0;
  for (const SweepCase& c : cases) {
    if (c.regrets.empty() && c.features.empty() && c.noise.empty()) continue;
    losing += !c.regrets.empty();
    noisy += !c.noise.empty();
    std::fprintf(stderr, "%s (%s):\n", c.name.c_str(), c.finding.c_str());
    for (const auto* list : {&c.regrets, &c.features, &c.noise}) {
      for (const Regret& r : *list) std::fprintf(stderr, "  %s\n", describe(r).c_str());
    }
  }
  if (f.contains("--out")) {
    if (!make_dir(f["--out"])) return 1;
    std::ofstream(f["--out"] + "/sweep.md") << render_sweep_markdown(seed, seeds, cases, command_line(argc, argv));
    for (const SweepCase& c : cases) {
      if (!c.regrets.empty() || !c.features.empty() || !c.noise.empty())
        std::ofstream(f["--out"] + "/" + c.name + ".yaml") << c.yaml;
    }
  }
  std::fprintf(stderr, "sweep: %zu scenarios, %zu where hybrid loses (at most %u allowed), noise floor %zu\n",
               cases.size(), losing, max_losing, noisy);
  return losing > max_losing ? 1 : 0;
}

int run_check_command(int argc, char** argv) {
  if (argc != 3) return usage("check takes one directory");
  const std::string path = std::string(argv[2]) + "/results.json";
  const auto problems = check_results_json(path);
  for (const auto& p : problems) std::cerr << "arbiter-bench check: " << p << "\n";
  if (!problems.empty()) return 1;
  std::cerr << "arbiter-bench check: " << path << " is consistent\n";
  return 0;
}

int run_bound_command(int argc, char** argv) {
  std::map<std::string, std::string> flags;
  int status = 0;
  if (!parse_flags(argc, argv, {"--scenario", "--seed", "--seeds", "--step", "--max-interval"}, {}, flags, status))
    return status;
  if (!flags.contains("--scenario")) return usage("--scenario is required");
  auto scenario = load_scenario(flags["--scenario"]);
  if (!scenario) {
    std::cerr << "arbiter-bench: bad scenario " << scenario.error() << "\n";
    return 2;
  }
  uint64_t seed = scenario->seed;
  unsigned seeds = 1;
  double step = 5, max_interval = 120;
  if (flags.contains("--seed") && !parse_number(flags["--seed"], seed)) return usage("--seed must be an integer");
  if (flags.contains("--seeds") && !(parse_number(flags["--seeds"], seeds) && seeds > 0 && seeds <= 9))
    return usage("--seeds must be an integer from 1 to 9");
  if (flags.contains("--step") && !(parse_number(flags["--step"], step) && step > 0))
    return usage("--step must be a positive number of seconds");
  if (flags.contains("--max-interval") && !(parse_number(flags["--max-interval"], max_interval) && max_interval >= step))
    return usage("--max-interval must be a number of seconds at least --step");
  std::printf("| seed | requests | superseded whatever the schedule | failed at least, whole answers | "
              "failed at least, first token only | goodput at most, req/s |\n|---:|---:|---:|---:|---:|---:|\n");
  for (unsigned k = 0; k < seeds; ++k) {
    const uint64_t s = arrival_seed(seed, k);
    const FailureBound b = failure_bound(*scenario, s, step, max_interval);
    std::printf("| %llu | %llu | %llu | %llu (%.2f%%) | %llu (%.2f%%) | %.2f |\n", static_cast<unsigned long long>(s),
                static_cast<unsigned long long>(b.generated), static_cast<unsigned long long>(b.superseded),
                static_cast<unsigned long long>(b.failed), 100 * b.share(),
                static_cast<unsigned long long>(b.failed_cut), 100 * b.share_cut(),
                static_cast<double>(b.good) / scenario->duration_s);
  }
  return 0;
}

}  // namespace

int run_cli(int argc, char** argv) {
  if (argc < 2) return usage("no command");
  const std::string command = argv[1];
  if (command == "virtual") return run_virtual_command(argc, argv);
  if (command == "check") return run_check_command(argc, argv);
  if (command == "sweep") return run_sweep_command(argc, argv);
  if (command == "live") return run_live_command(argc, argv);
  if (command == "gateway-config") return run_gateway_config_command(argc, argv);
  if (command == "bound") return run_bound_command(argc, argv);
  if (command == "--help" || command == "-h") {
    std::cout << kUsage;
    return 0;
  }
  return usage("unknown command " + command);
}

}  // namespace arbiter::bench
