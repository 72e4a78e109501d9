// Admission stage 3: where it goes. The model must exist (404 otherwise);
// the classifier picks its class (a claimed class must be allowed); the
// class picks the model's pool (per-class pools); a pool that routes by
// prefix gets the prompt's prefix blocks, hashed here before any rewrite.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "core/classifier.hpp"
#include "gateway/model_pool.hpp"
#include "gateway/pipeline/stage.hpp"

namespace arbiter {

class RouteStage final : public DeclaredStage<RouteStage> {
 public:
  // `pools`: the pools of the request's Runtime's pool_index (indexes of
  // its config.models).
  explicit RouteStage(const std::vector<std::unique_ptr<ModelPool>>& pools) : pools_(pools) {}
  static constexpr std::string_view kName = "route";
  static constexpr Phase kPhase = Phase::kRoute;
  Verdict admit(RequestContext& ctx) override;

 private:
  const std::vector<std::unique_ptr<ModelPool>>& pools_;
};

}  // namespace arbiter
