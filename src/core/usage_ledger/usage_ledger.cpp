#include "core/usage_ledger/usage_ledger.hpp"

#include <algorithm>
#include <stdexcept>

namespace arbiter::usage {
namespace {

int64_t hour_index(WallTime t) { return std::chrono::floor<std::chrono::hours>(t).time_since_epoch().count(); }

}  // namespace

WallTime hour_of(WallTime t) { return std::chrono::floor<std::chrono::hours>(t); }

UsageTotals& UsageTotals::operator+=(const UsageTotals& o) {
  requests += o.requests;
  prompt_tokens += o.prompt_tokens;
  completion_tokens += o.completion_tokens;
  cached_tokens += o.cached_tokens;
  cost += o.cost;
  return *this;
}

UsageLedger::UsageLedger(Names names, std::chrono::hours retention)
    : names_(std::move(names)), retention_hours_(std::max<int64_t>(retention.count(), 1)) {
  if (names_.teams.size() != names_.tenants.size()) throw std::invalid_argument("usage ledger: a team per tenant");
}

NameIds UsageLedger::adopt(const Names& names) {
  NameIds ids;
  auto id_in = [](std::vector<std::string>& list, const std::string& name) {
    const auto it = std::ranges::find(list, name);
    if (it != list.end()) return static_cast<uint32_t>(it - list.begin());
    list.push_back(name);
    return static_cast<uint32_t>(list.size() - 1);
  };
  for (std::size_t t = 0; t < names.tenants.size() && t < names.teams.size(); ++t) {
    uint32_t id = 0;
    while (id < names_.tenants.size() && (names_.tenants[id] != names.tenants[t] || names_.teams[id] != names.teams[t])) ++id;
    if (id == names_.tenants.size()) {
      names_.tenants.push_back(names.tenants[t]);
      names_.teams.push_back(names.teams[t]);
    }
    ids.tenants.push_back(id);
  }
  for (const std::string& m : names.models) ids.models.push_back(id_in(names_.models, m));
  for (const std::string& c : names.classes) ids.classes.push_back(id_in(names_.classes, c));
  return ids;
}

uint64_t UsageLedger::pack(UsageKey k) {
  return uint64_t{k.tenant} << 32 | uint64_t{k.model} << 16 | k.klass;
}

UsageKey UsageLedger::unpack(uint64_t key) {
  return {.tenant = static_cast<uint32_t>(key >> 32),
          .model = static_cast<uint16_t>(key >> 16),
          .klass = static_cast<uint16_t>(key)};
}

WallTime UsageLedger::hour_start(int64_t index) { return WallTime{} + std::chrono::hours(index); }

UsageLedger::Hour* UsageLedger::hour(int64_t index) {
  if (hours_.empty() || index > hours_.back().index) {
    if (!hours_.empty()) hours_.back().buckets.shrink_to_fit();  // rarely written again: no slack kept
    hours_.push_back(Hour{.index = index, .buckets = {}});
    while (hours_.front().index <= index - retention_hours_) hours_.pop_front();
    return &hours_.back();
  }
  if (index <= hours_.back().index - retention_hours_) return nullptr;
  auto it = std::ranges::lower_bound(hours_, index, {}, &Hour::index);
  if (it == hours_.end() || it->index != index) it = hours_.insert(it, Hour{.index = index, .buckets = {}});
  return &*it;
}

void UsageLedger::record(WallTime at, UsageKey key, const UsageTotals& used) {
  if (key.tenant >= names_.tenants.size() || key.model >= names_.models.size() || key.klass >= names_.classes.size()) {
    throw std::out_of_range("usage ledger: a key outside its names");  // a bug of the caller
  }
  Hour* h = hour(hour_index(at));
  if (h == nullptr) return;
  const uint64_t packed = pack(key);
  auto it = std::ranges::lower_bound(h->buckets, packed, {}, &Bucket::key);
  if (it == h->buckets.end() || it->key != packed) it = h->buckets.insert(it, Bucket{.key = packed, .totals = {}});
  it->totals += used;
}

std::vector<double> UsageLedger::team_hourly_tokens(std::string_view team, WallTime now, int hours) const {
  std::vector<double> series(static_cast<std::size_t>(std::max(hours, 0)), 0.0);
  std::vector<bool> member(names_.tenants.size());
  for (std::size_t t = 0; t < member.size(); ++t) member[t] = names_.teams[t] == team;
  const int64_t end = hour_index(now);  // not over yet: left out
  const int64_t first = end - static_cast<int64_t>(series.size());
  for (const Hour& h : hours_) {
    if (h.index < first || h.index >= end) continue;
    for (const Bucket& b : h.buckets) {
      if (member[unpack(b.key).tenant]) series[static_cast<std::size_t>(h.index - first)] += static_cast<double>(b.totals.tokens());
    }
  }
  return series;
}

std::size_t UsageLedger::buckets() const {
  std::size_t n = 0;
  for (const Hour& h : hours_) n += h.buckets.size();
  return n;
}

}  // namespace arbiter::usage
