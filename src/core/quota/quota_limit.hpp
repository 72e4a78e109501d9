// One limit of a quota entry (requests a minute, tokens a minute, tokens a
// day), in one of two modes:
// - in-process: a GCRA bucket holding the whole limit;
// - shared (quota_store.redis): the bucket lives in the store and this
//   replica spends a lease taken from it in blocks. While the store is
//   unreachable a local bucket of limit / replicas stands in, and what it
//   admits is reported to the store once it is back, so counts reconcile.
// Pure: the store's answers come in through lease_granted / lease_refused.
#pragma once

#include <optional>

#include "core/quota/gcra.hpp"

namespace arbiter::quota {

class QuotaLimit {
 public:
  // In-process.
  QuotaLimit(double limit, Duration period);
  // Shared: leases of block_share x limit (plus what a request needs).
  QuotaLimit(double limit, Duration period, uint32_t replicas, double block_share);
  // Shared max_concurrent: a lease of slots, each taken at admission and
  // given back when its request ends; nothing to report after an outage
  // (the stand-in is the ledger's in-flight count against limit / replicas).
  static QuotaLimit slots(double limit, uint32_t replicas, double block_share);
  bool counts_slots() const { return slots_; }

  bool shared() const { return lease_.has_value(); }
  // A dynamic quota recomputed. Shared: the store's bucket is read with the
  // new limit from the next call on (what it holds is kept in time, so
  // its level in units scales with the limit).
  void set_limit(TimePoint now, double limit);
  double limit() const { return limit_; }
  Duration period() const { return period_; }

  // How long until `n` fit: zero when they fit now, Duration::max() when
  // they never can; nullopt when this replica's lease is short and a
  // refill from the store must be asked first (store up).
  std::optional<Duration> wait_for(TimePoint now, double n, bool store_up) const;
  void take(TimePoint now, double n, bool store_up);  // may go into debt
  void give_back(double n);
  double remaining(TimePoint now) const;   // shared: as of the store's last answer, plus the lease
  Duration until_full(TimePoint now) const;

  // Shared mode. A refill of `need` units (the lease's shortfall) asks the
  // store for `want` (need plus a block); one at a time.
  double shortfall(double n) const { return n - lease_->units; }
  double want(double need) const { return need + lease_->block; }
  bool refilling() const { return lease_->refilling; }
  void begin_refill() { lease_->refilling = true; }
  void lease_granted(TimePoint now, double granted, double store_remaining, Duration store_reset);
  void lease_refused(TimePoint now, Duration wait);  // the store's bucket is empty for `wait`
  void refill_failed() { lease_->refilling = false; }
  // Carried into a reloaded ledger: a refill in flight answers under its
  // old ref, which may no longer translate, so none is waited for.
  void carried() {
    if (lease_) lease_->refilling = false;
  }
  // What to hand back to the store: an idle lease (positive: give back),
  // debt (negative: charge), plus what the local stand-in admitted while
  // the store was down (charge). Zeroes them; 0 when there is nothing.
  double settle_with_store(TimePoint now, Duration idle);
  // What the local stand-in admitted while the store was down, as a
  // charge (negative; zeroed here; 0 when nothing), whatever the lease
  // holds: billed to the store before it is used again.
  double take_unreported();
  // A hand-back the store did not take: kept for the next one.
  void restore(double units);

 private:
  struct Lease {
    double units = 0;        // granted by the store, not used yet; negative: debt
    double block = 0;
    TimePoint last_used{};
    TimePoint empty_until{}; // the store said no until then
    bool refilling = false;
    double unreported = 0;   // admitted by the stand-in while the store was down
    double store_remaining = 0;  // the store's bucket as of store_at
    TimePoint store_at{};
    TimePoint store_full_at{};
  };
  double limit_;
  Duration period_;
  uint32_t replicas_ = 1;
  double block_share_ = 0;
  bool slots_ = false;
  Gcra local_;  // in-process: the bucket; shared: the stand-in while the store is down
  std::optional<Lease> lease_;
};

}  // namespace arbiter::quota
