#include "gateway/stages/cache/result_cache.hpp"

#include "gateway/pipeline/request_context.hpp"

namespace arbiter {

void CacheFill::head(unsigned status, std::string_view content_type) {
  status_ = status;
  stream_ = content_type.starts_with("text/event-stream");
}

void CacheFill::body(std::string_view piece) {
  if (too_large_) return;
  if (bytes_.size() + piece.size() > max_bytes_) {
    too_large_ = true;
    std::string().swap(bytes_);
    return;
  }
  bytes_.append(piece);
}

ResultCache::ResultCache(const cache::CacheConfig& config, metrics::Registry& registry)
    : store_(config.max_bytes), near_(config.max_bytes / 4), metrics_(registry) {}

void ResultCache::offer(const RequestContext& ctx, CacheFill& fill) {
  const std::string& model = ctx.parsed.info.model;
  const auto count = [&](std::string_view result) { metrics_.fills.with({model, ctx.rec.cls, result}).inc(); };
  if (fill.status() != 200 || !fill.complete() || ctx.outcome.status != 200) return count("failed");
  if (fill.too_large()) return count("too_large");
  if (!ctx.rec.degraded.empty() || (ctx.breaker && ctx.breaker->target != resilience::BreakerTarget::kPrimary)) {
    return count("degraded");
  }
  // Kept as the client got it, read at its first hit: a miss pays no JSON parse.
  auto stored = std::make_shared<cache::StoredAnswer>(cache::StoredAnswer{.route = ctx.parsed.info.route,
                                                                          .answer = std::nullopt,
                                                                          .stream = fill.stream(),
                                                                          .raw = fill.take_bytes(),
                                                                          .usage = ctx.outcome.usage});
  // A stream is whole when it ended with [DONE] (an engine's error event
  // ends it otherwise); a whole answer's shape is checked when read.
  if (stored->stream && !stored->raw.ends_with("data: [DONE]\n\n")) return count("shape");
  const cache::CacheConfig& settings = ctx.runtime->config.cache;
  const auto now = cache::ResultStore::Clock::now();
  if (!store_.put(fill.key, fill.scope, model, std::move(stored), now, settings.ttl)) return count("too_large");
  count("stored");
  if (fill.near) near_.add(fill.near_scope, fill.key, std::move(*fill.near));
  metrics_.bytes.with({}).set(static_cast<double>(store_.bytes()));
  metrics_.entries.with({}).set(static_cast<double>(store_.entries()));
  metrics_.evictions.with({}).set(store_.evictions());
}

}  // namespace arbiter
