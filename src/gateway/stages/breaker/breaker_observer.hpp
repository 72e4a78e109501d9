// Completion observer: how a request ended, as its client saw it (after
// retries), goes to its model's breaker. A failure is a request the model
// could not answer: an upstream error or time-out before any answer, a 5xx
// answer passed through, or no live backend; never a 4xx, a full queue, a
// deadline spent waiting for capacity, a client that left, or a stream cut
// after it began (that is its backend's failure, outlier detection's).
// So a stream is recorded as the model's success when its answer begins,
// not at its end: a rate over finished requests would otherwise meet
// failures (which end at once) without the successes still streaming, and
// a half-open trial that streams would hold the breaker open for its whole
// generation.
#pragma once

#include "gateway/pipeline/stage.hpp"
#include "gateway/stages/breaker/model_breakers.hpp"

namespace arbiter {

// Whether the backends failed the request (the breaker's error).
bool backends_failed(const RelayOutcome& outcome);

class BreakerObserver final : public CompletionObserver {
 public:
  explicit BreakerObserver(ModelBreakers& breakers) : breakers_(breakers) {}
  void on_answer_started(RequestContext& ctx) override;
  void on_complete(const RequestContext& ctx) override;

 private:
  ModelBreakers& breakers_;
};

}  // namespace arbiter
