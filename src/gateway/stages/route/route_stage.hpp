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

class RouteStage final : public AdmissionStage {
 public:
  // `pools`: the pools of the request's Runtime's pool_index (indexes of
  // its config.models).
  explicit RouteStage(const std::vector<std::unique_ptr<ModelPool>>& pools) : pools_(pools) {}
  std::string_view name() const override { return "route"; }
  Verdict admit(RequestContext& ctx) override;

 private:
  // The pool of `pools` that serves class `cls`: the one naming it, else the
  // one without classes (config validation makes sure there is one).

  const std::vector<std::unique_ptr<ModelPool>>& pools_;
};

// The pool of a model (`pools`: its pools, config indexes) that serves class
// `cls`: the one whose class list names it, else the one without a list.
std::size_t class_pool(const Config& config, const std::vector<std::size_t>& pools, std::size_t cls);

}  // namespace arbiter
