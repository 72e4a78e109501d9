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
  // `pool_index`: model name -> its pools (indexes of config.models and `pools`).
  RouteStage(const Config& config, const Classifier& classifier,
             const std::unordered_map<std::string, std::vector<std::size_t>>& pool_index,
             const std::vector<std::unique_ptr<ModelPool>>& pools)
      : config_(config), classifier_(classifier), pool_index_(pool_index), pools_(pools) {}
  std::string_view name() const override { return "route"; }
  Verdict admit(RequestContext& ctx) override;

 private:
  // The pool of `pools` that serves class `cls`: the one naming it, else the
  // one without classes (config validation makes sure there is one).

  const Config& config_;
  const Classifier& classifier_;
  const std::unordered_map<std::string, std::vector<std::size_t>>& pool_index_;
  const std::vector<std::unique_ptr<ModelPool>>& pools_;
};

// The pool of a model (`pools`: its pools, config indexes) that serves class
// `cls`: the one whose class list names it, else the one without a list.
std::size_t class_pool(const Config& config, const std::vector<std::size_t>& pools, std::size_t cls);

}  // namespace arbiter
