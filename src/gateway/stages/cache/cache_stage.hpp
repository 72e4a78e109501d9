// Answer-early stage: the result cache (docs/cache.md). Runs after the
// route (the class and the model's pool are known) and before protection
// and admission, so a hit costs no engine slot, no quota and is neither
// degraded nor shed. For a request the cache may take (cache_policy), it
// looks the key up, then (near-duplicates on, a prompt short enough) the
// near-duplicate index: a hit is answered here, whole or streamed as the
// request asks, with `x-arbiter-cache: hit` (or `near`, with
// `x-arbiter-cache-similarity`) and `age`; while the pool is at the
// overload `high` stage or above, a degradable class takes near hits at
// `near_degraded_threshold`. A miss goes on with its sink teed into a
// CacheFill (`x-arbiter-cache: miss`), which the cache observer offers to
// the store when the request ends.
#pragma once

#include "gateway/pipeline/stage.hpp"
#include "gateway/stages/cache/result_cache.hpp"
#include "gateway/stages/degrade/overload_control.hpp"

namespace arbiter {

class CacheStage final : public DeclaredStage<CacheStage> {
 public:
  CacheStage(ResultCache& cache, const OverloadControl& overload) : cache_(cache), overload_(overload) {}
  static constexpr std::string_view kName = "cache";
  static constexpr Phase kPhase = Phase::kAnswerEarly;
  Verdict admit(RequestContext& ctx) override;
  // Writes the hit admit() found.
  Task<Verdict> admit_async(RequestContext& ctx) override;

 private:
  // The store's entry, its answer read (at its first hit) and kept so;
  // none when absent or not an answer a cache replays (then dropped).
  std::optional<cache::ResultStore::Hit> read(const cache::CacheKey& key, std::string_view scope,
                                              std::string_view model, cache::ResultStore::Clock::time_point now,
                                              std::optional<cache::ResultStore::Clock::duration> max_age);
  // The threshold a near hit needs for this request now.
  double near_threshold(const RequestContext& ctx) const;

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
