// Retries of one pool under a budget, as Envoy's retry budget and gRPC's
// retry throttling bound them: a request may be retried (up to max_retries
// times, which the caller counts) only while the pool's retries stay within
// a share of its requests, so a pool whose backends all fail sees at most
// 1 + budget times the load its clients send (past a small floor), not
// 1 + max_retries times.
//
// One bound, checked before a retry is granted, over the sliding `window`
// (SlidingCount: what was counted in the last 9 to 10 of its 10 slices):
// retries <= max(min_retries, budget x requests), the retry being asked
// counted. The floor lets a quiet pool retry its occasional failure, and it
// is granted afresh each window: a pool's early retries never weigh on a
// later incident once they have left the window (issue 40: a cap over the
// pool's whole life used to refuse a later incident's first retries until
// the pool had served min_retries / budget requests). So over any window,
// upstream attempts <= requests + max(min_retries, budget x requests):
// (1 + budget) x requests wherever a window has min_retries / budget
// requests or more, at most min_retries extra below that.
//
// The back-off before a retry is "full jitter" exponential: uniform in
// [0, min(backoff_max, backoff_base x 2^(attempt - 1))], as Envoy's
// (25 ms base, 10x cap by default).
//
// Pure and single-threaded: the caller passes the time (steady_clock's; one
// earlier than the latest seen is taken as the latest) and the randomness,
// and serialises calls.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/resilience/sliding_count.hpp"

namespace arbiter::resilience {

struct RetryConfig {
  uint32_t max_retries = 2;  // per request, after its first attempt (the caller counts)
  double budget = 0.1;       // retries <= max(min_retries, budget x requests), over the window
  uint32_t min_retries = 10;  // a floor, so a quiet pool can still retry
  Duration window = std::chrono::seconds(10);
  Duration backoff_base = std::chrono::milliseconds(25),
           backoff_max = std::chrono::milliseconds(250);
};

// What is wrong with the config, if anything.
std::optional<std::string> validate(const RetryConfig& c);

class RetryBudget {
 public:
  // `config` valid.
  explicit RetryBudget(RetryConfig config);

  // A client request reached this pool (its first attempt).
  void on_request(TimePoint now);
  // True: a retry may go, and is counted; false: the budget is spent.
  bool try_retry(TimePoint now);
  // The back-off before retry `attempt` (1-based; 0 is taken as 1), drawn
  // from `random` (any 64-bit value: the caller passes a random number), so
  // tests are deterministic.
  Duration backoff(uint32_t attempt, uint64_t random) const;

  uint64_t retries_total() const { return retries_total_; }
  uint64_t refused_total() const { return refused_total_; }
  const RetryConfig& config() const { return config_; }

 private:
  // One more retry keeps `retries` within the bound for `requests`.
  bool within(uint64_t retries, uint64_t requests) const;

  RetryConfig config_;
  SlidingCount requests_, retries_;
  TimePoint last_{};  // the latest time seen
  uint64_t retries_total_ = 0, refused_total_ = 0;  // for metrics, never for the bound
};

}  // namespace arbiter::resilience
