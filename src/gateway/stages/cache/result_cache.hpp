// The gateway's result cache (docs/cache.md): the store, its metrics, and
// what a request that missed keeps while its fresh answer goes out (a
// CacheFill: the key, and the copy of the answer the response tee hands
// it). The cache stage looks up and installs the fill; the cache observer
// offers the finished answer (offer()), which keeps it only when it came
// back whole, 200, from the model asked for and undegraded.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/cache/cache_config.hpp"
#include "core/cache/cache_key.hpp"
#include "core/cache/near_index.hpp"
#include "core/cache/result_store.hpp"
#include "gateway/stages/cache/cache_metrics.hpp"
#include "http/tee_sink.hpp"

namespace arbiter {

struct RequestContext;

// A missed request's fill: the answer's bytes as the client got them,
// up to the entry bound. Lives in the request's slots; its tee is the
// request's sink.
class CacheFill final : public ResponseCopy {
 public:
  CacheFill(ResponseSink& client, cache::CacheKey key, std::string scope, std::size_t max_bytes)
      : key(key), scope(std::move(scope)), tee(client, *this), max_bytes_(max_bytes) {}

  void head(unsigned status, std::string_view content_type) override;
  void body(std::string_view bytes) override;
  void end(bool complete) override { complete_ = complete; }

  const cache::CacheKey key;
  const std::string scope;
  TeeSink tee;
  // For the near-duplicate index, when the prompt may have near duplicates.
  uint64_t near_scope = 0;
  std::optional<cache::NearText> near;

  unsigned status() const { return status_; }
  bool stream() const { return stream_; }
  bool complete() const { return complete_; }
  bool too_large() const { return too_large_; }
  std::string_view bytes() const { return bytes_; }
  std::string take_bytes() { return std::move(bytes_); }

 private:
  std::size_t max_bytes_;
  std::string bytes_;
  unsigned status_ = 0;
  bool stream_ = false;
  bool complete_ = false;
  bool too_large_ = false;
};

class ResultCache {
 public:
  ResultCache(const cache::CacheConfig& config, metrics::Registry& registry);

  cache::ResultStore& store() { return store_; }
  const cache::NearIndex& near() const { return near_; }
  CacheMetrics& metrics() { return metrics_; }

  // The finished request's answer: kept when whole, 200, of the model it
  // asked for and not degraded (its prompt then in the near-duplicate
  // index); counted either way.
  void offer(const RequestContext& ctx, CacheFill& fill);

 private:
  cache::ResultStore store_;
  cache::NearIndex near_;  // a quarter of the store's bound
  CacheMetrics metrics_;
};

}  // namespace arbiter
