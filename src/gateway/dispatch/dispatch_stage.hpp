// The pipeline's handler: an admitted request waits in the scheduler's
// queues (Dispatcher) until a backend has room, then runs there through the
// relay, and again from its checkpoint after each preemption. Sets
// ctx.outcome, the record's backend, queue time, wait reason, preemptions,
// token counts, engine time and cost (at the model's price), and charges
// the scheduler what the request really cost.
#pragma once

#include <memory>
#include <vector>

#include "gateway/dispatch/dispatcher.hpp"
#include "gateway/model_pool.hpp"
#include "gateway/pipeline/stage.hpp"

namespace arbiter {

class DispatchStage final : public AdmittedHandler {
 public:
  DispatchStage(const Config& config, Dispatcher& dispatcher, const std::vector<std::unique_ptr<ModelPool>>& pools)
      : config_(config), dispatcher_(dispatcher), pools_(pools) {}
  Task<void> run(RequestContext& ctx) override;

 private:
  // Runs a dispatched request on its slot until it ends: several upstream
  // runs when it is preempted and resumed from its checkpoint.
  Task<RelayOutcome> run_upstream(RequestContext& ctx, Dispatcher::Slot& slot);

  const Config& config_;
  Dispatcher& dispatcher_;
  const std::vector<std::unique_ptr<ModelPool>>& pools_;
};

}  // namespace arbiter
