// Tenant and team quotas (docs/quotas.md): the limits of every configured
// quota entry, reservations at admission and their reconciliation when the
// request ends. Pure and single-threaded: the caller passes the time and
// serialises calls (the gateway holds a mutex), and in shared mode carries
// lease requests to the store and its answers back (QuotaLimit).
//
// A request reserves 1 request and its token estimate (prompt + max_tokens)
// in every entry that covers it, or nothing at all: either all of them have
// room or it is refused with the longest wait among those that do not. When
// it ends the reservation is settled with the tokens it really used (the
// difference given back, or taken as debt) or released (nothing used: an
// error before the engine answered, a cancel while queued). So a burst
// cannot overshoot a token limit by its in-flight work.
#pragma once

#include <cstdint>
#include <expected>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "core/config.hpp"
#include "core/quota/quota_limit.hpp"
#include "core/string_map.hpp"

namespace arbiter::quota {

enum class LimitKind : uint8_t { kRequestsPerMinute, kTokensPerMinute, kTokensPerDay, kConcurrent };
std::string_view limit_name(LimitKind kind);  // "requests_per_minute", ... as in the config

// What a request is, as far as quotas go.
struct Subject {
  std::string_view tenant;  // "" for anonymous: never limited
  std::string_view klass;
  std::string_view model;
  StoreDownPolicy store_down = StoreDownPolicy::kLocal;  // the tenant's, while the store is down
};

// One limit of one entry: which lease a refill is for.
struct LimitRef {
  uint32_t entry = 0;
  LimitKind kind = LimitKind::kRequestsPerMinute;
  uint32_t epoch = 0;  // the ledger's, when the ref was made
  bool operator==(const LimitRef&) const = default;
};

// A lease this replica must refill from the store before it can admit.
struct LeaseNeed {
  LimitRef ref;
  double need = 0;           // the shortfall
  double want = 0;           // the shortfall plus a block
  bool in_flight = false;    // another request's refill is under way: wait for it
};

// What a limit's lease hands back to the store (QuotaLedger::settle_with_store).
struct StoreCharge {
  LimitRef ref;
  double units = 0;  // positive: give back; negative: charge
};

// The entries a request reserved in and the tokens it reserved in each.
// Moved, never copied: settled or released exactly once.
struct Reservation {
  boost::container::small_vector<uint32_t, 4> entries;
  int64_t tokens = 0;
  bool leased_slots = false;  // its max_concurrent slots came from shared leases
  uint32_t epoch = 0;         // the ledger's, when it was made
};

struct Refusal {
  LimitKind limit;
  std::string owner;      // "tenant alpha", "team ml"
  double limit_value = 0; // the limit that refused
  Duration retry_after{}; // Duration::max(): the request can never fit
  // Shared mode: not a refusal by the quota but a lease short on this
  // replica; lease_needs() says what to refill, then reserve again.
  bool lease_short = false;
  bool store_down = false; // refused because the store is down (StoreDownPolicy::kClosed)
};

// The x-ratelimit-* figures: for requests and for tokens per minute, the
// covering entry with the least left.
struct RateStatus {
  struct Figures {
    double limit = 0;
    double remaining = 0;
    Duration reset{};  // until the bucket is full again
  };
  std::optional<Figures> requests;
  std::optional<Figures> tokens;
};

// One entry's state, for metrics and tests.
struct EntryState {
  std::string owner;   // "tenant alpha", "team ml"
  std::size_t index;   // its position in the owner's quotas list
  std::optional<double> requests_remaining, tokens_remaining, day_tokens_remaining;
  uint32_t in_flight = 0;
  int64_t reserved_tokens = 0;  // reserved by requests that have not ended
};

// Shared mode: limits are leased from a store (quota_store.redis).
struct Sharing {
  uint32_t replicas = 1;
  double lease_share = 0.02;
};

// True when some quota covers some of the tenant's requests (its own, or
// its team's): QuotaLedger::limits as the config says it.
bool has_quotas(const TenantConfig& tenant, const std::vector<TeamConfig>& teams);

class QuotaLedger {
 public:
  QuotaLedger(const std::vector<TenantConfig>& tenants, const std::vector<TeamConfig>& teams,
              std::optional<Sharing> sharing = std::nullopt);

