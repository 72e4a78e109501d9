#include "gateway/handler/run_request.hpp"

#include "http/head_scan.hpp"

namespace arbiter {

std::string upstream_run_id(std::string_view request_id, uint32_t earlier_runs) {
  if (earlier_runs == 0) return std::string(request_id);
  return std::string(request_id) + "-" + std::to_string(earlier_runs + 1);
}

bool asks_usage(const RequestInfo& info, const BackendConfig& backend) {
  // A Responses stream reports its usage in response.completed anyway.
  return info.stream && !info.include_usage && backend.stream_usage && info.route != Route::kResponses;
}

RunRequestBuilder::RunRequestBuilder(ParsedRequest& parsed, const ServerRequest& client, std::string_view request_id,
                                     Route route)
    : parsed_(parsed), client_(client), request_id_(request_id), route_(route) {
  client.end_to_end(forwarded_);
}

void RunRequestBuilder::set_traceparent(std::string_view value) {
  for (auto& [name, v] : forwarded_) {
    if (lower_equals(name, "traceparent")) {
      v = value;
      return;
    }
  }
  forwarded_.emplace_back("traceparent", value);
}

UpstreamRequest RunRequestBuilder::build(std::string_view host, const BackendConfig& backend, uint32_t earlier_runs,
                                         RunBodyOptions body) {
  // The first run goes under the request's own id: no copy of it.
  if (earlier_runs > 0) run_id_ = upstream_run_id(request_id_, earlier_runs);
  if (earlier_runs > 0 && !body_request_id_read_) {
    body_request_id_read_ = true;
    if (const auto* id = parsed_.body().if_contains("request_id"); id && id->is_string()) {
      body_request_id_.emplace(id->get_string());
    }
  }
  if (earlier_runs > 0 && body_request_id_) body.request_id = upstream_run_id(*body_request_id_, earlier_runs);
  if (backend.priority_scheduling) body.priority_engine = backend.engine;
  UpstreamRequest up{.target = route_path(route_),
                     .host = host,
                     .request_id = earlier_runs > 0 ? std::string_view(run_id_) : request_id_,
                     .accept = client_["accept"],
                     .body = {},
                     .authorization = backend.authorization,
                     .forwarded = forwarded_};
  build_run_body(parsed_, body, up, rewritten_);
  return up;
}

}  // namespace arbiter
