#include "gateway/stages/quota/quota_book.hpp"
#include "observability/event_log.hpp"

#include <cstdio>

#include <fmt/format.h>

namespace arbiter {

namespace {

// A request whose lease stays short past the store's timeout (others kept
// spending the refills first) is refused for a moment.
constexpr quota::Duration kRetryShortLease = std::chrono::milliseconds(100);
// A store back from an outage: rounds of charging what the stand-in
// admitted before it is marked up (probe_store).
constexpr int kReconcilePasses = 3;

std::optional<quota::Sharing> sharing(const quota::QuotaStoreConfig& store) {
  if (store.redis.empty()) return std::nullopt;
  return quota::Sharing{.replicas = store.replicas, .lease_share = store.lease_share};
}

void log_store(std::string_view event, std::string_view detail) {
  log_event(event == "up" ? EventLevel::kInfo : EventLevel::kWarn, "quota_store_" + std::string(event),
            {{"detail", detail}});
}

}  // namespace

// A request waiting for another's refill of the same lease.
struct QuotaBook::Waiter {
  explicit Waiter(net::any_io_executor ex) : executor(ex), timer(ex) {}
  net::any_io_executor executor;
  net::steady_timer timer;
};

QuotaBook::QuotaBook(const Config& config, net::any_io_executor store_executor, metrics::Registry& registry)
    : metrics_(registry),
      store_config_(config.quota_store),
      store_executor_(store_executor),
      ledger_(config.tenants, config.teams, sharing(config.quota_store)),
      breaker_settings_(config.traffic_breaker),
      breakers_(breakers_for(config)) {
  if (ledger_.shared()) {
    store_ = std::make_unique<RedisQuotaStore>(store_executor, store_config_);
  }
}

QuotaBook::~QuotaBook() { stop(); }

namespace {

// The quota a tenant's breaker measures demand against: its first own entry
// that covers all its requests, by requests per minute, else tokens.
std::optional<std::pair<double, bool>> breaker_quota(const TenantConfig& t) {
  for (const quota::QuotaLimits& q : t.quotas) {
    if (!q.classes.empty() || !q.models.empty()) continue;
    if (q.requests_per_minute) return std::pair(*q.requests_per_minute / 60, false);
    if (q.tokens_per_minute) return std::pair(*q.tokens_per_minute / 60, true);
  }
  return std::nullopt;
}

}  // namespace

StringMap<QuotaBook::Breaker> QuotaBook::breakers_for(const Config& config) {
  StringMap<Breaker> out;
  if (!config.traffic_breaker.enabled) return out;
  const quota::TrafficBreakerSettings& settings = config.traffic_breaker;
  for (const TenantConfig& t : config.tenants) {
    if (auto q = breaker_quota(t)) {
      out.emplace(t.name, Breaker{quota::TrafficBreaker(settings, q->first), q->first, q->second});
    }
  }
  return out;
}

void QuotaBook::reconfigure(const Config& next) {
  quota::QuotaLedger ledger(next.tenants, next.teams, sharing(store_config_));
  StringMap<Breaker> breakers = breakers_for(next);
  std::lock_guard lock(mu_);
  ledger.carry_from(ledger_, quota::Clock::now());
  ledger_ = std::move(ledger);
  // A breaker measuring the same quota with the same settings keeps its
  // window and stage; any other starts green.
  if (static_cast<const quota::TrafficBreakerSettings&>(next.traffic_breaker) == breaker_settings_) {
    for (auto& [tenant, b] : breakers) {
      const auto old = breakers_.find(tenant);
      if (old != breakers_.end() && old->second.quota_per_second == b.quota_per_second &&
          old->second.by_tokens == b.by_tokens) {
        b.breaker = std::move(old->second.breaker);
      }
    }
  }
  breaker_settings_ = next.traffic_breaker;
  breakers_ = std::move(breakers);
  wake_all();  // their refs name the old ledger's limits: they reserve again
}

QuotaBook::Traffic QuotaBook::traffic(std::string_view tenant, quota::TimePoint now, int64_t tokens) {
  Traffic t;
  std::lock_guard lock(mu_);
  const auto it = breakers_.find(tenant);
  if (it == breakers_.end()) return t;
  t.verdict = it->second.breaker.on_request(now, it->second.by_tokens ? static_cast<double>(tokens) : 1.0);
  t.transitions = it->second.breaker.take_transitions();
  return t;
}

std::vector<std::pair<std::string, quota::TrafficStage>> QuotaBook::traffic_stages(quota::TimePoint now) {
  std::vector<std::pair<std::string, quota::TrafficStage>> out;
  std::lock_guard lock(mu_);
  for (auto& [tenant, b] : breakers_) out.emplace_back(tenant, b.breaker.stage(now));
  return out;
}

QuotaBook::StoreTarget QuotaBook::target(quota::LimitRef ref) const {
  const quota::QuotaLimit& limit = ledger_.limit_at(ref);
  // "arbiter:q:tenant alpha:0:tokens_per_minute": the entry's owner and its
  // place in the owner's quotas list.
  return {.key = fmt::format("{}:q:{}:{}:{}", store_config_.key_prefix, ledger_.owner(ref), ledger_.index(ref),
                             quota::limit_name(ref.kind)),
          .limit = limit.limit(),
          .period = limit.period(),
          .slots = limit.counts_slots()};
}

QuotaBook::Charges QuotaBook::with_targets(std::vector<quota::StoreCharge> charges) const {
  Charges out;
  out.reserve(charges.size());
  for (const quota::StoreCharge& c : charges) out.emplace_back(c, target(c.ref));
  return out;
}

QuotaBook::Admission QuotaBook::admit(const quota::Subject& who, quota::TimePoint now, int64_t tokens) {
  Admission a{.result = ledger_.reserve(who, now, tokens), .status = {}};
  if (a.result || !a.result.error().lease_short) a.status = ledger_.status(who, now);
  return a;
}

QuotaBook::Admission QuotaBook::try_reserve(const quota::Subject& who, quota::TimePoint now, int64_t tokens) {
  std::lock_guard lock(mu_);
  return admit(who, now, tokens);
}

Task<QuotaBook::Admission> QuotaBook::reserve(const quota::Subject& who, int64_t tokens) {
  const auto executor = co_await net::this_coro::executor;
  std::optional<quota::Refusal> last;
  // Every round makes progress for someone: a refill's grant is spent by a
  // request (this one admits again after its own refill, so a grant never
  // sits idle here while other replicas are refused for want of it), a
  // refusal refuses every request at once, a failure takes the store down.
  // So rounds are bounded by time, not counted: a burst of N requests on one
  // limit may need N refills one after the other.
  const quota::TimePoint deadline = quota::Clock::now() + store_config_.timeout;
  for (;;) {
    std::vector<std::pair<quota::LeaseNeed, StoreTarget>> mine;
    std::vector<std::shared_ptr<Waiter>> waiting;
    {
      std::lock_guard lock(mu_);
      const quota::TimePoint now = quota::Clock::now();
      Admission a = admit(who, now, tokens);
      if (a.result || !a.result.error().lease_short || !store_) co_return a;
      last = a.result.error();
      if (now >= deadline) break;
      for (const quota::LeaseNeed& need : ledger_.lease_needs(who, now, tokens)) {
        if (!need.in_flight) {
          mine.emplace_back(need, target(need.ref));
          continue;
        }
        // Registered under the same lock as the check: its wake cannot be missed.
        // It waits at most until the request's own deadline, not a whole
        // timeout from now, so a late round cannot stretch the request's wait.
        auto w = std::make_shared<Waiter>(executor);
        w->timer.expires_at(deadline);
        waiters_.emplace_back(need.ref, w);
        waiting.push_back(std::move(w));
      }
    }
    if (mine.empty() && waiting.empty()) break;  // nothing to refill: refused
    for (auto& refill_one : mine) co_await refill(refill_one.first, std::move(refill_one.second));
    for (const auto& w : waiting) (void)co_await w->timer.async_wait(kAsTuple);
  }
  last->retry_after = kRetryShortLease;
  last->lease_short = false;
  std::lock_guard lock(mu_);
  co_return Admission{.result = std::unexpected(*last), .status = ledger_.status(who, quota::Clock::now())};
}

Task<void> QuotaBook::refill(quota::LeaseNeed need, StoreTarget to) {
  store_calls_.fetch_add(1, std::memory_order_relaxed);
  std::expected<LeaseAnswer, std::string> answer;
  if (to.slots) {
    answer = co_await store_->take_slots(to.key, need.need, need.want, to.limit);
  } else {
    answer = co_await store_->take(to.key, need.need, need.want, to.limit, to.period);
  }
  std::lock_guard lock(mu_);
  const auto now = quota::Clock::now();
  if (!answer) {
    ledger_.refill_failed(need.ref);
    store_failed(now);
    log_store("down", answer.error());
  } else if (answer->granted) {
    ledger_.lease_granted(need.ref, now, answer->units, answer->remaining, answer->reset);
  } else {
    ledger_.lease_refused(need.ref, now, answer->wait);
  }
  wake(need.ref);
}

void QuotaBook::store_failed(quota::TimePoint now) {
  store_failures_.fetch_add(1, std::memory_order_relaxed);
  breaker_.failed(now);
  ledger_.set_store_up(false);
}

void QuotaBook::wake(quota::LimitRef ref) {
  std::erase_if(waiters_, [&](const auto& entry) {
    if (!(entry.first == ref)) return false;
    net::post(entry.second->executor, [w = entry.second] { w->timer.cancel(); });
    return true;
  });
}

void QuotaBook::wake_all() {
  for (const auto& entry : waiters_) net::post(entry.second->executor, [w = entry.second] { w->timer.cancel(); });
  waiters_.clear();
}

void QuotaBook::settle(quota::Reservation& r, quota::TimePoint now, int64_t used_tokens) {
  std::lock_guard lock(mu_);
  ledger_.settle(r, now, used_tokens);
}

void QuotaBook::release(quota::Reservation& r) {
  std::lock_guard lock(mu_);
  ledger_.release(r);
}

quota::RateStatus QuotaBook::status(const quota::Subject& who, quota::TimePoint now) const {
  std::lock_guard lock(mu_);
  return ledger_.status(who, now);
}

std::vector<quota::EntryState> QuotaBook::snapshot(quota::TimePoint now) const {
  std::lock_guard lock(mu_);
  return ledger_.snapshot(now);
}

bool QuotaBook::store_up() const {
  std::lock_guard lock(mu_);
  return ledger_.store_up();
}

void QuotaBook::start() {
  // Often enough that an idle lease goes back about on time.
  if (store_) {
    maintenance_.start(store_executor_,
                       std::max<quota::Duration>(store_config_.lease_idle / 4, std::chrono::milliseconds(50)),
                       [this] { return maintain(); });
  }
}

void QuotaBook::stop() { maintenance_.stop(); }

Task<void> QuotaBook::maintain() {
  // One round: probe a down store, or hand back idle leases and debt.
  Charges charges;
  bool probe = false, up = false;
  {
    std::lock_guard lock(mu_);
    const auto now = quota::Clock::now();
    up = breaker_.up();
    if (up) {
      charges = with_targets(ledger_.settle_with_store(now, store_config_.lease_idle));
    } else {
      probe = breaker_.probe_due(now);
    }
  }
  if (probe) {
    co_await probe_store();
    co_return;
  }
  if (!up) co_return;  // down, and no probe due yet
  // Keeps this replica's slots counted (max_concurrent shared).
  store_calls_.fetch_add(1, std::memory_order_relaxed);
  if (!co_await store_->heartbeat()) {
    std::lock_guard lock(mu_);
    for (const auto& c : charges) ledger_.restore(c.first);
    store_failed(quota::Clock::now());
    log_store("down", "a heartbeat failed");
    co_return;
  }
  co_await send_charges(std::move(charges), "a lease hand-back failed");
}

Task<void> QuotaBook::probe_store() {
  store_calls_.fetch_add(1, std::memory_order_relaxed);
  if (!co_await store_->ping()) {
    std::lock_guard lock(mu_);
    store_failed(quota::Clock::now());
    co_return;
  }
  // Reachable again. What the stand-in admitted during the outage is
  // charged first and the store marked up only after: marked up at once,
  // the next request would take a lease from a window that had not yet
  // paid for the outage. Requests keep using the stand-in meanwhile; what
  // they add goes out in the next pass, and after kReconcilePasses the rest
  // is taken under the same lock that marks the store up and charged at once.
  for (int pass = 0;; ++pass) {
    Charges charges;
    bool now_up = false;
    {
      std::lock_guard lock(mu_);
      charges = with_targets(ledger_.outage_charges());
      if (charges.empty() || pass + 1 >= kReconcilePasses) {
        breaker_.succeeded();
        ledger_.set_store_up(true);
        now_up = true;
        log_store("up", "reachable again: the outage's admissions charged");
      }
    }
    if (!co_await send_charges(std::move(charges), "charging the outage failed") || now_up) co_return;
  }
}

Task<bool> QuotaBook::send_charges(Charges charges, std::string_view why) {
  for (std::size_t i = 0; i < charges.size(); ++i) {
    const quota::StoreCharge& charge = charges[i].first;
    const StoreTarget& to = charges[i].second;
    store_calls_.fetch_add(1, std::memory_order_relaxed);
    std::expected<void, std::string> done;
    if (to.slots) {
      done = co_await store_->release_slots(to.key, charge.units);
    } else {
      done = co_await store_->adjust(to.key, charge.units, to.limit, to.period);
    }
    if (done) continue;
    // Kept for the next round: nothing is lost while the store is down.
    std::lock_guard lock(mu_);
    for (std::size_t k = i; k < charges.size(); ++k) ledger_.restore(charges[k].first);
    store_failed(quota::Clock::now());
    log_store("down", why);
    co_return false;
  }
  co_return true;
}

}  // namespace arbiter
