#include "core/rollout/canary_judge.hpp"

#include <algorithm>

namespace arbiter::rollout {

namespace {

// The 99th percentile of `values` (nearest rank); none below `floor` values.
std::optional<double> p99(std::vector<double> values, std::size_t floor) {
  if (values.size() < std::max<std::size_t>(floor, 1)) return std::nullopt;
  const std::size_t rank = (values.size() * 99 + 99) / 100 - 1;  // ceil(0.99 n) - 1
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(rank), values.end());
  return values[rank];
}

bool worse(double canary, double stable, double margin) { return canary > stable * (1 + margin); }

}  // namespace

CanaryJudge::CanaryJudge(const AliasConfig& alias, TimePoint now)
    : alias_(alias), canary_config_(*alias.canary), step_since_(now) {
  for (std::size_t i = 0; i < alias_.targets.size(); ++i) {
    if (alias_.targets[i].model == canary_config_.target) canary_ = i;
  }
  set_weights();
}

double CanaryJudge::canary_percent() const {
  double total = 0;
  for (const double w : weights_) total += w;
  return total > 0 ? 100 * weights_[canary_] / total : 0;
}

void CanaryJudge::set_weights() {
  weights_.clear();
  double stable_total = 0;
  for (std::size_t i = 0; i < alias_.targets.size(); ++i) {
    if (i != canary_) stable_total += alias_.targets[i].weight;
  }
  // Without steps the configured weights stand (the canary's included)
  // until a rollback; with steps the canary takes its step's percent and
  // the stable targets share the rest as configured.
  const bool stepped = !canary_config_.steps.empty();
  const double percent = state_ == State::kRolledBack ? 0
                         : stepped                    ? canary_config_.steps[step_]
                                                      : -1;
  for (std::size_t i = 0; i < alias_.targets.size(); ++i) {
    const double configured = alias_.targets[i].weight;
    if (percent < 0) {
      weights_.push_back(configured);
    } else if (i == canary_) {
      weights_.push_back(percent);
    } else {
      weights_.push_back(stable_total > 0 ? (100 - percent) * configured / stable_total : 0);
    }
  }
}

void CanaryJudge::record(std::size_t target, TimePoint now, const Outcome& outcome) {
  if (state_ != State::kTrial || target >= alias_.targets.size()) return;
  std::deque<Sample>& samples = target == canary_ ? canary_samples_ : stable_samples_;
  samples.push_back({now, outcome});
  if (samples.size() > kMaxSamples) samples.pop_front();
}

void CanaryJudge::prune(TimePoint now) {
  const TimePoint from = now - canary_config_.window;
  for (auto* samples : {&canary_samples_, &stable_samples_}) {
    while (!samples->empty() && samples->front().at < from) samples->pop_front();
  }
}

SideFigures CanaryJudge::side(const std::deque<Sample>& samples) const {
  SideFigures f;
  f.requests = static_cast<uint32_t>(samples.size());
  std::vector<double> ttft, itl;
  uint32_t errors = 0;
  for (const Sample& s : samples) {
    errors += s.outcome.error ? 1 : 0;
    if (s.outcome.ttft_ms) ttft.push_back(*s.outcome.ttft_ms);
    if (s.outcome.itl_ms) itl.push_back(*s.outcome.itl_ms);
  }
  f.error_rate = f.requests ? static_cast<double>(errors) / f.requests : 0;
  // Latency needs half the request floor of streamed samples (and 10).
  const std::size_t floor = std::max<std::size_t>(10, canary_config_.min_requests / 2);
  f.p99_ttft_ms = p99(std::move(ttft), floor);
  f.p99_itl_ms = p99(std::move(itl), floor);
  return f;
}

std::pair<SideFigures, SideFigures> CanaryJudge::figures(TimePoint now) {
  prune(now);
  return {side(canary_samples_), side(stable_samples_)};
}

std::optional<Verdict> CanaryJudge::evaluate(TimePoint now) {
  if (state_ != State::kTrial) return std::nullopt;
  const auto [canary, stable] = figures(now);
  if (canary.requests < canary_config_.min_requests || stable.requests < canary_config_.min_requests) {
    return std::nullopt;  // too few to judge either way
  }
  const double margin = canary_config_.margin;
  std::string reason;
  if (worse(canary.error_rate, stable.error_rate, margin) &&
      canary.error_rate - stable.error_rate >= kMinErrorRateGap) {
    reason = "error_rate";
  } else if (canary.p99_ttft_ms && stable.p99_ttft_ms && worse(*canary.p99_ttft_ms, *stable.p99_ttft_ms, margin)) {
    reason = "ttft_p99";
  } else if (canary.p99_itl_ms && stable.p99_itl_ms && worse(*canary.p99_itl_ms, *stable.p99_itl_ms, margin)) {
    reason = "itl_p99";
  }
  if (!reason.empty()) {
    state_ = State::kRolledBack;
    set_weights();
    canary_samples_.clear();
    stable_samples_.clear();
    return Verdict{.kind = Verdict::Kind::kRolledBack, .reason = reason, .canary = canary, .stable = stable,
                   .canary_percent = 0};
  }
  const auto& steps = canary_config_.steps;
  if (steps.empty() || now - step_since_ < canary_config_.step_after) return std::nullopt;
  if (step_ + 1 >= steps.size()) return std::nullopt;  // its last step: judged on, promoted no further
  ++step_;
  step_since_ = now;
  if (step_ + 1 == steps.size() && steps[step_] >= 100) state_ = State::kPromoted;
  set_weights();
  return Verdict{.kind = Verdict::Kind::kPromoted, .reason = "step", .canary = canary, .stable = stable,
                 .canary_percent = canary_percent()};
}

}  // namespace arbiter::rollout
