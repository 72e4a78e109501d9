// Answer-early stage: the result cache (docs/cache.md). Runs after the
// route (the class and the model's pool are known) and before protection
// and admission, so a hit costs no engine slot, no quota and is neither
// degraded nor shed. For a request the cache may take (cache_policy), it
// looks the key up (in process, then with `cache.redis` in the replicas'
// shared store), then (near-duplicates on, a prompt short enough) the
// near-duplicate index, then (with `cache.semantic_model`) the semantic
// index with the prompt's embedding: a hit is answered here, whole or
// streamed as the request asks, with `x-arbiter-cache: hit` (or `near`,
// with `x-arbiter-cache-similarity` and `x-arbiter-cache-match: lexical`
// or `semantic`) and `age`; while the pool is at the overload `high` stage
// or above, a degradable class takes near hits at the degraded thresholds.
// A miss goes on with its sink teed into a CacheFill (`x-arbiter-cache:
// miss`), which the cache observer offers to the store when the request
// ends.
#pragma once

#include "gateway/pipeline/stage.hpp"
#include "gateway/stages/cache/result_cache.hpp"
#include "gateway/stages/degrade/overload_control.hpp"

namespace arbiter {

struct CacheLookup;  // what admit() found out (cache_stage.cpp)

class CacheStage final : public DeclaredStage<CacheStage> {
 public:
  CacheStage(ResultCache& cache, const OverloadControl& overload) : cache_(cache), overload_(overload) {}
  static constexpr std::string_view kName = "cache";
  static constexpr Phase kPhase = Phase::kAnswerEarly;
  Verdict admit(RequestContext& ctx) override;
  // Asks the replicas' shared store (when the local one missed), follows an
  // identical request in flight, or writes the hit found.
  Task<Verdict> admit_async(RequestContext& ctx) override;

 private:
  // A hit: counted as `result`, kept for write_hit.
  Verdict found(RequestContext& ctx, cache::ResultStore::Hit hit, std::optional<double> similarity,
                std::string_view result);
  // After the exact key missed: a lexical near duplicate, else the semantic
  // mode's embedding to ask for (wait), else miss().
  Verdict after_miss(RequestContext& ctx, CacheLookup& lookup);
  // The prompt's embedding: a semantic near duplicate, else miss() (the
  // embedding kept for the fill).
  Task<Verdict> semantic(RequestContext& ctx, CacheLookup& lookup);
  // An identical request in flight to follow, or the miss (its fill installed).
  Verdict miss(RequestContext& ctx, CacheLookup& lookup);
  // Follows an identical request in flight, when there is one (true).
  bool join_flight(RequestContext& ctx, const CacheLookup& lookup);
  Task<Verdict> follow_flight(RequestContext& ctx);
  Task<Verdict> write_hit(RequestContext& ctx);
  void count(const RequestContext& ctx, std::string_view result);
  // The store's entry, its answer read (at its first hit) and kept so;
  // none when absent or not an answer a cache replays (then dropped).
  std::optional<cache::ResultStore::Hit> read(const cache::CacheKey& key, std::string_view scope,
                                              std::string_view model, cache::ResultStore::Clock::time_point now,
                                              std::optional<cache::ResultStore::Clock::duration> max_age);
  // Whether a near hit needs the looser, degraded threshold now: the pool at
  // the overload `high` stage or above and the class not protected.
  bool degraded(const RequestContext& ctx) const;

  ResultCache& cache_;
  const OverloadControl& overload_;
};

// The finished request's answer to the cache (ResultCache::offer).
class CacheObserver final : public CompletionObserver {
 public:
  explicit CacheObserver(ResultCache& cache) : cache_(cache) {}
  void on_complete(const RequestContext& ctx) override;

 private:
  ResultCache& cache_;
};

}  // namespace arbiter
