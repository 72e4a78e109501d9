// The pipeline's handler: an admitted request waits in the scheduler's
// queues (Dispatcher) until a backend has room, then runs there through the
// relay, and again from its checkpoint after each preemption. A run that
// fails before the client saw a byte is retried on another backend, and a
// resumable one whose stream breaks fails over to another backend from its
// checkpoint, within max_retries and the pool's retry budget
// (BackendHealth, docs/resilience.md); every run's outcome goes to the
// backend's outlier detection. Sets
// ctx.outcome, the record's backend, queue time, wait reason, preemptions,
// token counts, engine time and cost (at the model's price), and charges
// the scheduler what the request really cost.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "gateway/dispatch/dispatcher.hpp"
#include "gateway/handler/run_request.hpp"
#include "gateway/model_pool.hpp"
#include "gateway/pipeline/stage.hpp"
#include "gateway/resilience/backend_health.hpp"
#include "gateway/resilience/run_verdict.hpp"

namespace arbiter {

class DispatchHandler final : public AdmittedHandler {
 public:
  // `health`: the request's own generation's (retry budgets of its pool);
  // a run's backend is its slot's generation's (Slot::generation()).
  // `epoch`: the dispatcher's epoch for `config` (the numbers its requests use).
  DispatchHandler(const Config& config, Dispatcher& dispatcher, uint64_t epoch, BackendHealth& health,
                  GatewayMetrics& metrics)
      : config_(config), dispatcher_(dispatcher), epoch_(epoch), health_(health), metrics_(metrics) {}
  Task<void> run(RequestContext& ctx) override;

 private:
  // What the scheduler queues for the request.
  sched::Request scheduled(const RequestContext& ctx, const BoundHints& hints) const;
  // After its runs: the scheduler charged what the request really cost, and
  // the record's tokens and cost.
  void settle(RequestContext& ctx, Dispatcher::Slot& slot) const;
  // A request's upstream runs so far.
  struct Runs {
    RequestContext& ctx;  // the request whose runs these are
    RunRequestBuilder requests;
    RelayResume* resume = nullptr;  // a resumable request's checkpoint; null: none
    std::size_t own_headers = 0;    // the response headers before any run's (x-request-id)
    int engine_priority = 0;
    uint32_t retries = 0;  // runs after failed ones
    // What a run again costs the scheduler.
    int64_t remaining_cost(const RequestInfo& info) const;
  };
  // Runs a dispatched request on its slot until it ends: several upstream
  // runs when it is preempted and resumed from its checkpoint, or retried
  // (run_policy.hpp decides which). Each run writes ctx.outcome (no copy of
  // it in this frame or run()'s).
  // `priority`: the request's engine priority hint, bounded; nullopt: its class's.
  Task<void> run_upstream(RequestContext& ctx, Dispatcher::Slot& slot, TypingOffer* offer, std::optional<int> priority);
  // One run's request and the relay's, alive while the relay runs (set up
  // in run_upstream's frame: a coroutine per run would cost a frame).
  struct RunCall {
    UpstreamRequest up;
    Interrupt interrupt;
    std::optional<RelayRequest> relay;  // references: set once per run
  };
  // Sets up the next run on the slot's backend.
  void prepare_run(Dispatcher::Slot& slot, TypingOffer* offer, Runs& runs, RunCall& call);
  // After the relay of a run `sent` then: judged and recorded for the
  // backend's health.
  RunVerdict end_run(RequestContext& ctx, Dispatcher::Slot& slot, std::chrono::steady_clock::time_point sent);
  // After a failed run: back off and queue again for another backend;
  // false when it may not (attempts, budget, client gone, queue refused).
  Task<bool> run_again(Dispatcher::Slot& slot, Runs& runs);
  // After a preemption: queue again; false when refused (the client's
  // answer or the end of its stream is then sent).
  Task<bool> requeue_preempted(Dispatcher::Slot& slot, Runs& runs);
  // Typing through: the request may offer its generation to a newer
  // keystroke (typing_handover.hpp): its class types through, and it is a
  // completion with one string prompt and a supersede key, streamed or not.
  bool typing_eligible(const RequestContext& ctx) const;
  // The offer of a request typing_eligible accepts.
  Task<std::shared_ptr<TypingOffer>> typing_offer(const RequestContext& ctx);
  // The run of a request that took over another's slot: the rest of that
  // stream, handed over, into ctx.outcome; false when it never came (it
  // then runs anew).
  Task<bool> run_inherited(RequestContext& ctx, Dispatcher::Slot& slot, TypingOffer* offer);
  void count_typing(const RequestContext& ctx, TypingOutcome outcome);
  // Client hints as bounded: arbiter_client_hints_total, and the answer's
  // x-arbiter-hints-clamped header naming those the tenant's bounds changed.
  void count_hints(RequestContext& ctx, const BoundHints& hints);
  // Frees the body of a request nothing will send again (a stream whose
  // answer began and that no preemption resumes, or an heir of typing
  // through), so that an open stream does not hold its prompt.
  void release_body(RequestContext& ctx);
  // Why the slot's latest dispatch went where it did, for the audit trail.
  void note_placement(RequestContext& ctx, const Dispatcher::Slot& slot) const;
  // The x-arbiter-* headers of one run on `backend`.
  void set_run_headers(RequestContext& ctx, const BackendConfig& backend, std::size_t own_headers,
                       uint32_t retries) const;
  // A run failed in a way another backend might not: whether to run it
  // again (attempts left, the pool's budget, the client still there), after
  // a jittered back-off. Counts the decision (`failover`: the client's
  // stream is open, the next run continues it).
  Task<bool> may_run_again(RequestContext& ctx, bool failover, uint32_t& retries);
  // The failed run's answer when it is not run again: the held upstream
  // error, or the end of a stream left open (ctx.outcome says which).
  Task<void> give_up(RequestContext& ctx, const RelayResume* resume);

  const Config& config_;
  Dispatcher& dispatcher_;
  const uint64_t epoch_;
  BackendHealth& health_;
  GatewayMetrics& metrics_;
};

}  // namespace arbiter
