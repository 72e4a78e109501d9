#include "core/quota/quota_ledger.hpp"

#include <algorithm>

namespace arbiter::quota {

namespace {

constexpr Duration kMinute = std::chrono::minutes(1);
constexpr Duration kDay = std::chrono::hours(24);
// Retry-After for a concurrency refusal: a slot frees when some request
// ends, which the ledger cannot foresee.
constexpr Duration kConcurrencyRetry = std::chrono::seconds(1);

bool listed(const std::vector<std::string>& list, std::string_view name) {
  return list.empty() || std::find(list.begin(), list.end(), name) != list.end();
}

}  // namespace

std::string_view limit_name(LimitKind kind) {
  switch (kind) {
    case LimitKind::kRequestsPerMinute: return "requests_per_minute";
    case LimitKind::kTokensPerMinute: return "tokens_per_minute";
    case LimitKind::kTokensPerDay: return "tokens_per_day";
    case LimitKind::kConcurrent: return "max_concurrent";
  }
  return "unknown";
}

bool QuotaLimits::covers(std::string_view klass, std::string_view model) const {
  return listed(classes, klass) && listed(models, model);
}

QuotaLedger::QuotaLedger(const std::vector<TenantConfig>& tenants, const std::vector<TeamConfig>& teams) {
  auto add = [&](const std::string& owner, const std::vector<QuotaLimits>& quotas) {
    std::vector<uint32_t> ids;
    for (std::size_t i = 0; i < quotas.size(); ++i) {
      const QuotaLimits& q = quotas[i];
      if (!q.limits_anything()) continue;
      Entry e{.owner = owner, .index = i, .limits = q};
      if (q.requests_per_minute) e.requests.emplace(*q.requests_per_minute, kMinute);
      if (q.tokens_per_minute) e.tokens.emplace(*q.tokens_per_minute, kMinute);
      if (q.tokens_per_day) e.day_tokens.emplace(*q.tokens_per_day, kDay);
      ids.push_back(static_cast<uint32_t>(entries_.size()));
      entries_.push_back(std::move(e));
    }
    return ids;
  };
  std::unordered_map<std::string, std::vector<uint32_t>> by_team;
  for (const TeamConfig& team : teams) by_team[team.name] = add("team " + team.name, team.quotas);
  for (const TenantConfig& t : tenants) {
    std::vector<uint32_t> ids = add("tenant " + t.name, t.quotas);
    if (auto it = by_team.find(t.team); it != by_team.end()) ids.insert(ids.end(), it->second.begin(), it->second.end());
    if (!ids.empty()) by_tenant_.emplace(t.name, std::move(ids));
  }
}

template <class F>
void QuotaLedger::for_covering(const Subject& who, F&& f) const {
  const auto it = by_tenant_.find(who.tenant);
  if (it == by_tenant_.end()) return;
  for (const uint32_t id : it->second) {
    if (entries_[id].limits.covers(who.klass, who.model)) f(id);
  }
}

std::expected<Reservation, Refusal> QuotaLedger::reserve(const Subject& who, TimePoint now, int64_t tokens) {
  Reservation r{.entries = {}, .tokens = std::max<int64_t>(tokens, 0)};
  std::optional<Refusal> refusal;
  const auto n = static_cast<double>(r.tokens);
  // The longest wait decides: the request fits only once every limit has room.
  auto refuse = [&](const Entry& e, LimitKind kind, double value, Duration wait) {
    if (!refusal || wait > refusal->retry_after) {
      refusal = Refusal{.limit = kind, .owner = e.owner, .limit_value = value, .retry_after = wait};
    }
  };
  for_covering(who, [&](uint32_t id) {
    r.entries.push_back(id);
    const Entry& e = entries_[id];
    if (e.limits.max_concurrent && e.in_flight >= *e.limits.max_concurrent) {
      refuse(e, LimitKind::kConcurrent, *e.limits.max_concurrent, kConcurrencyRetry);
    }
    if (e.requests) {
      if (const Duration w = e.requests->wait_for(now, 1); w > Duration::zero()) {
        refuse(e, LimitKind::kRequestsPerMinute, e.requests->limit(), w);
      }
    }
    if (e.tokens) {
      if (const Duration w = e.tokens->wait_for(now, n); w > Duration::zero()) {
        refuse(e, LimitKind::kTokensPerMinute, e.tokens->limit(), w);
      }
    }
    if (e.day_tokens) {
      if (const Duration w = e.day_tokens->wait_for(now, n); w > Duration::zero()) {
        refuse(e, LimitKind::kTokensPerDay, e.day_tokens->limit(), w);
      }
    }
  });
  if (refusal) return std::unexpected(std::move(*refusal));
  for (const uint32_t id : r.entries) {
    Entry& e = entries_[id];
    ++e.in_flight;
    e.reserved += r.tokens;
    if (e.requests) e.requests->take(now, 1);
    if (e.tokens) e.tokens->take(now, n);
    if (e.day_tokens) e.day_tokens->take(now, n);
  }
  return r;
}

void QuotaLedger::settle(Reservation& r, TimePoint now, int64_t used_tokens) {
  const double extra = static_cast<double>(std::max<int64_t>(used_tokens, 0) - r.tokens);
  for (const uint32_t id : r.entries) {
    for (std::optional<Gcra>* bucket : {&entries_[id].tokens, &entries_[id].day_tokens}) {
      if (!*bucket) continue;
      if (extra < 0) {
        (*bucket)->give_back(-extra);
      } else if (extra > 0) {
        (*bucket)->take(now, extra);
      }
    }
  }
  end(r);
}

void QuotaLedger::release(Reservation& r) {
  for (const uint32_t id : r.entries) {
    Entry& e = entries_[id];
    if (e.tokens) e.tokens->give_back(static_cast<double>(r.tokens));
    if (e.day_tokens) e.day_tokens->give_back(static_cast<double>(r.tokens));
  }
  end(r);
}

void QuotaLedger::end(Reservation& r) {
  for (const uint32_t id : r.entries) {
    --entries_[id].in_flight;
    entries_[id].reserved -= r.tokens;
  }
  r.entries.clear();
  r.tokens = 0;
}

RateStatus QuotaLedger::status(const Subject& who, TimePoint now) const {
  RateStatus s;
  auto tighter = [&](std::optional<RateStatus::Figures>& slot, const Gcra& g) {
    const double left = g.remaining(now);
    if (!slot || left / g.limit() < slot->remaining / slot->limit) {
      slot = RateStatus::Figures{.limit = g.limit(), .remaining = left, .reset = g.until_full(now)};
    }
  };
  for_covering(who, [&](uint32_t id) {
    const Entry& e = entries_[id];
    if (e.requests) tighter(s.requests, *e.requests);
    if (e.tokens) tighter(s.tokens, *e.tokens);
  });
  return s;
}

std::vector<EntryState> QuotaLedger::snapshot(TimePoint now) const {
  std::vector<EntryState> out;
  out.reserve(entries_.size());
  auto left = [&](const std::optional<Gcra>& g) { return g ? std::optional(g->remaining(now)) : std::nullopt; };
  for (const Entry& e : entries_) {
    out.push_back(EntryState{.owner = e.owner,
                             .index = e.index,
                             .requests_remaining = left(e.requests),
                             .tokens_remaining = left(e.tokens),
                             .day_tokens_remaining = left(e.day_tokens),
                             .in_flight = e.in_flight,
                             .reserved_tokens = e.reserved});
  }
  return out;
}

}  // namespace arbiter::quota