  // A reload: this ledger, just built from the new config, takes over from
  // `old` (left empty). An entry of the same owner and scope (classes and
  // models; a team's dynamic quota with its dynamic quota) keeps what it has
  // used, its requests in flight and reserved tokens, and its leases: a
  // changed limit applies from now with what was used so far still used
  // (a dynamic quota keeps its last recomputed limit). Other entries start
  // full. Reservations made under `old` settle here, each on the entries
  // that carried theirs.
  void carry_from(QuotaLedger& old, TimePoint now);
  uint32_t epoch() const { return epoch_; }

  // True when some quota covers some of the tenant's requests.
  bool limits(std::string_view tenant) const { return by_tenant_.contains(tenant); }

  std::expected<Reservation, Refusal> reserve(const Subject& who, TimePoint now, int64_t tokens);
  // A team's dynamic quota (teams[].dynamic_quota) recomputed: its entry's
  // limit becomes `limit`. False when the team has none.
  bool set_dynamic_limit(std::string_view team, TimePoint now, double limit);
  // The request ended having used `used_tokens` (prompt + completion).
  void settle(Reservation& r, TimePoint now, int64_t used_tokens);
  // The request ended having used no engine time: its tokens go back.
  void release(Reservation& r);

  RateStatus status(const Subject& who, TimePoint now) const;
  std::vector<EntryState> snapshot(TimePoint now) const;

  // Shared mode.
  bool shared() const { return sharing_.has_value(); }
  bool store_up() const { return store_up_; }
  void set_store_up(bool up) { store_up_ = up; }
  // The leases to refill before `who` can reserve `tokens`; marks the ones
  // not in flight as refilling (the caller must answer each with
  // lease_granted, lease_refused or refill_failed).
  std::vector<LeaseNeed> lease_needs(const Subject& who, TimePoint now, int64_t tokens);
  void lease_granted(LimitRef ref, TimePoint now, double granted, double store_remaining, Duration store_reset);
  void lease_refused(LimitRef ref, TimePoint now, Duration wait);
  void refill_failed(LimitRef ref);
  // Idle leases, debt and what the stand-ins admitted while the store was
  // down, to hand to the store (zeroed here).
  std::vector<StoreCharge> settle_with_store(TimePoint now, Duration idle);
  // Only what the stand-ins admitted while the store was down (zeroed
  // here): what a store coming back is charged before any lease is taken
  // from it, so the outage cannot be granted a fresh window on top.
  std::vector<StoreCharge> outage_charges();
  void restore(const StoreCharge& charge);
  // The store key's parts: the entry's owner and index, and the limit.
  // `ref` must be of this epoch (as lease_needs and settle_with_store make them).
  const std::string& owner(LimitRef ref) const { return entries_[ref.entry].owner; }
  std::size_t index(LimitRef ref) const { return entries_[ref.entry].index; }
  const QuotaLimit& limit_at(LimitRef ref) const;

 private:
  struct Entry {
    std::string owner;
    std::size_t index;
    bool dynamic = false;  // a team's dynamic quota
    QuotaLimits limits;
    std::optional<QuotaLimit> requests, tokens, day_tokens;
    std::optional<QuotaLimit> slots;  // shared mode, max_concurrent: leased slots
    uint32_t in_flight = 0;
    int64_t reserved = 0;
  };
  template <class F>
  void for_covering(const Subject& who, F&& f) const;
  // Each of an entry's limits with its kind and what a request of `tokens` takes of it.
  template <class E, class F>
  static void for_limits(E& e, double tokens, F&& f);
  QuotaLimit& limit(LimitRef ref);
  // The limit `ref` names now (translated from its epoch); null when a
  // reload removed it.
  QuotaLimit* find(LimitRef ref);
  // Moves a reservation of an earlier epoch onto this one's entries.
  void to_now(Reservation& r);
  void end(Reservation& r);

  // An earlier epoch's entries, as this one's (nullopt: removed), and how
  // many of its reservations are still to end. Kept while some are, and
  // for the last kKeptEpochs reloads (refills and charges in flight).
  struct Remap {
    std::vector<std::optional<uint32_t>> to_now;
    uint64_t outstanding = 0;
  };
  uint32_t epoch_ = 0;
  uint64_t outstanding_ = 0;  // this epoch's reservations not yet ended
  std::map<uint32_t, Remap> remaps_;

  std::optional<Sharing> sharing_;
  bool store_up_ = true;
  std::vector<Entry> entries_;
  StringMap<std::vector<uint32_t>> by_tenant_;  // its entries, then its team's
  StringMap<uint32_t> dynamic_;                 // team -> its dynamic entry
};

}  // namespace arbiter::quota
