#include "gateway/stages/quota/quota_export.hpp"

namespace arbiter {

void export_quota_state(QuotaBook& book) {
  QuotaMetrics& metrics = book.metrics();
  for (const auto& [tenant, stage] : book.traffic_stages(quota::Clock::now())) {
    metrics.traffic_stage.with({tenant}).set(static_cast<double>(stage));
  }
  if (book.shared()) {
    metrics.quota_store_up.set(book.store_up() ? 1 : 0);
    metrics.quota_store_calls.set(book.store_calls());
    metrics.quota_store_failures.set(book.store_failures());
  }
  for (const quota::EntryState& e : book.snapshot(quota::Clock::now())) {
    const std::string index = std::to_string(e.index);
    auto remaining = [&](quota::LimitKind kind, const std::optional<double>& left) {
      if (left) metrics.quota_remaining.with({e.owner, index, std::string(quota::limit_name(kind))}).set(*left);
    };
    remaining(quota::LimitKind::kRequestsPerMinute, e.requests_remaining);
    remaining(quota::LimitKind::kTokensPerMinute, e.tokens_remaining);
    remaining(quota::LimitKind::kTokensPerDay, e.day_tokens_remaining);
    metrics.quota_in_flight.with({e.owner, index}).set(e.in_flight);
    metrics.quota_reserved_tokens.with({e.owner, index}).set(static_cast<double>(e.reserved_tokens));
  }
}

}  // namespace arbiter
