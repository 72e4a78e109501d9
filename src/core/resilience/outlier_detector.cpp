#include "core/resilience/outlier_detector.hpp"

#include <algorithm>
#include <utility>

namespace arbiter::resilience {

namespace {

using State = BackendHealthState;

// Slow start's floor: a returning backend gets this share of its slots at
// once, so it is tried at all (Envoy's min_weight_percent, 10% too).
constexpr double kSlowStartFloor = 0.1;
// next_change() reports slow start in this many steps: each tenth of
// capacity from the floor up, so the caller re-reads its slots when a
// backend's share has grown by 10%.
constexpr int64_t kSlowStartSteps = 9;

}  // namespace

std::string_view state_name(BackendHealthState state) {
  switch (state) {
    case State::kHealthy:
      return "healthy";
    case State::kEjected:
      return "ejected";
    case State::kProbing:
      return "probing";
    case State::kSlowStart:
      return "slow_start";
  }
  return "?";
}

std::optional<std::string> validate(const OutlierConfig& c) {
  if (!(c.failure_rate > 0)) return "outlier detection: failure_rate must be > 0 (> 1: rule off)";
  if (c.min_requests == 0) return "outlier detection: min_requests must be >= 1";
  if (c.window < std::chrono::milliseconds(1))
    return "outlier detection: window must be at least 1 ms";
  if (c.base_ejection <= Duration::zero()) return "outlier detection: base_ejection must be > 0";
  if (c.max_ejection < c.base_ejection)
    return "outlier detection: max_ejection must be >= base_ejection";
  if (!(c.max_ejected_share >= 0 && c.max_ejected_share <= 1))
    return "outlier detection: max_ejected_share must be within [0, 1]";
  if (c.slow_start < Duration::zero()) return "outlier detection: slow_start must be >= 0";
  return std::nullopt;
}

OutlierDetector::OutlierDetector(OutlierConfig config, uint32_t backends)
    : config_(config),
      // Envoy's rule: the count grows while base x count is short of the cap.
      max_ejection_count_(static_cast<uint32_t>(
          (config.max_ejection + config.base_ejection - Duration(1)) / config.base_ejection)),
      backends_(backends, Backend(config.window)) {}

void OutlierDetector::record(uint32_t backend, bool failure, TimePoint now) {
  advance(now);
  observe(backend, failure);
}

void OutlierDetector::hold(uint32_t backend, TimePoint until, TimePoint now) {
  advance(now);
  Backend& b = backends_.at(backend);
  if (until <= last_) return;
  switch (b.state) {
    case State::kEjected:
      b.until = std::max(b.until, until);
      return;
    case State::kProbing:
      // The probe's verdict is owed still, once the backend takes work again.
      b.probe_wanted = false;
      break;
    case State::kHealthy:
    case State::kSlowStart:
      b.owes_probe = false;
      break;
  }
  b.held = true;
  b.until = until;
  change(backend, State::kEjected, last_, outlier_reason::kRetryAfter, until - last_);
}

void OutlierDetector::advance(TimePoint now) {
  last_ = std::max(last_, now);
  for (uint32_t id = 0; id < backends_.size(); ++id) settle(id);
}

std::vector<uint32_t> OutlierDetector::take_probe_requests() {
  std::vector<uint32_t> wanted;
  for (uint32_t id = 0; id < backends_.size(); ++id) {
    if (!std::exchange(backends_[id].probe_wanted, false)) continue;
    wanted.push_back(id);
  }
  return wanted;
}

void OutlierDetector::probe_result(uint32_t backend, bool ok, TimePoint now) {
  advance(now);
  switch (backends_.at(backend).state) {
    case State::kProbing:
      if (ok) {
        bring_back(backend, last_, outlier_reason::kProbeOk);
      } else {
        eject(backend, last_, outlier_reason::kProbeFailed);
      }
      return;
    case State::kHealthy:
    case State::kSlowStart:
      observe(backend, !ok);
      return;
    case State::kEjected:
      return;  // a probe from before the ejection
  }
}

bool OutlierDetector::excluded(uint32_t backend) const {
  const State s = backends_.at(backend).state;
  return s == State::kEjected || s == State::kProbing;
}

double OutlierDetector::capacity_fraction(uint32_t backend, TimePoint now) const {
  const Backend& b = backends_.at(backend);
  if (excluded(backend)) return 0;
  now = std::max(now, last_);
  if (b.state != State::kSlowStart || now >= b.until) return 1;
  const double elapsed = std::chrono::duration<double>(now - b.since).count() /
                         std::chrono::duration<double>(config_.slow_start).count();
  return kSlowStartFloor + (1 - kSlowStartFloor) * elapsed;
}

BackendHealthState OutlierDetector::state(uint32_t backend) const {
  return backends_.at(backend).state;
}

uint32_t OutlierDetector::ejection_count(uint32_t backend) const {
  return backends_.at(backend).ejections;
}

uint64_t OutlierDetector::ejections_total(uint32_t backend) const {
  return backends_.at(backend).ejections_total;
}

std::optional<TimePoint> OutlierDetector::next_change() const {
  std::optional<TimePoint> next;
  auto consider = [&](TimePoint t) { next = next ? std::min(*next, t) : t; };
  const int64_t ramp = config_.slow_start.count();
  for (const Backend& b : backends_) {
    if (b.state == State::kEjected) {
      consider(b.until);
    } else if (b.state == State::kSlowStart) {
      // The next step strictly after now, rounded up so that the share has
      // grown by a full tenth when it comes.
      const int64_t step = (last_ - b.since).count() * kSlowStartSteps / ramp + 1;
      consider(step >= kSlowStartSteps
                   ? b.until
                   : b.since + Duration((ramp * step + kSlowStartSteps - 1) / kSlowStartSteps));
    }
  }
  return next;
}

std::optional<TimePoint> OutlierDetector::ejected_until(uint32_t backend) const {
  const Backend& b = backends_.at(backend);
  if (b.state != State::kEjected) return std::nullopt;
  return b.until;
}

std::vector<OutlierTransition> OutlierDetector::take_transitions() {
  return std::exchange(transitions_, {});
}

void OutlierDetector::observe(uint32_t id, bool failure) {
  if (excluded(id)) return;  // sent before it was excluded
  Backend& b = backends_.at(id);
  b.requests.add(last_);
  if (!failure) {
    b.consecutive = 0;
    return;
  }
  b.failures.add(last_);
  ++b.consecutive;
  const std::optional<std::string_view> rule = broken_rule(b);
  if (!rule) return;
  if (may_eject()) {
    eject(id, last_, *rule);
  } else {
    ++refused_;
  }
}

void OutlierDetector::settle(uint32_t id) {
  Backend& b = backends_[id];
  if (b.state == State::kEjected && last_ >= b.until) {
    if (b.owes_probe) {
      b.probe_wanted = true;
      change(id, State::kProbing, b.until, outlier_reason::kEjectionEnded);
    } else {
      bring_back(id, b.until, outlier_reason::kEjectionEnded);
    }
  }
  // A probe that returned it may have started slow start long since.
  if (b.state == State::kSlowStart && last_ >= b.until)
    change(id, State::kHealthy, b.until, outlier_reason::kSlowStartEnded);

  if (b.ejections == 0 || out_for_failures(b)) return;
  const int64_t steps = (last_ - b.decay_from) / config_.window;
  if (steps == 0) return;
  b.ejections -= static_cast<uint32_t>(std::min<int64_t>(steps, b.ejections));
  b.decay_from += steps * config_.window;
}

std::optional<std::string_view> OutlierDetector::broken_rule(const Backend& b) const {
  if (config_.consecutive_failures > 0 && b.consecutive >= config_.consecutive_failures)
    return outlier_reason::kConsecutiveFailures;
  if (config_.failure_rate > 1) return std::nullopt;
  const uint64_t requests = b.requests.count(last_);
  // A quotient, not failure_rate x requests: 3 / 10 is the double 0.3 is,
  // where 0.3 * 10 is a hair over 3.
  if (requests < config_.min_requests) return std::nullopt;
  const double rate = static_cast<double>(b.failures.count(last_)) / static_cast<double>(requests);
  if (rate < config_.failure_rate) return std::nullopt;
  // An outlier, not the pool's weather: a rate its peers share (every
  // engine failing the same prompts) is the model breaker's to act on, and
  // ejecting would only shrink the pool.
  uint64_t peer_requests = 0, peer_failures = 0;
  for (const Backend& other : backends_) {
    if (&other == &b || other.state != BackendHealthState::kHealthy) continue;
    peer_requests += other.requests.count(last_);
    peer_failures += other.failures.count(last_);
  }
  if (peer_requests >= config_.min_requests &&
      rate < kPeerFactor * static_cast<double>(peer_failures) / static_cast<double>(peer_requests))
    return std::nullopt;
  return outlier_reason::kFailureRate;
}

bool OutlierDetector::may_eject() const {
  const auto out = static_cast<std::size_t>(std::ranges::count_if(backends_, [](const Backend& b) {
    return b.state == State::kEjected || b.state == State::kProbing;
  }));
  return out == 0 || static_cast<double>(out + 1) / static_cast<double>(backends_.size()) <=
                         config_.max_ejected_share;
}

void OutlierDetector::eject(uint32_t id, TimePoint at, std::string_view reason) {
  Backend& b = backends_[id];
  b.ejections = std::min(b.ejections + 1, max_ejection_count_);
  ++b.ejections_total;
  const Duration length = std::min(config_.base_ejection * b.ejections, config_.max_ejection);
  b.until = at + length;
  b.consecutive = 0;
  b.held = false;
  b.owes_probe = config_.probe_on_return;
  b.probe_wanted = false;
  change(id, State::kEjected, at, reason, length);
}

void OutlierDetector::bring_back(uint32_t id, TimePoint at, std::string_view reason) {
  Backend& b = backends_[id];
  // Back from failures, the count starts decaying now; back from a mere
  // hold, it kept decaying all along.
  if (out_for_failures(b)) b.decay_from = at;
  b.consecutive = 0;
  b.requests.clear();
  b.failures.clear();
  b.held = b.owes_probe = b.probe_wanted = false;
  if (config_.slow_start > Duration::zero()) {
    b.since = at;
    b.until = at + config_.slow_start;
    change(id, State::kSlowStart, at, reason);
  } else {
    change(id, State::kHealthy, at, reason);
  }
}

void OutlierDetector::change(uint32_t id, BackendHealthState to, TimePoint at,
                             std::string_view reason, Duration ejection) {
  Backend& b = backends_[id];
  transitions_.push_back(
      {.backend = id, .from = b.state, .to = to, .at = at, .ejection = ejection, .reason = reason});
  b.state = to;
}

bool OutlierDetector::out_for_failures(const Backend& b) {
  return b.state == State::kProbing || (b.state == State::kEjected && (!b.held || b.owes_probe));
}

}  // namespace arbiter::resilience
