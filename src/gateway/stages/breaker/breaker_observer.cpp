#include "gateway/stages/breaker/breaker_observer.hpp"

namespace arbiter {

bool backends_failed(const RelayOutcome& outcome) {
  // A stream cut after its answer began is its backend's failure (outlier
  // detection's); the model served it. Counting those here made one crashed
  // engine of three isolate its model: its cut streams all end within
  // milliseconds while the others' successes are still streaming.
  if (outcome.stream && outcome.status == 200) return false;
  if (outcome.error) {
    switch (outcome.error->code) {
      case ErrorCode::kUpstreamFailed:
      case ErrorCode::kUpstreamTimeout:
      case ErrorCode::kBackendsDown:
        return true;
      default:
        return false;
    }
  }
  return outcome.status >= 500;  // the engine's own 5xx, passed through
}

void BreakerObserver::on_answer_started(RequestContext& ctx) {
  if (!ctx.breaker) return;
  breakers_.record(ctx.breaker_model, *ctx.breaker, false, sched::Clock::now());
}

void BreakerObserver::on_complete(const RequestContext& ctx) {
  // Refused before the breaker stage or by the breaker itself: not routed;
  // or a stream, recorded when its answer began.
  if (!ctx.breaker || ctx.answer_began) return;
  // Routed, then refused by a later admission stage (a quota): it reached
  // no model, so it says nothing; a half-open trial it was goes back.
  if (!ctx.admitted) {
    breakers_.release(ctx.breaker_model, *ctx.breaker, sched::Clock::now());
    return;
  }
  const bool failed = backends_failed(ctx.outcome);
  // Ended without reaching a backend (a full queue, a deadline spent
  // waiting, a client that left while queued): it tested nothing, so a
  // half-open trial goes back instead of counting as a success.
  if (!failed && ctx.rec.backend.empty()) {
    breakers_.release(ctx.breaker_model, *ctx.breaker, sched::Clock::now());
    return;
  }
  breakers_.record(ctx.breaker_model, *ctx.breaker, failed, sched::Clock::now());
}

}  // namespace arbiter
