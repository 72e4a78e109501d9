// One alias's canary on trial (docs/rollouts.md): the outcomes of the
// requests each side served over the last window, compared; a canary worse
// than the stable targets by more than the margin, in error rate, P99 time
// to first token or P99 inter-token latency, is rolled back (its weight 0);
// a healthy one is promoted through its steps. Pure: the clock is a
// parameter; not thread-safe (the caller's lock).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "core/rollout/alias_config.hpp"

namespace arbiter::rollout {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;

// One request's outcome on a target.
struct Outcome {
  bool error = false;               // the engine failed it (5xx, broken stream); a client's own 4xx is no error
  std::optional<double> ttft_ms;    // streamed answers: time to the first byte of the answer
  std::optional<double> itl_ms;     // streamed answers: mean time between tokens after the first
};

// One side's figures over the window.
struct SideFigures {
  uint32_t requests = 0;
  double error_rate = 0;
  std::optional<double> p99_ttft_ms;  // none below the sample floor
  std::optional<double> p99_itl_ms;
};

struct Verdict {
  enum class Kind { kRolledBack, kPromoted };
  Kind kind;
  std::string reason;  // rolled back: error_rate, ttft_p99 or itl_p99; promoted: step
  SideFigures canary;
  SideFigures stable;
  double canary_percent = 0;  // the canary's share of the traffic from now, percent
};

class CanaryJudge {
 public:
  // Up to this many outcomes per side are kept (the newest).
  static constexpr std::size_t kMaxSamples = 20'000;
  // An error rate is worse only by at least this much too (0 errors
  // against 1 in 500 is noise, not a regression).
  static constexpr double kMinErrorRateGap = 0.01;

  enum class State { kTrial, kRolledBack, kPromoted };

  // `alias` must have a canary whose target is one of its targets.
  CanaryJudge(const AliasConfig& alias, TimePoint now);

  // The weights the alias's targets take now, in config order.
  const std::vector<double>& weights() const { return weights_; }
  std::size_t canary_index() const { return canary_; }
  State state() const { return state_; }
  // The canary's share of the traffic, percent.
  double canary_percent() const;

  void record(std::size_t target, TimePoint now, const Outcome& outcome);
  // A verdict when one is due now: rolled back (worse beyond the margin,
  // with enough requests on each side) or promoted a step (healthy for
  // step_after). nullopt: nothing changes.
  std::optional<Verdict> evaluate(TimePoint now);
  // Both sides' figures over the window as of `now`.
  std::pair<SideFigures, SideFigures> figures(TimePoint now);

 private:
  struct Sample {
    TimePoint at;
    Outcome outcome;
  };
  void prune(TimePoint now);
  SideFigures side(const std::deque<Sample>& samples) const;
  void set_weights();

  AliasConfig alias_;
  CanaryConfig canary_config_;
  std::size_t canary_ = 0;
  State state_ = State::kTrial;
  std::size_t step_ = 0;     // index into steps, while there are steps
  TimePoint step_since_;     // when the current step began
  std::deque<Sample> canary_samples_, stable_samples_;
  std::vector<double> weights_;
};

}  // namespace arbiter::rollout
