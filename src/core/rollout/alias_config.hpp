// Model aliases (docs/rollouts.md): a public model name that maps to
// weighted targets (models of the config), for canaries by percentage and
// blue-green switches; requests stick to a side by session or tenant; an
// optional canary is judged against the stable targets and rolled back
// (its weight set to 0) when worse, or promoted through timed steps.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace arbiter::rollout {

struct AliasTarget {
  std::string model;  // a model of the config
  double weight = 1;  // relative; 0: none of the traffic (blue-green's idle side)

  bool operator==(const AliasTarget&) const = default;
};

// What a request sticks by: the same key always goes to the same target
// while the weights stand.
enum class Sticky {
  kSession,  // x-session-id, else the body's `user`, else the tenant
  kTenant,
  kNone,     // every request drawn anew
};

struct CanaryConfig {
  std::string target;  // the target under trial (one of the alias's); the others are stable
  // Worse than the stable targets by more than this share, in error rate,
  // P99 time to first token or P99 inter-token latency: rolled back.
  double margin = 0.1;
  std::chrono::seconds window{60};  // the outcomes compared: those of the last window
  uint32_t min_requests = 50;       // each side, in the window, before any verdict
  // Promotion: the canary's share of the traffic in percent, step by step
  // (e.g. 1, 5, 25, 100), each after step_after of a healthy verdict.
  // Empty: its weight stays as configured (no promotion).
  std::vector<double> steps;
  std::chrono::seconds step_after{300};

  bool operator==(const CanaryConfig&) const = default;
};

// Shadow traffic: a share of the alias's requests also sent to another
// model, its answers discarded and compared with the real ones.
struct ShadowConfig {
  std::string model;            // a model of the config, none of the alias's targets
  double share = 1;             // of the alias's requests, (0, 1]
  uint32_t max_concurrency = 4;  // shadow requests at once; more are skipped (counted)
  std::chrono::seconds timeout{120};  // a shadow answer not whole by then is an error

  bool operator==(const ShadowConfig&) const = default;
};

struct AliasConfig {
  std::string name;
  std::vector<AliasTarget> targets;
  Sticky sticky = Sticky::kSession;
  std::optional<CanaryConfig> canary;
  std::optional<ShadowConfig> shadow;

  bool operator==(const AliasConfig&) const = default;
};

}  // namespace arbiter::rollout
