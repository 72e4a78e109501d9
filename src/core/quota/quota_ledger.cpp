#include "core/quota/quota_ledger.hpp"

#include <algorithm>

namespace arbiter::quota {

namespace {

constexpr Duration kMinute = std::chrono::minutes(1);
constexpr Duration kDay = std::chrono::hours(24);
// Retry-After for a concurrency refusal: a slot frees when some request
// ends, which the ledger cannot foresee.
constexpr Duration kConcurrencyRetry = std::chrono::seconds(1);
// Reloads after which an epoch's translation is forgotten once its last
// reservation has ended: its refills and charges in flight have long come back.
constexpr uint32_t kKeptEpochs = 16;

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

bool has_quotas(const TenantConfig& tenant, const std::vector<TeamConfig>& teams) {
  auto any = [](const std::vector<QuotaLimits>& quotas) {
    return std::any_of(quotas.begin(), quotas.end(), [](const QuotaLimits& q) { return q.limits_anything(); });
  };
  if (any(tenant.quotas)) return true;
  const auto team = std::find_if(teams.begin(), teams.end(), [&](const TeamConfig& t) { return t.name == tenant.team; });
  return team != teams.end() && (any(team->quotas) || team->dynamic_quota.has_value());
}

bool QuotaLimits::covers(std::string_view klass, std::string_view model) const {
  return listed(classes, klass) && listed(models, model);
}

QuotaLedger::QuotaLedger(const std::vector<TenantConfig>& tenants, const std::vector<TeamConfig>& teams,
                         std::optional<Sharing> sharing)
    : sharing_(sharing) {
  auto make = [&](double limit, Duration period) {
    return sharing_ ? QuotaLimit(limit, period, sharing_->replicas, sharing_->lease_share) : QuotaLimit(limit, period);
  };
  auto add = [&](const std::string& owner, const std::vector<QuotaLimits>& quotas) {
    std::vector<uint32_t> ids;
    for (std::size_t i = 0; i < quotas.size(); ++i) {
      const QuotaLimits& q = quotas[i];
      if (!q.limits_anything()) continue;
      Entry e{.owner = owner, .index = i, .limits = q};
      if (q.requests_per_minute) e.requests.emplace(make(*q.requests_per_minute, kMinute));
      if (q.tokens_per_minute) e.tokens.emplace(make(*q.tokens_per_minute, kMinute));
      if (q.tokens_per_day) e.day_tokens.emplace(make(*q.tokens_per_day, kDay));
      if (q.max_concurrent && sharing_) {
        e.slots.emplace(QuotaLimit::slots(*q.max_concurrent, sharing_->replicas, sharing_->lease_share));
      }
      ids.push_back(static_cast<uint32_t>(entries_.size()));
      entries_.push_back(std::move(e));
    }
    return ids;
  };
  std::unordered_map<std::string, std::vector<uint32_t>> by_team;
  for (const TeamConfig& team : teams) {
    std::vector<QuotaLimits> quotas = team.quotas;
    if (const auto& d = team.dynamic_quota) {
      // Until the first recomputation: the formula without history.
      const double base = d->members * d->per_member * d->complexity;
      quotas.push_back(d->tokens ? QuotaLimits{.tokens_per_minute = base} : QuotaLimits{.requests_per_minute = base});
    }
    by_team[team.name] = add("team " + team.name, quotas);
    if (team.dynamic_quota) {
      dynamic_.emplace(team.name, by_team[team.name].back());
      entries_[by_team[team.name].back()].dynamic = true;
    }
  }
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

template <class E, class F>
void QuotaLedger::for_limits(E& e, double tokens, F&& f) {
  if (e.requests) f(*e.requests, LimitKind::kRequestsPerMinute, 1.0);
  if (e.tokens) f(*e.tokens, LimitKind::kTokensPerMinute, tokens);
  if (e.day_tokens) f(*e.day_tokens, LimitKind::kTokensPerDay, tokens);
}

QuotaLimit& QuotaLedger::limit(LimitRef ref) {
  Entry& e = entries_[ref.entry];
  return ref.kind == LimitKind::kRequestsPerMinute ? *e.requests
         : ref.kind == LimitKind::kTokensPerMinute ? *e.tokens
         : ref.kind == LimitKind::kTokensPerDay    ? *e.day_tokens
                                                   : *e.slots;
}

const QuotaLimit& QuotaLedger::limit_at(LimitRef ref) const { return const_cast<QuotaLedger*>(this)->limit(ref); }

QuotaLimit* QuotaLedger::find(LimitRef ref) {
  if (ref.epoch != epoch_) {
    const auto it = remaps_.find(ref.epoch);
    if (it == remaps_.end() || ref.entry >= it->second.to_now.size() || !it->second.to_now[ref.entry]) return nullptr;
    ref.entry = *it->second.to_now[ref.entry];
  }
  Entry& e = entries_[ref.entry];
  std::optional<QuotaLimit>& l = ref.kind == LimitKind::kRequestsPerMinute ? e.requests
                                 : ref.kind == LimitKind::kTokensPerMinute ? e.tokens
                                 : ref.kind == LimitKind::kTokensPerDay    ? e.day_tokens
                                                                           : e.slots;
  return l ? &*l : nullptr;
}

void QuotaLedger::to_now(Reservation& r) {
  if (r.epoch == epoch_) return;
  const auto it = remaps_.find(r.epoch);
  auto mapped = r.entries;
  r.entries.clear();
  if (it != remaps_.end()) {
    for (const uint32_t id : mapped) {
      if (id < it->second.to_now.size() && it->second.to_now[id]) r.entries.push_back(*it->second.to_now[id]);
    }
    if (--it->second.outstanding == 0 && it->first + kKeptEpochs < epoch_) remaps_.erase(it);
  }
  r.epoch = epoch_;
  ++outstanding_;
}

void QuotaLedger::carry_from(QuotaLedger& old, TimePoint now) {
  // Each old entry's heir: the first unclaimed new entry of its owner and scope.
  std::vector<std::optional<uint32_t>> heir(old.entries_.size());
  std::vector<bool> claimed(entries_.size(), false);
  for (uint32_t o = 0; o < old.entries_.size(); ++o) {
    const Entry& was = old.entries_[o];
    for (uint32_t n = 0; n < entries_.size(); ++n) {
      const Entry& is = entries_[n];
      if (claimed[n] || is.owner != was.owner || is.dynamic != was.dynamic || is.limits.classes != was.limits.classes ||
          is.limits.models != was.limits.models) {
        continue;
      }
      claimed[n] = true;
      heir[o] = n;
      break;
    }
  }
  for (uint32_t o = 0; o < old.entries_.size(); ++o) {
    if (!heir[o]) continue;
    Entry& was = old.entries_[o];
    Entry& is = entries_[*heir[o]];
    is.in_flight = was.in_flight;
    is.reserved = was.reserved;
    // A limit the entry keeps carries what it used; a new value applies
    // from now on. A dynamic quota keeps its recomputed value.
    auto carry = [&](std::optional<QuotaLimit>& to, std::optional<QuotaLimit>& from, std::optional<double>* value) {
      if (!to || !from) return;
      const double limit = to->limit();
      to = std::move(*from);
      to->carried();
      if (was.dynamic) {
        if (value) *value = to->limit();
      } else if (limit != to->limit()) {
        to->set_limit(now, limit);
      }
    };
    carry(is.requests, was.requests, &is.limits.requests_per_minute);
    carry(is.tokens, was.tokens, &is.limits.tokens_per_minute);
    carry(is.day_tokens, was.day_tokens, nullptr);
    carry(is.slots, was.slots, nullptr);
  }
  store_up_ = old.store_up_;
  // Reservations and refs of earlier epochs now map to this one's entries.
  epoch_ = old.epoch_ + 1;
  remaps_.clear();
  auto through = [&](const std::vector<std::optional<uint32_t>>& to_old) {
    std::vector<std::optional<uint32_t>> out(to_old.size());
    for (std::size_t i = 0; i < to_old.size(); ++i) {
      if (to_old[i]) out[i] = heir[*to_old[i]];
    }
    return out;
  };
  for (auto& [epoch, remap] : old.remaps_) {
    if (remap.outstanding > 0 || epoch + kKeptEpochs >= epoch_) {
      remaps_.emplace(epoch, Remap{.to_now = through(remap.to_now), .outstanding = remap.outstanding});
    }
  }
  remaps_.emplace(old.epoch_, Remap{.to_now = std::move(heir), .outstanding = old.outstanding_});
  old = QuotaLedger({}, {}, old.sharing_);
}

std::expected<Reservation, Refusal> QuotaLedger::reserve(const Subject& who, TimePoint now, int64_t tokens) {
  Reservation r{.entries = {}, .tokens = std::max<int64_t>(tokens, 0)};
  const auto n = static_cast<double>(r.tokens);
  const bool store_down = sharing_ && !store_up_;
  if (store_down && who.store_down == StoreDownPolicy::kClosed && limits(who.tenant)) {
    return std::unexpected(Refusal{.limit = LimitKind::kRequestsPerMinute, .owner = "tenant " + std::string(who.tenant),
                                   .retry_after = kConcurrencyRetry, .store_down = true});
  }
  const bool unchecked = store_down && who.store_down == StoreDownPolicy::kOpen;
  std::optional<Refusal> refusal;
  // The longest wait decides: the request fits only once every limit has
  // room. A short lease is asked for only when nothing refuses outright.
  auto refuse = [&](const Entry& e, LimitKind kind, double value, Duration wait, bool lease_short = false) {
    if (!refusal || (refusal->lease_short && !lease_short) || (!lease_short && wait > refusal->retry_after)) {
      refusal = Refusal{.limit = kind, .owner = e.owner, .limit_value = value, .retry_after = wait,
                        .lease_short = lease_short};
    }
  };
  for_covering(who, [&](uint32_t id) {
    r.entries.push_back(id);
    const Entry& e = entries_[id];
    if (unchecked) return;
    if (const auto max = e.limits.max_concurrent) {
      if (e.slots && store_up_) {
        // Shared: a slot of this replica's lease, or a refill first.
        const std::optional<Duration> w = e.slots->wait_for(now, 1, true);
        if (!w) {
          refuse(e, LimitKind::kConcurrent, *max, Duration::zero(), /*lease_short=*/true);
        } else if (*w > Duration::zero()) {
          refuse(e, LimitKind::kConcurrent, *max, *w);
        }
      } else if (e.in_flight >= (e.slots ? *max / std::max(sharing_->replicas, 1u) : *max)) {
        refuse(e, LimitKind::kConcurrent, *max, kConcurrencyRetry);  // in-process, or the store down
      }
    }
    for_limits(e, n, [&](const QuotaLimit& l, LimitKind kind, double amount) {
      const std::optional<Duration> w = l.wait_for(now, amount, store_up_);
      if (!w) {
        refuse(e, kind, l.limit(), Duration::zero(), /*lease_short=*/true);
      } else if (*w > Duration::zero()) {
        refuse(e, kind, l.limit(), *w);
      }
    });
  });
  if (refusal) return std::unexpected(std::move(*refusal));
  r.leased_slots = sharing_ && store_up_;
  r.epoch = epoch_;
  ++outstanding_;
  for (const uint32_t id : r.entries) {
    Entry& e = entries_[id];
    if (e.slots && r.leased_slots) e.slots->take(now, 1, true);
    ++e.in_flight;
    e.reserved += r.tokens;
    for_limits(e, n, [&](QuotaLimit& l, LimitKind, double amount) { l.take(now, amount, store_up_); });
  }
  return r;
}

bool QuotaLedger::set_dynamic_limit(std::string_view team, TimePoint now, double limit) {
  const auto it = dynamic_.find(team);
  if (it == dynamic_.end() || limit <= 0) return false;
  Entry& e = entries_[it->second];
  std::optional<QuotaLimit>& l = e.requests ? e.requests : e.tokens;
  l->set_limit(now, limit);
  (e.requests ? e.limits.requests_per_minute : e.limits.tokens_per_minute) = limit;
  return true;
}

void QuotaLedger::settle(Reservation& r, TimePoint now, int64_t used_tokens) {
  to_now(r);
  const double extra = static_cast<double>(std::max<int64_t>(used_tokens, 0) - r.tokens);
  for (const uint32_t id : r.entries) {
    for (std::optional<QuotaLimit>* l : {&entries_[id].tokens, &entries_[id].day_tokens}) {
      if (!*l) continue;
      if (extra < 0) {
        (*l)->give_back(-extra);
      } else if (extra > 0) {
        (*l)->take(now, extra, store_up_);
      }
    }
  }
  end(r);
}

void QuotaLedger::release(Reservation& r) {
  to_now(r);
  for (const uint32_t id : r.entries) {
    Entry& e = entries_[id];
    if (e.tokens) e.tokens->give_back(static_cast<double>(r.tokens));
    if (e.day_tokens) e.day_tokens->give_back(static_cast<double>(r.tokens));
  }
  end(r);
}

void QuotaLedger::end(Reservation& r) {
  for (const uint32_t id : r.entries) {
    Entry& e = entries_[id];
    --e.in_flight;
    e.reserved -= r.tokens;
    if (e.slots && r.leased_slots) e.slots->give_back(1);  // a slot taken from the lease goes back to it
  }
  r.entries.clear();
  r.tokens = 0;
  --outstanding_;
}

std::vector<LeaseNeed> QuotaLedger::lease_needs(const Subject& who, TimePoint now, int64_t tokens) {
  std::vector<LeaseNeed> needs;
  if (!sharing_ || !store_up_) return needs;
  const auto n = static_cast<double>(std::max<int64_t>(tokens, 0));
  for_covering(who, [&](uint32_t id) {
    auto check = [&](QuotaLimit& l, LimitKind kind, double amount) {
      if (l.wait_for(now, amount, true)) return;  // fits, or refused outright
      LeaseNeed need{.ref = {.entry = id, .kind = kind, .epoch = epoch_}, .need = l.shortfall(amount), .want = 0,
                     .in_flight = l.refilling()};
      need.want = l.want(need.need);
      if (!need.in_flight) l.begin_refill();
      needs.push_back(need);
    };
    for_limits(entries_[id], n, check);
    if (entries_[id].slots) check(*entries_[id].slots, LimitKind::kConcurrent, 1);
  });
  return needs;
}

// A refill's answer for a limit a reload removed is dropped: the store's
// window keeps what it granted, as for any lease of a removed quota.
void QuotaLedger::lease_granted(LimitRef ref, TimePoint now, double granted, double store_remaining,
                                Duration store_reset) {
  if (QuotaLimit* l = find(ref)) l->lease_granted(now, granted, store_remaining, store_reset);
}

void QuotaLedger::lease_refused(LimitRef ref, TimePoint now, Duration wait) {
  if (QuotaLimit* l = find(ref)) l->lease_refused(now, wait);
}

void QuotaLedger::refill_failed(LimitRef ref) {
  if (QuotaLimit* l = find(ref)) l->refill_failed();
}

void QuotaLedger::restore(const StoreCharge& charge) {
  if (QuotaLimit* l = find(charge.ref)) l->restore(charge.units);
}

std::vector<StoreCharge> QuotaLedger::settle_with_store(TimePoint now, Duration idle) {
  std::vector<StoreCharge> out;
  if (!sharing_ || !store_up_) return out;
  for (uint32_t id = 0; id < entries_.size(); ++id) {
    auto hand_back = [&](QuotaLimit& l, LimitKind kind, double) {
      if (const double units = l.settle_with_store(now, idle); units != 0) {
        out.push_back({.ref = {.entry = id, .kind = kind, .epoch = epoch_}, .units = units});
      }
    };
    for_limits(entries_[id], 0, hand_back);
    if (entries_[id].slots) hand_back(*entries_[id].slots, LimitKind::kConcurrent, 0);
  }
  return out;
}

std::vector<StoreCharge> QuotaLedger::outage_charges() {
  std::vector<StoreCharge> out;
  if (!sharing_) return out;
  for (uint32_t id = 0; id < entries_.size(); ++id) {
    for_limits(entries_[id], 0, [&](QuotaLimit& l, LimitKind kind, double) {
      if (const double units = l.take_unreported(); units != 0) {
        out.push_back({.ref = {.entry = id, .kind = kind, .epoch = epoch_}, .units = units});
      }
    });
  }
  return out;
}

RateStatus QuotaLedger::status(const Subject& who, TimePoint now) const {
  RateStatus s;
  auto tighter = [&](std::optional<RateStatus::Figures>& slot, const QuotaLimit& l) {
    const double left = l.remaining(now);
    if (!slot || left / l.limit() < slot->remaining / slot->limit) {
      slot = RateStatus::Figures{.limit = l.limit(), .remaining = left, .reset = l.until_full(now)};
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
  auto left = [&](const std::optional<QuotaLimit>& l) { return l ? std::optional(l->remaining(now)) : std::nullopt; };
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
