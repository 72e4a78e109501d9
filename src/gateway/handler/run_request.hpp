// What each upstream run of a request sends (DispatchHandler::run_upstream):
// its x-request-id, its body (run_body.hpp) and the client's end-to-end
// headers. The first run goes under the request's own id; a retry or a run
// resumed after a preemption under "<id>-2", "<id>-3"..., because an engine
// that keys its requests by x-request-id (vLLM with
// --enable-request-id-headers, before vllm#27987) refuses an id still running
// there with 400, and an aborted run may still be when the next one arrives.
// vLLM's own `request_id` body field keys the request the same way: a later
// run carries the body's id with the same suffix.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/config.hpp"
#include "core/request_parser.hpp"
#include "gateway/handler/run_body.hpp"
#include "http/server_request.hpp"

namespace arbiter {

// The x-request-id of the run after `earlier_runs` others.
std::string upstream_run_id(std::string_view request_id, uint32_t earlier_runs);

// Whether a run on `backend` asks the engine for a stream's usage (and its
// relay then keeps the usage chunk from the client, core/stream_usage.hpp):
// the client streams without asking for it.
bool asks_usage(const RequestInfo& info, const BackendConfig& backend);

class RunRequestBuilder {
 public:
  // `parsed`, `client` and `request_id` outlive the builder, and the builder
  // every request it built.
  RunRequestBuilder(ParsedRequest& parsed, const ServerRequest& client, std::string_view request_id, Route route);

  // The request of the run after `earlier_runs` others on `backend` (whose
  // Host header is `host`). `body`: what the run adds to the body; its
  // request_id and priority_engine are the builder's to fill.
  UpstreamRequest build(std::string_view host, const BackendConfig& backend, uint32_t earlier_runs,
                        RunBodyOptions body);

  // The traceparent the next runs send (a traced request's attempt span,
  // docs/tracing.md) instead of the client's; `value` outlives them.
  void set_traceparent(std::string_view value);

  // The client has a byte of the answer and no run sends the body again:
  // a serialised one is freed.
  void release_body() { std::string().swap(rewritten_); }

 private:
  ParsedRequest& parsed_;
  const ServerRequest& client_;
  std::string_view request_id_;
  Route route_;
  ForwardedHeaders forwarded_;  // views into the client's request
  std::string run_id_;          // the last run's x-request-id
  std::string rewritten_;       // the last run's body, when serialised from the document
  // The body's request_id: read from the document at the first later run
  // (not before: the document is parsed only for the paths that rewrite it).
  std::optional<std::string> body_request_id_;
  bool body_request_id_read_ = false;
};

}  // namespace arbiter
