// A lower bound on the share of a scenario's requests that fail under any
// schedule (DECISIONS.md D9: a target no schedule can reach is replaced by
// the best one can): `arbiter-bench bound`. Failed as the overload table
// counts it: rejected, dropped, timed out or unfinished, over the requests
// not superseded.
//
// The engines as a fluid: each delivers one engine-second a second, and a
// request needs at least its cost of it (capacity_cost: its prefill with
// every shared prefix already cached, and per generated token a decode
// sequence's share, the attention over its context and the step's fixed
// cost split over the most sequences a step holds; the cheaper of the
// model's and its variant's profiles). A request whose client gives up
// (patience) or whose deadline passes must have all of it between its
// arrival and that end. For any interval of time, the requests whose whole
// window lies inside it can complete only as many as fit its capacity,
// cheapest first; over disjoint intervals those shortfalls add up. The bound
// is the most they add up to over intervals on a grid (a DP over the grid's
// points). Optimistic in the schedule's favour everywhere (perfect batching,
// no queueing, caches always hit), so no real schedule does better; it can
// be far from what one can do.
//
// Goodput: a good request (bench/results.cpp: whole, on the model's own
// engines, within its deadline and every SLO its class sets) must have its
// prefill within its TTFT SLO and all of it within its E2E SLO, or its TTFT
// SLO plus its TPOT SLO per later token: each is a condition of its being
// good, and the bound loses the more good answers of the two shortfalls.
//
// A request superseded whatever the schedule (a newer one with its key
// arrives before it could produce its tokens even alone on an engine, one
// step a token) leaves the denominator; one with a successor otherwise
// never counts as failed (the schedule may let it be superseded).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "bench/request_spec.hpp"
#include "bench/scenario.hpp"

namespace arbiter::bench {

struct BoundRequest {
  double arrival = 0;  // seconds
  double end = 0;      // its work done by then, or it fails
  double cost_s = 0;   // engine-seconds it needs at least
};

// The most requests of `requests` that must fail on `engines` engine-seconds
// a second: the sum of each chosen interval's shortfall, over disjoint
// intervals [k step_s, l step_s] at most max_len_s long. Requests with an
// empty window (end <= arrival) fail, each.
uint64_t min_failures(std::span<const BoundRequest> requests, double engines, double step_s, double max_len_s);

// Engine-seconds a request needs at least on engines of `cost`
// (engine/profile.hpp) running at most `max_seqs` sequences a step;
// `output_tokens` generated.
double capacity_cost(const RequestSpec& spec, uint32_t output_tokens, const engine::CostModel& cost,
                     uint32_t max_seqs);

struct FailureBound {
  uint64_t generated = 0;
  uint64_t superseded = 0;   // superseded whatever the schedule
  uint64_t superseded_cut = 0;  // the same when answers may be cut to a token (a cut one ends sooner)
  uint64_t failed = 0;       // whole answers: at least this many fail
  uint64_t failed_cut = 0;   // every answer cut to its first token: at least this many fail
  // Whole answers within their class's SLOs and deadline on the model's own
  // engines (goodput's requests): at most this many.
  uint64_t good = 0;
  double share() const { return denominator() ? static_cast<double>(failed) / denominator() : 0; }
  double share_cut() const {
    const uint64_t d = generated - superseded_cut;
    return d ? static_cast<double>(failed_cut) / d : 0;
  }
  uint64_t denominator() const { return generated - superseded; }
};

// The bound for `scenario`'s workload drawn with `seed`.
FailureBound failure_bound(const Scenario& scenario, uint64_t seed, double step_s = 5, double max_len_s = 120);

}  // namespace arbiter::bench
