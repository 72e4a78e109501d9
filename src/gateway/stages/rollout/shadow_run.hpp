// Shadow traffic's run (docs/rollouts.md, "Shadow traffic"): a request the
// alias stage chose to mirror keeps a copy of its real answer (CopySink)
// and its body for the shadow model; once the real answer is done, the
// body goes to one of the shadow model's backends on a connection of its
// own, its answer is read whole and discarded, and the pair is compared.
// It starts after the real answer ended and holds a place of the alias's
// shadow max_concurrency: it never delays or fails the real answer.
#pragma once

#include <boost/json/object.hpp>

#include "gateway/pipeline/request_context.hpp"
#include "gateway/stages/rollout/copy_sink.hpp"
#include "gateway/stages/rollout/rollout_book.hpp"

namespace arbiter {

// What a mirrored request keeps from the alias stage to its end.
struct ShadowCapture {
  ShadowCapture(RolloutBook::ShadowPermit p, boost::json::object b, bool deterministic_answer, ResponseSink& client)
      : permit(std::move(p)), body(std::move(b)), deterministic(deterministic_answer), copy(client) {}

  RolloutBook::ShadowPermit permit;
  boost::json::object body;  // the request as sent, its model the shadow's
  bool deterministic;        // temperature 0 or a seed: the texts should match
  CopySink copy;             // in front of the client's sink: the real answer
};

// After the real answer: the shadow request, detached on the request's
// executor (it holds what it needs: the permit, the body, the backend).
void launch_shadow(const RequestContext& ctx, ShadowCapture& capture, RolloutBook& book);

}  // namespace arbiter
