#include "gateway/stages/cache/result_cache.hpp"

#include <boost/json.hpp>

#include "gateway/pipeline/request_context.hpp"

namespace arbiter {

ResultCache::ResultCache(const cache::CacheConfig& config, metrics::Registry& registry, net::any_io_executor executor)
    : store_(config.max_bytes), near_(config.max_bytes / 4), semantic_(config.semantic_max_bytes), metrics_(registry) {
  if (!config.redis.empty()) shared_ = std::make_unique<SharedResultStore>(executor, config, metrics_);
}

Task<std::string> ResultCache::flush(std::string model) {
  const std::size_t local = store_.flush(model);
  near_.clear();  // they only name candidates: rebuilt as answers are kept again
  semantic_.clear();
  publish_store();
  boost::json::object flushed{{"local", local}, {"shared", nullptr}};
  if (shared_) {
    auto deleted = co_await shared_->flush(model);
    if (deleted) {
      flushed["shared"] = *deleted;
    } else {
      flushed["shared_error"] = deleted.error();
    }
  }
  co_return boost::json::serialize(boost::json::object{{"flushed", std::move(flushed)}});
}

void ResultCache::offer(const RequestContext& ctx, CacheFill& fill) {
  flights_.remove(fill.flight_key, fill.flight.get());  // no one joins it from now
  const std::string& model = ctx.parsed.info.model;
  const auto count = [&](std::string_view result) { metrics_.fills.with({model, ctx.rec.cls, result}).inc(); };
  const Flight::State answer = fill.flight->state();
  if (answer.status != 200 || !answer.complete || ctx.outcome.status != 200) return count("failed");
  const cache::CacheConfig& settings = ctx.runtime->config.cache;
  if (answer.size > settings.max_entry_bytes) return count("too_large");
  if (!ctx.rec.degraded.empty() || (ctx.breaker && ctx.breaker->target != resilience::BreakerTarget::kPrimary)) {
    return count("degraded");
  }
  // Kept as the client got it, read at its first hit: a miss pays no JSON parse.
  auto stored = std::make_shared<cache::StoredAnswer>(cache::StoredAnswer{.route = ctx.parsed.info.route,
                                                                          .answer = std::nullopt,
                                                                          .stream = answer.stream,
                                                                          .raw = fill.flight->take_bytes(),
                                                                          .usage = ctx.outcome.usage});
  // A stream is whole when it ended with [DONE] (an engine's error event
  // ends it otherwise); a whole answer's shape is checked when read.
  if (stored->stream && !stored->raw.ends_with("data: [DONE]\n\n")) return count("shape");
  const auto now = cache::ResultStore::Clock::now();
  if (shared_) shared_->put(fill.key, StoredValue{.scope = fill.scope, .model = model, .answer = *stored}, settings.ttl);
  if (!store_.put(fill.key, fill.scope, model, std::move(stored), now, settings.ttl)) return count("too_large");
  count("stored");
  if (fill.near) near_.add(fill.near_scope, fill.key, std::move(*fill.near));
  if (!fill.embedding.empty()) semantic_.add(fill.semantic_scope, fill.key, fill.embedding);
  publish_store();
}

void ResultCache::publish_store() {
  metrics_.bytes.with({}).set(static_cast<double>(store_.bytes()));
  metrics_.entries.with({}).set(static_cast<double>(store_.entries()));
  metrics_.evictions.with({}).set(store_.evictions());
  metrics_.semantic_entries.with({}).set(static_cast<double>(semantic_.entries()));
}

}  // namespace arbiter
