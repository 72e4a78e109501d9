// What each tenant used, hour by hour (docs/usage.md): requests, prompt,
// completion and cached tokens and cost per (tenant, model, class) in
// buckets of one wall-clock hour, kept for a bounded retention (31 days by
// default). The usage report (usage_report.hpp) and the dynamic quota's
// hourly series (core/quota/dynamic_quota.hpp) read it. Pure and
// single-threaded: the caller passes the time and serialises calls.
//
// Memory: one bucket of 48 bytes per (hour, tenant, model, class) that had
// a request, plus a few dozen bytes per hour. 1,000 tenants each busy on two
// (model, class) pairs every hour of 31 days: 1,000 x 2 x 744 x 48 B = 71 MB;
// idle hours and pairs cost nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace arbiter::usage {

using WallClock = std::chrono::system_clock;
using WallTime = WallClock::time_point;

// The hour `t` falls in (its start).
WallTime hour_of(WallTime t);

// Who used it: ids into the ledger's Names.
struct UsageKey {
  uint32_t tenant = 0;
  uint16_t model = 0;
  uint16_t klass = 0;
};

struct UsageTotals {
  uint64_t requests = 0;
  uint64_t prompt_tokens = 0;      // cached ones included, as engines count them
  uint64_t completion_tokens = 0;
  uint64_t cached_tokens = 0;      // of prompt_tokens, served from the engine's prefix cache
  double cost = 0;

  uint64_t tokens() const { return prompt_tokens + completion_tokens; }
  UsageTotals& operator+=(const UsageTotals& o);
};

// What the ids of a UsageKey name.
struct Names {
  std::vector<std::string> tenants;  // by tenant id
  std::vector<std::string> teams;    // by tenant id: the tenant's team
  std::vector<std::string> models;   // by model id
  std::vector<std::string> classes;  // by class id
};

// The ledger's ids for another Names' entries (UsageLedger::adopt), by
// that Names' ids.
struct NameIds {
  std::vector<uint32_t> tenants, models, classes;
};

class UsageLedger {
 public:
  static constexpr std::chrono::hours kDefaultRetention{31 * 24};

  explicit UsageLedger(Names names, std::chrono::hours retention = kDefaultRetention);

  const Names& names() const { return names_; }
  // A reloaded config's names: the ledger's id of each, appended when new
  // (a tenant goes by its name and team: one that moved team is a new
  // entry, and its past usage stays with its old team). Ids never change,
  // so the history keeps its meaning across reloads.
  NameIds adopt(const Names& names);

  // Adds `used` (a request: requests 1) to the key's bucket of the hour of
  // `at`. Hours more than the retention older than the newest hour recorded
  // are dropped, and so is usage for one of them.
  void record(WallTime at, UsageKey key, const UsageTotals& used);

  // Each bucket of the hours that start in [from, to), hours ascending:
  // fn(hour start, key, totals).
  template <class Fn>
  void for_each(WallTime from, WallTime to, Fn&& fn) const {
    for (const Hour& h : hours_) {
      const WallTime start = hour_start(h.index);
      if (start < from || start >= to) continue;
      for (const Bucket& b : h.buckets) fn(start, unpack(b.key), b.totals);
    }
  }

  // Tokens (prompt + completion) the team's tenants used in each of the
  // `hours` whole hours before the hour of `now`, oldest first; 0 for an
  // hour without usage (or before the ledger began). The hour of `now`
  // itself is not over, so it is left out.
  std::vector<double> team_hourly_tokens(std::string_view team, WallTime now, int hours = 24) const;

  std::size_t buckets() const;  // (hour, key) buckets held

 private:
  struct Bucket {
    uint64_t key;  // UsageKey packed: tenant << 32 | model << 16 | class
    UsageTotals totals;
  };
  static_assert(sizeof(Bucket) == 48, "the memory figure above and in docs/usage.md");
  struct Hour {
    int64_t index;                // hours since the epoch
    std::vector<Bucket> buckets;  // by key
  };
  static uint64_t pack(UsageKey k);
  static UsageKey unpack(uint64_t key);
  static WallTime hour_start(int64_t index);
  Hour* hour(int64_t index);  // found or inserted in order; null when past retention

  Names names_;
  int64_t retention_hours_;
  std::deque<Hour> hours_;  // ascending
};

}  // namespace arbiter::usage
