// The gateway's result cache (docs/cache.md): the store, the near-duplicate
// indexes (lexical and, with cache.semantic_model, semantic) and the
// embedder that feeds the second, the answers in flight, its metrics, and
// what a request that missed keeps while its fresh answer goes out (a
// CacheFill: the key, and the Flight its answer's bytes go into). The
// cache stage looks up, joins a flight or installs the fill; the cache
// observer offers the finished answer (offer()), which keeps it only when
// it came back whole, 200, from the model asked for and undegraded.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/cache/cache_config.hpp"
#include "core/cache/cache_key.hpp"
#include "core/cache/near_index.hpp"
#include "core/cache/result_store.hpp"
#include "core/cache/semantic_index.hpp"
#include "gateway/stages/cache/cache_metrics.hpp"
#include "gateway/stages/cache/embedder.hpp"
#include "gateway/stages/cache/flight.hpp"
#include "gateway/stages/cache/shared_result_store.hpp"

namespace arbiter {

struct RequestContext;

// A missed request's fill: its key, and the Flight its answer goes into
// through `tee` (the request's sink), which identical requests may follow
// (flight.hpp). Lives in the request's slots.
struct CacheFill {
  CacheFill(ResponseSink& client, cache::CacheKey key, cache::CacheKey flight_key, std::string scope,
            std::shared_ptr<Flight> flight)
      : key(key), flight_key(flight_key), scope(std::move(scope)), flight(flight), tee(client, std::move(flight)) {}

  const cache::CacheKey key;
  const cache::CacheKey flight_key;  // the key with the answer's shape (Flights)
  const std::string scope;
  const std::shared_ptr<Flight> flight;
  FlightTee tee;
  // For the near-duplicate indexes, when the prompt may have near
  // duplicates: its words (lexical), its embedding (semantic mode; empty:
  // none).
  uint64_t near_scope = 0;
  std::optional<cache::NearText> near;
  std::vector<float> embedding;
  uint64_t semantic_scope = 0;  // near_scope and the prompt's messages before the last
};

class ResultCache {
 public:
  // `executor` runs the shared store's connection (with cache.redis).
  ResultCache(const cache::CacheConfig& config, metrics::Registry& registry, net::any_io_executor executor);

  cache::ResultStore& store() { return store_; }
  Flights& flights() { return flights_; }
  SharedResultStore* shared() { return shared_.get(); }  // null without cache.redis
  const cache::NearIndex& near() const { return near_; }
  const cache::SemanticIndex& semantic() const { return semantic_; }
  Embedder& embedder() { return embedder_; }
  CacheMetrics& metrics() { return metrics_; }

  // The finished request's answer: kept when whole, 200, of the model it
  // asked for and not degraded (its prompt then in the near-duplicate
  // indexes); counted either way.
  void offer(const RequestContext& ctx, CacheFill& fill);
  // POST /admin/cache/flush: drops `model`'s answers (all when empty) here
  // and in the shared store, and the near-duplicate indexes; the answer's
  // JSON ({"flushed":{"local":N,"shared":M}}, or the shared store's error).
  Task<std::string> flush(std::string model);

 private:
  void publish_store();  // the store's gauges and eviction count, as they stand

  cache::ResultStore store_;
  cache::NearIndex near_;  // a quarter of the store's bound
  cache::SemanticIndex semantic_;  // cache.semantic_max_bytes (at the start: a reload keeps the bound)
  Embedder embedder_;
  Flights flights_;
  std::unique_ptr<SharedResultStore> shared_;
  CacheMetrics metrics_;
};

}  // namespace arbiter
