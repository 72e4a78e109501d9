#include "bench/sweep.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "engine/profile.hpp"

namespace arbiter::bench {

std::string sweep_number(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

namespace {

// A token count: the scenario reader takes integers only.
std::string tokens(double v) { return std::to_string(std::max<long>(1, std::lround(v))); }

// Engine-seconds one request of `prompt` and `output` tokens costs on
// `profile` at a batch of `batch` decoding sequences: prefill at its
// per-token cost, each output token a share of a decode step. A load
// estimate, not a prediction: it puts scenarios near the intended load.
double request_cost_s(const engine::CostModel& c, double prompt, double output, double batch) {
  const double context = prompt + output / 2;
  const double step = c.base_s + batch * (c.decode_seq_s + c.context_token_s * context);
  return prompt * c.prefill_token_s + output * step / batch;
}

struct Draw {
  std::mt19937_64 rng;
  double uniform(double lo, double hi) { return std::uniform_real_distribution<>(lo, hi)(rng); }
  int integer(int lo, int hi) { return std::uniform_int_distribution<>(lo, hi)(rng); }
  bool chance(double p) { return uniform(0, 1) < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<std::size_t>(integer(0, static_cast<int>(v.size()) - 1))];
  }
};

struct ClassDraft {
  std::string name;
  std::string slo;      // YAML flow mapping
  std::string traffic;  // YAML flow mapping without rate
  double cost_s = 0;    // engine-seconds per unit of rate
  double compute = 0;   // share of the load
  std::string tenants = {};  // YAML flow mapping
  double base_rate = 0;
};

}  // namespace

std::string random_scenario_yaml(uint64_t seed, uint32_t index, const SweepShape& shape) {
  Draw d{std::mt19937_64(seed * 0x9E3779B97F4A7C15ULL + index)};
  const engine::Profile& profile = *engine::find_profile("llama-8b-a100");
  const auto engines = static_cast<uint32_t>(d.integer(1, static_cast<int>(shape.max_engines)));
  const uint32_t slots = d.pick(std::vector<uint32_t>{32, 64, 64, 64, 128, 256});
  const double load = d.uniform(0.5, 2.5);
  const double batch = std::min<double>(slots, profile.config.max_num_seqs) * 0.75;
  const auto& c = profile.config.cost;

  // Tenants; sometimes one floods a class at 10x the others' traffic.
  const int tenants = d.pick(std::vector<int>{1, 2, 3, 5, 10, 20});
  std::vector<double> tenant_weight(static_cast<std::size_t>(tenants), 1);
  if (d.chance(0.2)) tenant_weight[static_cast<std::size_t>(d.integer(0, tenants - 1))] = 2;
  const bool flood = tenants > 1 && d.chance(0.3);
  const int flooder = d.integer(0, tenants - 1);

  // Classes: a random subset of the default ones, at least one interactive.
  std::vector<ClassDraft> classes;
  const bool critical = d.chance(0.6), completion = d.chance(0.5);
  const bool chat = d.chance(0.8) || !(critical || completion), batch_class = d.chance(0.5);
  if (critical) {
    const double prompt = 400, output = 6;
    classes.push_back(
        {.name = "critical",
         .slo = "{ttft_ms: 300, e2e_ms: 1000}",
         .traffic = "kind: requests, arrival: gamma, burstiness: " + sweep_number(d.uniform(0.4, 1.2)) +
                    ", prompt: {dist: uniform, min: 200, max: 600}, output: {dist: uniform, "
                    "min: 2, max: 10}, max_tokens: 16, patience: {share: 1, after_s: " +
                    sweep_number(d.uniform(3, 10)) + "}",
         .cost_s = request_cost_s(c, prompt, output, batch)});
  }
  if (completion) {
    const double file = 1000, prompt = 60, output = 36;
    // A burst of ~5 keystrokes reaches the engine as one request or a few.
    classes.push_back(
        {.name = "completion",
         .slo = "{ttft_ms: 200}",
         .traffic = "kind: typing, developers: " + std::to_string(d.integer(20, 400)) +
                    ", prompt: {dist: uniform, min: 20, max: 100}, output: {dist: uniform, min: "
                    "8, max: 64}, keystroke_gap_ms: {dist: uniform, min: " +
                    std::to_string(d.integer(50, 120)) + ", max: " +
                    std::to_string(d.integer(150, 300)) + "}" +
                    (shape.type_along > 0 ? ", type_along: " + sweep_number(shape.type_along) : ""),
         .cost_s = 1.5 * request_cost_s(c, file + prompt, output, batch)});
  }
  if (chat) {
    const double prompt = d.uniform(400, 2500), output = d.uniform(80, 300);
    const bool sessions = d.chance(0.4);
    const double turns = 5;
    classes.push_back(
        {.name = "chat",
         .slo = "{ttft_ms: 2000, tpot_ms: 200}",
         .traffic = std::string("kind: ") + (sessions ? "chat" : "requests") +
                    ", prompt: {dist: lognormal, mean: " + sweep_number(prompt) +
                    ", sigma: 0.5, max: 8000}, output: {dist: uniform, min: " +
                    tokens(output / 2) + ", max: " + tokens(output * 1.5) +
                    "}, max_tokens: 1024, prefix: {count: 4, tokens: 400, share: 1}, patience: "
                    "{share: 1, after_s: " +
                    sweep_number(d.uniform(20, 60)) + "}",
         .cost_s = (sessions ? turns * 1.5 : 1) * request_cost_s(c, prompt, output, batch)});
  }
  if (batch_class) {
    const double prompt = d.uniform(300, 1500), output = d.uniform(100, 600);
    classes.push_back(
        {.name = "batch",
         .slo = "{}",
         .traffic = "kind: requests, prompt: {dist: uniform, min: " + tokens(prompt / 2) +
                    ", max: " + tokens(prompt * 1.5) + "}, output: {dist: uniform, min: " +
                    tokens(output / 2) + ", max: " + tokens(output * 1.5) +
                    "}, max_tokens: " + tokens(output * 2) +
                    ", deadline_s: " + sweep_number(d.uniform(120, 600)),
         .cost_s = request_cost_s(c, prompt, output, batch)});
  }
  double total = 0;
  for (ClassDraft& k : classes) total += k.compute = d.uniform(0.2, 1);
  const int flooded = d.integer(0, static_cast<int>(classes.size()) - 1);
  for (std::size_t k = 0; k < classes.size(); ++k) {
    ClassDraft& cd = classes[k];
    cd.base_rate = load * engines * (cd.compute / total) / cd.cost_s;
    // Each class is used by a random non-empty subset of the tenants.
    std::string mix;
    for (int t = 0; t < tenants; ++t) {
      const bool floods = flood && t == flooder && static_cast<int>(k) == flooded;
      if (!floods && t != flooder && !d.chance(0.7)) continue;
      mix += (mix.empty() ? "" : ", ") + std::string("t") + std::to_string(t) + ": " +
             (floods ? "10" : "1");
    }
    cd.tenants = "{" + mix + "}";
  }

  // Sometimes a surge of every class at the same time.
  std::string surge;
  if (d.chance(0.35)) {
    surge = ", rate_changes: [{at_s: " + sweep_number(shape.duration_s * d.uniform(0.2, 0.5)) +
            ", for_s: " + sweep_number(shape.duration_s * d.uniform(0.15, 0.35)) +
            ", factor: " + sweep_number(d.uniform(1.5, 3)) + "}]";
  }

  std::string y = "name: sweep-" + std::to_string(seed) + "-" + std::to_string(index) + "\n";
  y += "finding: \"randomised sweep (issue 11): load " + sweep_number(load) + "x, " +
       std::to_string(engines) + " engines of " + std::to_string(slots) + " slots, " +
       std::to_string(tenants) + " tenants" + (flood ? ", one flooding at 10x" : "") +
       (surge.empty() ? "" : ", a surge") + "\"\n";
  y += "seed: " + std::to_string(seed * 1000 + index) + "\n";
  y += "duration_s: " + sweep_number(shape.duration_s) + "\ndrain_s: " + sweep_number(shape.drain_s) + "\n";
  if (!shape.scheduler.empty()) y += "scheduler: " + shape.scheduler + "\n";
  if (!shape.degradation.empty()) y += "degradation: " + shape.degradation + "\n";
  y += "engine: {profile: llama-8b-a100, count: " + std::to_string(engines) +
       ", max_concurrency: " + std::to_string(slots) +
       (shape.adaptive_capacity.empty() ? "" : ", adaptive_capacity: " + shape.adaptive_capacity) + "}\n";
  y += "policies: [direct, fifo, priority, hybrid]\ntenants:\n";
  for (int t = 0; t < tenants; ++t) {
    y += "  - {name: t" + std::to_string(t) + ", weight: " +
         sweep_number(tenant_weight[static_cast<std::size_t>(t)]) + "}\n";
  }
  y += "classes:\n";
  for (const ClassDraft& cd : classes) {
    y += "  - name: " + cd.name + "\n    slo: " + cd.slo + "\n    tenants: " + cd.tenants +
         "\n    traffic: {" + cd.traffic + ", rate: " + sweep_number(cd.base_rate) + surge + "}\n";
    std::string keys;
    if (shape.typing_through && cd.name == "completion")
      keys = std::string("typing_through: ") + (*shape.typing_through ? "true" : "false");
    if (cd.name == shape.class_name) {
      const std::string& m = shape.class_scheduler;  // "{...}": its inside joins the keys above
      const std::string inner = m.size() >= 2 && m.front() == '{' && m.back() == '}' ? m.substr(1, m.size() - 2) : m;
      keys += (keys.empty() ? "" : ", ") + inner;
    }
    if (!keys.empty()) y += "    scheduler: {" + keys + "}\n";
  }
  return y;
}

}  // namespace arbiter::bench
