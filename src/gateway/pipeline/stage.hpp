// The two kinds of pluggable steps of the request pipeline
// (gateway/pipeline/pipeline.hpp). A feature is a class in its own folder
// under gateway/stages/ (or gateway/observers/) and one line in the
// registry the chain is assembled from (gateway/pipeline_registry.cpp).
#pragma once

#include <optional>
#include <string_view>

#include "core/error.hpp"
#include "gateway/pipeline/request_context.hpp"

namespace arbiter {

// What an admission stage decided about a request.
struct Verdict {
  enum class Kind : uint8_t {
    kContinue,  // on to the next stage
    kRefuse,    // answer `error` (4xx/5xx) and stop
    kWait,      // the stage must wait (e.g. a remote quota, a write): run admit_async
    // The stage answered the request itself (a cache hit, a canned degraded
    // answer, a shadow decision): it wrote the answer through ctx.sink and
    // set ctx.outcome.status. No later stage and no handler runs; the
    // observers see the request end as for any other.
    kAnswered,
  };
  Kind kind = Kind::kContinue;
  std::optional<ApiError> error;

  static Verdict go() { return {}; }
  static Verdict refuse(ApiError e) { return {Kind::kRefuse, std::move(e)}; }
  static Verdict wait() { return {Kind::kWait, std::nullopt}; }
  static Verdict answered() { return {Kind::kAnswered, std::nullopt}; }
};

// The phases of the request path, in the order they run (as nginx's phases
// or Envoy's filter chain). Each admission stage declares its own; inside a
// phase, stages run in the registry's order.
enum class Phase : uint8_t {
  kAuthenticate,  // who is asking: the tenant
  kParse,         // the body, once
  kRoute,         // model, class and the pool they give; the client's hints
  // Answers that need no engine (the result cache): before protection, so
  // an answer that costs the engines nothing is never degraded or shed.
  kAnswerEarly,
  kProtect,       // the model's health and the gateway's load: breakers, degradation
  kAdmit,         // may it run now: caps, quotas, supersede
};
inline constexpr Phase kPhases[] = {Phase::kAuthenticate, Phase::kParse,   Phase::kRoute,
                                    Phase::kAnswerEarly,  Phase::kProtect, Phase::kAdmit};

// "authenticate", "parse", "route", "protect", "answer_early", "admit".
std::string_view phase_name(Phase phase);

// Runs before dispatch, in chain order: may refuse or answer the request.
// Most stages decide at once (admit); one that must wait (or write: a sink
// is written from a coroutine) returns Verdict::wait() and the pipeline
// co_awaits admit_async, so the others cost no coroutine frame.
class AdmissionStage {
 public:
  virtual ~AdmissionStage() = default;
  virtual std::string_view name() const = 0;
  virtual Phase phase() const = 0;
  virtual Verdict admit(RequestContext& ctx) = 0;
  // Only after admit() returned wait(): go, refuse or answered (a wait
  // here counts as go).
  virtual Task<Verdict> admit_async(RequestContext& ctx);
};

// A stage's name and phase from what its class declares (kName, kPhase: the
// registry's entry reads the same two), so a stage writes them once.
template <class Stage>
class DeclaredStage : public AdmissionStage {
 public:
  std::string_view name() const final { return Stage::kName; }
  Phase phase() const final { return Stage::kPhase; }
};

// Told when a request starts and when it has ended (answered, refused or
// abandoned), exactly once each: metrics, the access log, later audit and
// quota reconciliation. Must not block.
class CompletionObserver {
 public:
  virtual ~CompletionObserver() = default;
  virtual void on_start(RequestContext& ctx) {}
  // A streamed answer began: its head (status 200) went to the client. At
  // most once, between on_start and on_complete; what follows cannot turn
  // it into the backends' failure (a cut ends it with an error event).
  virtual void on_answer_started(RequestContext& ctx) {}
  // An observer that returns true gets on_answer_end, and the pipeline
  // holds each answer's last write until it has run (answer_end_hold.hpp).
  virtual bool records_before_answer_end() const { return false; }
  // Before the answer's last write leaves: what must not be lost to a
  // crash once the client has its whole answer (the store's journal).
  // ctx.rec's status and error are set, its bytes and durations not yet; a
  // last write that then fails makes the status 499 for on_complete only.
  virtual void on_answer_end(const RequestContext& ctx) {}
  virtual void on_complete(const RequestContext& ctx) {}
};

// Runs an admitted request: dispatch (queueing) and relay. Sets ctx.outcome.
class AdmittedHandler {
 public:
  virtual ~AdmittedHandler() = default;
  virtual Task<void> run(RequestContext& ctx) = 0;
};

}  // namespace arbiter
