// Tenant and team quotas, in-process (docs/quotas.md): the buckets of every
// configured quota entry, reservations at admission and their
// reconciliation when the request ends. Pure and single-threaded: the
// caller passes the time and serialises calls (the gateway holds a mutex).
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
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "core/config.hpp"
#include "core/quota/gcra.hpp"

namespace arbiter::quota {

enum class LimitKind : uint8_t { kRequestsPerMinute, kTokensPerMinute, kTokensPerDay, kConcurrent };
std::string_view limit_name(LimitKind kind);  // "requests_per_minute", ... as in the config

// What a request is, as far as quotas go.
struct Subject {
  std::string_view tenant;  // "" for anonymous: never limited
  std::string_view klass;
  std::string_view model;
};

// The entries a request reserved in and the tokens it reserved in each.
// Moved, never copied: settled or released exactly once.
struct Reservation {
  boost::container::small_vector<uint32_t, 4> entries;
  int64_t tokens = 0;
};

struct Refusal {
  LimitKind limit;
  std::string owner;      // "tenant alpha", "team ml"
  double limit_value = 0; // the limit that refused
  Duration retry_after{}; // Duration::max(): the request can never fit
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

class QuotaLedger {
 public:
  QuotaLedger(const std::vector<TenantConfig>& tenants, const std::vector<TeamConfig>& teams);

  // True when some quota covers some of the tenant's requests.
  bool limits(std::string_view tenant) const { return by_tenant_.contains(tenant); }

  std::expected<Reservation, Refusal> reserve(const Subject& who, TimePoint now, int64_t tokens);
  // The request ended having used `used_tokens` (prompt + completion).
  void settle(Reservation& r, TimePoint now, int64_t used_tokens);
  // The request ended having used no engine time: its tokens go back.
  void release(Reservation& r);

  RateStatus status(const Subject& who, TimePoint now) const;
  std::vector<EntryState> snapshot(TimePoint now) const;

 private:
  struct Entry {
    std::string owner;
    std::size_t index;
    QuotaLimits limits;
    std::optional<Gcra> requests, tokens, day_tokens;
    uint32_t in_flight = 0;
    int64_t reserved = 0;
  };
  template <class F>
  void for_covering(const Subject& who, F&& f) const;
  void end(Reservation& r);

  // Looked up by string_view: no allocation on the request path.
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::vector<Entry> entries_;
  std::unordered_map<std::string, std::vector<uint32_t>, NameHash, std::equal_to<>> by_tenant_;  // its entries, then its team's
};

}  // namespace arbiter::quota
