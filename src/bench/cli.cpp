#include "bench/cli.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "bench/report_json.hpp"
#include "bench/report_markdown.hpp"
#include "bench/report_plots.hpp"
#include "bench/scenario_yaml.hpp"
#include "bench/virtual_run.hpp"

namespace arbiter::bench {
namespace {

constexpr const char* kUsage =
    "usage:\n"
    "  arbiter-bench virtual --scenario FILE --out DIR [--seed N] [--jobs N]\n"
    "                [--policies direct,fifo,priority,hybrid,hybrid-no-preemption]\n"
    "      --jobs N: N policies at a time, one thread each (default 1)\n"
    "  arbiter-bench check DIR\n"
    "      verify DIR/results.json (counts add up, percentiles ordered)\n"
    "Live mode (HTTP load against a gateway) is not built yet.\n";

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

int run_virtual_command(int argc, char** argv) {
  std::string scenario_path, out_dir, policies, seed_text, jobs_text;
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    std::string* target = flag == "--scenario"   ? &scenario_path
                          : flag == "--out"      ? &out_dir
                          : flag == "--seed"     ? &seed_text
                          : flag == "--policies" ? &policies
                          : flag == "--jobs"     ? &jobs_text
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
  for (int i = 0; i < argc; ++i) results.info.command += (i ? " " : "") + std::string(argv[i]);

  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) {
    std::cerr << "arbiter-bench: cannot create " << out_dir << ": " << ec.message() << "\n";
    return 1;
  }
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
  const auto plots = write_plots(out_dir, *scenario, results);
  std::ofstream report(out_dir + "/report.md");
  report << render_markdown(*scenario, results, plots);
  if (!write_results_json(out_dir + "/results.json", *scenario, results) || !report ||
      plots.empty()) {
    std::cerr << "arbiter-bench: cannot write the results into " << out_dir << "\n";
    return 1;
  }
  return 0;
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

}  // namespace

int run_cli(int argc, char** argv) {
  if (argc < 2) return usage("no command");
  const std::string command = argv[1];
  if (command == "virtual") return run_virtual_command(argc, argv);
  if (command == "check") return run_check_command(argc, argv);
  if (command == "--help" || command == "-h") {
    std::cout << kUsage;
    return 0;
  }
  return usage("unknown command " + command);
}

}  // namespace arbiter::bench
