// The result cache's metric families (docs/cache.md), registered by the
// feature with the gateway's registry.
#pragma once

#include "observability/metrics_registry.hpp"

namespace arbiter {

struct CacheMetrics {
  explicit CacheMetrics(metrics::Registry& registry)
      : requests(registry.counter("arbiter_cache_requests_total",
                                  "Requests the result cache looked at, by model, class and result: hit, shared "
                                  "(a hit from the replicas' shared store), near (a near-duplicate's answer), semantic "
                                  "(a semantic near-duplicate's: cache.semantic_model), miss, "
                                  "coalesced (joined an identical request in "
                                  "flight), bypass (cache-control: no-cache), or why it was skipped (sampled, "
                                  "choices, logprobs, tools, no_store).",
                                  {"model", "class", "result"})),
        fills(registry.counter("arbiter_cache_fills_total",
                               "Fresh answers offered to the result cache, by model, class and result: stored, or "
                               "why not (failed: not a whole 200 answer; shape: tool calls, several choices or log "
                               "probabilities in it; degraded; too_large).",
                               {"model", "class", "result"})),
        bytes(registry.gauge("arbiter_cache_bytes", "Bytes the in-process result store holds (its bound: cache.max_bytes).",
                             {})),
        entries(registry.gauge("arbiter_cache_entries", "Answers the in-process result store holds.", {})),
        evictions(registry.counter("arbiter_cache_evictions_total",
                                   "Answers the in-process result store dropped for room (least recently used "
                                   "first), expired ones not counted.",
                                   {})),
        embeddings(registry.counter("arbiter_cache_embeddings_total",
                                    "Embeddings the semantic mode asked of cache.semantic_model, by result: ok, "
                                    "failed (an error or an answer without a vector), timeout "
                                    "(cache.semantic_timeout_ms), no_backend. Each but ok is a miss.",
                                    {"result"})),
        embedding_connections(registry.counter(
            "arbiter_cache_embedding_connections_total",
            "Connections the semantic mode opened to cache.semantic_model's backends. They are kept alive and "
            "reused per I/O thread: a count that keeps rising with the embeddings means the engine closes them.",
            {})),
        semantic_entries(registry.gauge("arbiter_cache_semantic_entries",
                                        "Prompts the semantic index holds (bound: cache.semantic_max_bytes).", {})),
        shared_errors(registry.counter("arbiter_cache_shared_errors_total",
                                       "Failures of the shared result store (cache.redis), by kind: timeout, "
                                       "unreachable, reply, value. Each is a miss; after one the store is skipped "
                                       "for a second.",
                                       {"kind"})) {}

  metrics::Family<metrics::Counter>& requests;
  metrics::Family<metrics::Counter>& fills;
  metrics::Family<metrics::Gauge>& bytes;
  metrics::Family<metrics::Gauge>& entries;
  metrics::Family<metrics::Counter>& evictions;
  metrics::Family<metrics::Counter>& embeddings;
  metrics::Family<metrics::Counter>& embedding_connections;
  metrics::Family<metrics::Gauge>& semantic_entries;
  metrics::Family<metrics::Counter>& shared_errors;
};

}  // namespace arbiter
