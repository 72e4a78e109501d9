// Everything one request accumulates on its way through the pipeline
// (gateway/pipeline/pipeline.hpp): what arrived, what each admission stage
// found, where it ran and how it ended, and its access-log line. One per
// request, on the pipeline's coroutine frame; stages and observers read and
// write it, nothing else holds request state.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/client_hints.hpp"
#include "core/config.hpp"
#include "core/request_parser.hpp"
#include "core/resume.hpp"
#include "gateway/pipeline/request_slots.hpp"
#include "gateway/relay/upstream_relay.hpp"
#include "gateway/runtime.hpp"
#include "core/resilience/model_breaker.hpp"
#include "http/client_connection.hpp"
#include "http/server.hpp"
#include "observability/access_log.hpp"

namespace arbiter {

class CompletionObserver;

// The model and class label of a request refused before they were known
// (by the pipeline's first stages, or before the pipeline: the refusal
// log): bounded cardinality, a client's made-up model name never becomes a
// label.
inline constexpr std::string_view kNoLabel = "none";

struct RequestContext {
  using Clock = std::chrono::steady_clock;
  using Headers = std::vector<std::pair<std::string, std::string>>;

  RequestContext(Route route, HttpRequest& req, RequestClient& conn);

  // A duration in milliseconds, as the access log and metrics record them.
  static double millis(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

  // The configuration it started with (Pipeline::run), kept to its end:
  // `tenant` and `model_pools` point into it.
  std::shared_ptr<const Runtime> runtime;

  // As it arrived.
  Route route;
  HttpRequest& req;
  RequestClient& conn;  // the client: disconnects, bytes and first-byte time
  ResponseSink* sink;      // where answers go: &conn unless a stage tees it
  Clock::time_point started;

  // Admission, filled by the stages in order (gateway/stages/).
  const TenantConfig* tenant = nullptr;                 // auth: null when anonymous
  ParsedRequest parsed;                                 // parse
  // Where it goes: its model's pools, its class and the pool of the one
  // that serves the other (class_pool). The one place the three are set:
  // route, a breaker's fallback model and a traffic breaker's lower class
  // all go through it; it keeps the access log's class label in step.
  void route_to(const Config& config, const std::vector<std::size_t>& model_pools, std::size_t klass);
  std::size_t pool() const { return pool_; }
  const std::vector<std::size_t>* model_pools = nullptr;  // route_to: the model's pools
  std::size_t cls = 0;                                  // route_to: its class
  std::vector<uint64_t> prefix;                         // route: prompt prefix blocks (affinity)
  // route: the LoRA adapter it names (Config::adapter_number), 0: the base
  // model; route_to to another model (a breaker's fallback, staged
  // degradation's variant) drops it.
  uint16_t adapter = 0;
  ClientHints hints;                                    // hints: x-priority, x-slo-ttft-ms as sent
  // breaker: where the requested model's breaker sent it, for its outcome
  // to be recorded (BreakerObserver); none without a breaker.
  std::optional<resilience::BreakerRoute> breaker;
  std::size_t breaker_model = 0;                        // breaker: ModelBreakers index of the requested model
  ResumeMethod resume = ResumeMethod::kNone;            // caps: how a preempted run continues
  std::string supersede_key;                            // supersede: empty when none
  // What features keep on the request (quota: its reservation).
  RequestSlots slots;
  bool admitted = false;                                // every admission stage let it through
  std::string_view answered_by;                         // the stage that answered it itself (Verdict::answered)
  std::string_view refused_by;                          // the stage that refused it (Verdict::refuse)

  // Dispatch and relay.
  // The relay's first write of a stream's head: tells the observers, once
  // (CompletionObserver::on_answer_started).
  void answer_started();
  RelayOutcome outcome;                     // how it ended (error: a gateway-made answer)
  // The body was freed before the end (DispatchHandler::release_body): it is
  // no longer counted in arbiter_request_body_bytes.
  bool body_released = false;
  std::optional<double> dispatch_queue_ms;  // the first dispatch's queue wait
  // Why its latest run went to its backend (the audit trail's dispatched
  // row): the scheduler's placement, the prompt blocks the backend held,
  // and the lending pool's name when it ran on a slot borrowed from
  // another (a copy: the slot's config may be a newer generation's, gone
  // with the slot).
  struct Placement {
    std::string_view reason;  // sched::placement_name: static text
    uint16_t prefix_blocks = 0;
    std::string borrowed_from;
  } placement;
  // The decisions made along the way that the audit trail records as rows
  // of their own (docs/audit.md): (kind, detail) for each preemption (who
  // took the slot), failover to another backend, inheritance of a running
  // generation. Empty for nearly every request.
  std::vector<std::pair<std::string_view, std::string>> decisions;
  // What it is billed (RelayOutcome::billed): the ledger's, the quota's and
  // the scheduler's one figure, settled once when its runs end
  // (DispatchHandler::settle; a last write that fails after cannot change
  // it). Nothing before it reached an engine.
  std::optional<RelayOutcome::Billed> bill;
  // The figure its outcome gives as it stands (what settles `bill`).
  std::optional<RelayOutcome::Billed> billed() const;

  // The answer's extra headers (x-request-id, x-arbiter-*) and the access-log line.
  Headers response_headers;
  AccessRecord rec;

  // The pipeline's observers (Pipeline::run), for answer_started().
  const std::vector<std::unique_ptr<CompletionObserver>>* observers = nullptr;
  bool answer_began = false;  // answer_started() ran (BreakerObserver recorded it then)

 private:
  std::size_t pool_ = 0;  // route_to
};

}  // namespace arbiter
