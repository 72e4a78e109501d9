#include "core/quota/quota_limit.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace arbiter::quota {

QuotaLimit::QuotaLimit(double limit, Duration period) : limit_(limit), period_(period), local_(limit, period) {}

QuotaLimit::QuotaLimit(double limit, Duration period, uint32_t replicas, double block_share)
    : limit_(limit),
      period_(period),
      replicas_(std::max(replicas, 1u)),
      local_(limit / replicas_, period),
      lease_(Lease{}) {
  block_share_ = block_share;
  lease_->block = limit * block_share;
  lease_->store_remaining = limit;
}

QuotaLimit QuotaLimit::slots(double limit, uint32_t replicas, double block_share) {
  QuotaLimit l(limit, std::chrono::minutes(1), replicas, block_share);
  l.slots_ = true;
  l.lease_->block = std::floor(limit * block_share);  // whole slots
  return l;
}

void QuotaLimit::set_limit(TimePoint now, double limit) {
  limit_ = limit;
  local_.set_limit(now, limit / replicas_);
  if (lease_) lease_->block = slots_ ? std::floor(limit * block_share_) : limit * block_share_;
}

std::optional<Duration> QuotaLimit::wait_for(TimePoint now, double n, bool store_up) const {
  if (n > limit_) return Duration::max();
  if (!lease_) return local_.wait_for(now, n);
  if (!store_up) {
    // The stand-in holds limit / replicas; a request bigger than that waits
    // for it to be full and leaves it in debt.
    return local_.wait_for(now, std::min(n, local_.limit()));
  }
  if (now < lease_->empty_until) return lease_->empty_until - now;
  if (lease_->units >= n) return Duration::zero();
  return std::nullopt;
}

void QuotaLimit::take(TimePoint now, double n, bool store_up) {
  if (!lease_) {
    local_.take(now, n);
  } else if (store_up) {
    lease_->units -= n;
    lease_->last_used = now;
  } else if (!slots_) {
    local_.take(now, n);
    lease_->unreported += n;
  }
}

void QuotaLimit::give_back(double n) {
  if (lease_) {
    lease_->units += n;  // reserved from the lease or the stand-in: either way ours to return
  } else {
    local_.give_back(n);
  }
}

double QuotaLimit::remaining(TimePoint now) const {
  if (!lease_) return local_.remaining(now);
  // The store's last answer, refilled since at the limit's rate (other
  // replicas' takes unseen), plus our lease.
  const double since = std::chrono::duration<double>(now - lease_->store_at) / period_;
  const double store = std::min(limit_, lease_->store_remaining + since * limit_);
  return std::clamp(std::max(lease_->units, 0.0) + store, 0.0, limit_);
}

Duration QuotaLimit::until_full(TimePoint now) const {
  if (!lease_) return local_.until_full(now);
  return lease_->store_full_at > now ? lease_->store_full_at - now : Duration::zero();
}

void QuotaLimit::lease_granted(TimePoint now, double granted, double store_remaining, Duration store_reset) {
  lease_->units += granted;
  lease_->refilling = false;
  lease_->last_used = now;
  lease_->store_remaining = store_remaining;
  lease_->store_at = now;
  lease_->store_full_at = now + store_reset;
}

void QuotaLimit::lease_refused(TimePoint now, Duration wait) {
  lease_->refilling = false;
  lease_->empty_until = now + wait;
  lease_->store_remaining = 0;
  lease_->store_at = now + wait;  // nothing refills for us before then
  lease_->store_full_at = std::max(lease_->store_full_at, now + wait);
}

double QuotaLimit::settle_with_store(TimePoint now, Duration idle) {
  if (!lease_ || lease_->refilling) return 0;
  double out = -lease_->unreported;
  lease_->unreported = 0;
  // Debt is always charged; a positive lease only once idle.
  if (lease_->units < 0 || (lease_->units > 0 && now - lease_->last_used >= idle)) {
    out += lease_->units;
    lease_->units = 0;
  }
  return out;
}

double QuotaLimit::take_unreported() {
  if (!lease_) return 0;
  return -std::exchange(lease_->unreported, 0.0);
}

void QuotaLimit::restore(double units) {
  // settle_with_store folded unreported (a charge) and the lease together;
  // a charge comes back as unreported, a give-back as lease.
  if (units < 0) {
    lease_->unreported -= units;
  } else {
    lease_->units += units;
  }
}

}  // namespace arbiter::quota
