// The gateway's quota ledger (core/quota/quota_ledger.hpp) shared by every
// I/O thread: one mutex around it, held for a few hundred nanoseconds per
// call (a reservation touches the few entries covering one request).
#pragma once

#include <mutex>
#include <string_view>
#include <utility>

#include "core/quota/quota_ledger.hpp"

namespace arbiter {

class QuotaBook {
 public:
  QuotaBook(const std::vector<TenantConfig>& tenants, const std::vector<quota::TeamConfig>& teams)
      : ledger_(tenants, teams) {}

  // Lock-free: which tenants have quotas never changes.
  bool limits(std::string_view tenant) const { return ledger_.limits(tenant); }

  std::expected<quota::Reservation, quota::Refusal> reserve(const quota::Subject& who, quota::TimePoint now,
                                                            int64_t tokens) {
    std::lock_guard lock(mu_);
    return ledger_.reserve(who, now, tokens);
  }
  void settle(quota::Reservation& r, quota::TimePoint now, int64_t used_tokens) {
    std::lock_guard lock(mu_);
    ledger_.settle(r, now, used_tokens);
  }
  void release(quota::Reservation& r) {
    std::lock_guard lock(mu_);
    ledger_.release(r);
  }
  quota::RateStatus status(const quota::Subject& who, quota::TimePoint now) const {
    std::lock_guard lock(mu_);
    return ledger_.status(who, now);
  }
  std::vector<quota::EntryState> snapshot(quota::TimePoint now) const {
    std::lock_guard lock(mu_);
    return ledger_.snapshot(now);
  }

 private:
  mutable std::mutex mu_;
  quota::QuotaLedger ledger_;
};

// A request's reservation, held from admission to its end: settled with
// the tokens it used (QuotaObserver), or else released when it is dropped,
// so no path can leave quota reserved.
class QuotaPermit {
 public:
  QuotaPermit(QuotaBook& book, quota::Reservation r) : book_(&book), reservation_(std::move(r)) {}
  QuotaPermit(QuotaPermit&& other) noexcept
      : book_(std::exchange(other.book_, nullptr)), reservation_(std::move(other.reservation_)) {}
  QuotaPermit& operator=(QuotaPermit&&) = delete;
  ~QuotaPermit() {
    if (book_) book_->release(reservation_);
  }

  int64_t reserved_tokens() const { return reservation_.tokens; }
  void settle(quota::TimePoint now, int64_t used_tokens) {
    if (!book_) return;
    book_->settle(reservation_, now, used_tokens);
    book_ = nullptr;
  }
  void release() {
    if (!book_) return;
    book_->release(reservation_);
    book_ = nullptr;
  }

 private:
  QuotaBook* book_;
  quota::Reservation reservation_;
};

}  // namespace arbiter
