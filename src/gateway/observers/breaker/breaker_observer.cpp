#include "gateway/observers/breaker/breaker_observer.hpp"

namespace arbiter {

bool backends_failed(const RelayOutcome& outcome) {
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

void BreakerObserver::on_complete(const RequestContext& ctx) {
  // Refused before dispatch (no breaker route) or by the breaker itself.
  if (!ctx.breaker || !ctx.admitted) return;
  breakers_.record(ctx.breaker_model, *ctx.breaker, backends_failed(ctx.outcome), sched::Clock::now());
}

}  // namespace arbiter
