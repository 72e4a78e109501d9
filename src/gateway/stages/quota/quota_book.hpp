// The gateway's quotas (docs/quotas.md): the pure ledger
// (core/quota/quota_ledger.hpp) behind one mutex, shared by every I/O
// thread, and with quota_store.redis the traffic to the store: lease
// refills on the request path (one per limit at a time; other requests
// wait for it), and a maintenance loop that hands back idle leases and
// debt, reports what was admitted while Redis was down, and probes it
// back. A store call never holds the mutex and never takes longer than
// quota_store.timeout_ms; any failure puts the store down (StoreBreaker)
// and the ledger stands in locally.
#pragma once

#include <memory>
#include <mutex>
#include <string_view>
#include <utility>

#include "core/config.hpp"
#include "core/quota/quota_ledger.hpp"
#include "core/quota/store_breaker.hpp"
#include "core/quota/traffic_breaker.hpp"
#include "gateway/periodic.hpp"
#include "gateway/stages/quota/quota_metrics.hpp"
#include "gateway/stages/quota/redis_quota_store.hpp"

namespace arbiter {

class QuotaBook {
 public:
  // `store_executor` runs the Redis connection and the maintenance loop
  // (when quota_store.redis is set): a strand or a one-thread context.
  // The quota metric families register with `registry`.
  QuotaBook(const Config& config, net::any_io_executor store_executor, metrics::Registry& registry);
  ~QuotaBook();

  // A reload: the ledger and the traffic breakers rebuilt from `next`,
  // each quota's and breaker's state carried by name
  // (QuotaLedger::carry_from); requests waiting for a lease refill look
  // again. quota_store itself is applied only at a restart.
  void reconfigure(const Config& next);

  bool shared() const { return store_ != nullptr; }
  QuotaMetrics& metrics() { return metrics_; }

  // A reservation or a refusal, and the x-ratelimit-* figures after it
  // (taken under the same lock).
  struct Admission {
    std::expected<quota::Reservation, quota::Refusal> result;
    quota::RateStatus status;  // none when the result is lease_short
  };
  // Decided at once, or lease_short: reserve() must ask the store.
  Admission try_reserve(const quota::Subject& who, quota::TimePoint now, int64_t tokens);
  // Refills short leases from the store (bounded by its timeout) and
  // reserves; a store failure falls back to the local stand-in.
  Task<Admission> reserve(const quota::Subject& who, int64_t tokens);

  // The tenant's traffic breaker (when it has a tenant-wide requests or
  // tokens per minute quota and traffic_breaker is on): counts this request
  // as demand and says what to do with it; green without one.
  struct Traffic {
    quota::TrafficBreaker::Verdict verdict{quota::TrafficStage::kGreen, true, {}};
    std::vector<quota::TrafficTransition> transitions;  // to log and count
  };
  Traffic traffic(std::string_view tenant, quota::TimePoint now, int64_t tokens);
  // Each breaker's stage, for /metrics.
  std::vector<std::pair<std::string, quota::TrafficStage>> traffic_stages(quota::TimePoint now);

  bool set_dynamic_limit(std::string_view team, quota::TimePoint now, double limit) {
    std::lock_guard lock(mu_);
    return ledger_.set_dynamic_limit(team, now, limit);
  }

  void settle(quota::Reservation& r, quota::TimePoint now, int64_t used_tokens);
  void release(quota::Reservation& r);
  quota::RateStatus status(const quota::Subject& who, quota::TimePoint now) const;
  std::vector<quota::EntryState> snapshot(quota::TimePoint now) const;
  bool store_up() const;
  uint64_t store_calls() const { return store_calls_.load(std::memory_order_relaxed); }
  uint64_t store_failures() const { return store_failures_.load(std::memory_order_relaxed); }

  // The maintenance loop (shared mode), on the store's executor; stop() ends it.
  void start();
  void stop();

 private:
  struct Waiter;
  struct Breaker;
  static StringMap<Breaker> breakers_for(const Config& config);
  // What a store call for one limit needs, taken under mu_ with the ref
  // (a reload may replace the ledger while the call is out).
  struct StoreTarget {
    std::string key;
    double limit = 0;
    quota::Duration period{};
    bool slots = false;
  };
  StoreTarget target(quota::LimitRef ref) const;  // under mu_
  using Charges = std::vector<std::pair<quota::StoreCharge, StoreTarget>>;
  Charges with_targets(std::vector<quota::StoreCharge> charges) const;  // under mu_
  Task<void> refill(quota::LeaseNeed need, StoreTarget target);
  Task<void> maintain();  // one round of the maintenance loop
  // A down store's probe; when it answers, the outage is charged, then the store is up.
  Task<void> probe_store();
  // Sends charges (hand-backs, debt, the outage's admissions) to the store;
  // on a failure restores those not sent, takes the store down (logged with
  // `why`) and returns false.
  Task<bool> send_charges(Charges charges, std::string_view why);
  void store_failed(quota::TimePoint now);  // under mu_
  // The ledger's answer and, unless its lease is short, the status after it. Under mu_.
  Admission admit(const quota::Subject& who, quota::TimePoint now, int64_t tokens);
  void wake(quota::LimitRef ref);           // under mu_
  void wake_all();                          // under mu_

  QuotaMetrics metrics_;
  const quota::QuotaStoreConfig store_config_;
  net::any_io_executor store_executor_;
  mutable std::mutex mu_;
  quota::QuotaLedger ledger_;
  quota::StoreBreaker breaker_;
  std::unique_ptr<RedisQuotaStore> store_;
  std::vector<std::pair<quota::LimitRef, std::shared_ptr<Waiter>>> waiters_;
  Periodic maintenance_;  // maintain() every lease_idle / 4 (shared mode)
  struct Breaker {
    quota::TrafficBreaker breaker;
    double quota_per_second;
    bool by_tokens;  // demand in tokens (tokens_per_minute), else in requests
  };
  quota::TrafficBreakerSettings breaker_settings_;
  StringMap<Breaker> breakers_;  // by tenant; under mu_ (a reload replaces them)
  std::atomic<uint64_t> store_calls_{0}, store_failures_{0};
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
