// Requests refused before the pipeline saw them: by the HTTP server
// (malformed or smuggling framing, 413, 431, a connection over the cap) and
// by the router (no route 404, wrong method 405). Without this an attack
// on the edge left nothing to alert on. Each is counted twice: in
// arbiter_http_refusals_total by reason and status, and in
// arbiter_requests_total with model and class `none` and tenant
// `anonymous`, as the pipeline counts a request it refused before knowing
// them. Each gets an access-log line too, at most kLinesPerSecond a second
// (bursts of kLineBurst): a flood of bad requests must not become a flood
// of log lines; the lines left out are counted
// (arbiter_http_refusals_unlogged_total).
#pragma once

#include <mutex>

#include "core/quota/gcra.hpp"
#include "gateway/gateway_metrics.hpp"
#include "http/server.hpp"
#include "observability/batched_line_writer.hpp"

namespace arbiter {

class RefusalLog {
 public:
  static constexpr double kLinesPerSecond = 20;
  static constexpr double kLineBurst = 100;

  // `log`: the access log, or null when it is off.
  RefusalLog(GatewayMetrics& metrics, BatchedLineWriter* log);

  // Any thread.
  void record(const HttpRefusal& refusal);

 private:
  bool line_allowed();

  GatewayMetrics& metrics_;
  BatchedLineWriter* log_;
  std::mutex mu_;
  quota::Gcra lines_;  // guarded by mu_
};

}  // namespace arbiter
