// The breaker around the shared quota store (Redis): any failed call takes
// the store down for a back-off (1 s, doubling while probes fail, up to
// 30 s); past it one probe may try, and a success brings it back. While it
// is down the quota ledger stands in locally (QuotaLimit), so a dead or
// hung Redis costs a request at most one call's timeout, once.
#pragma once

#include "core/quota/gcra.hpp"

namespace arbiter::quota {

class StoreBreaker {
 public:
  explicit StoreBreaker(Duration base = std::chrono::seconds(1), Duration max = std::chrono::seconds(30))
      : base_(base), max_(max), backoff_(base) {}

  bool up() const { return up_; }
  // Down and past its back-off: a probe may try now.
  bool probe_due(TimePoint now) const { return !up_ && now >= retry_at_; }
  // A call failed: down (again), the back-off doubled if it was a probe.
  void failed(TimePoint now) {
    if (!up_) backoff_ = std::min(backoff_ * 2, max_);
    up_ = false;
    retry_at_ = now + backoff_;
  }
  void succeeded() {
    up_ = true;
    backoff_ = base_;
  }
  Duration backoff() const { return backoff_; }

 private:
  Duration base_, max_, backoff_;
  bool up_ = true;
  TimePoint retry_at_{};
};

}  // namespace arbiter::quota
