// The request pipeline of the inference routes, Envoy's filter chain
// without its weight: admission stages in order (auth, parse, route, caps;
// later quotas, degradation, cache lookup), then the handler (dispatch and
// relay), then the completion observers (metrics, access log; the store's
// journal before the answer's last write leaves). Each config
// generation assembles one (gateway/generation.hpp); it holds no
// per-request state. A request reads the configuration through the Runtime
// it is run with.
#pragma once

#include <memory>
#include <vector>

#include "gateway/pipeline/stage.hpp"
#include "gateway/runtime.hpp"

namespace arbiter {

class Cors;

class Pipeline {
 public:
  // In its phase's place: after every stage of the same or an earlier phase.
  void add_stage(std::unique_ptr<AdmissionStage> stage);
  void set_handler(std::unique_ptr<AdmittedHandler> handler) { handler_ = std::move(handler); }
  void add_observer(std::unique_ptr<CompletionObserver> observer) {
    holds_answer_end_ = holds_answer_end_ || observer->records_before_answer_end();
    observers_.push_back(std::move(observer));
  }
  // The config version its requests' access-log lines name (a view of the
  // generation's hash, which outlives the pipeline's requests).
  void set_config_hash(std::string_view hash) { config_hash_ = hash; }
  // Browser apps' cross-origin requests: their answers' CORS headers.
  void set_cors(const Cors& cors) { cors_ = &cors; }

  // One request of `route`, start to finish: the answer goes out (or the
  // client left) and every observer has seen its end. `runtime`: the config
  // it reads; holding it keeps the pipeline's generation alive to the end.
  Task<void> run(Route route, HttpRequest& req, RequestClient& conn, std::shared_ptr<const Runtime> runtime) const;

  const std::vector<std::unique_ptr<AdmissionStage>>& stages() const { return stages_; }

 private:
  // The admission stages run in a plain loop (no coroutine frame) from
  // stage `from` until one must wait: its index, or the stage count when
  // the chain ended (all went on, or one refused or answered).
  std::size_t admit_until_wait(RequestContext& ctx, std::size_t from) const;
  // Stage `i`'s wait (admit_async), settled: whether the chain goes on. A
  // coroutine of its own, only for a stage that waits: its verdict takes no
  // room in run()'s frame, which lives as long as the request.
  Task<bool> admit_waiting(RequestContext& ctx, std::size_t i) const;
  // A verdict applied: the first refusal goes to ctx.outcome.error, a
  // stage's own answer to ctx.answered_by; false when the chain ends there.
  static bool settle(RequestContext& ctx, const AdmissionStage& stage, Verdict verdict);

  std::vector<std::unique_ptr<AdmissionStage>> stages_;
  std::unique_ptr<AdmittedHandler> handler_;
  std::vector<std::unique_ptr<CompletionObserver>> observers_;
  bool holds_answer_end_ = false;  // an observer records before the answer's last write
  std::string_view config_hash_;
  const Cors* cors_ = nullptr;  // null: none configured
};

}  // namespace arbiter
