// Every metric the gateway exports, declared in one place with stable names.
#pragma once

#include "gateway/metrics_registry.hpp"

namespace arbiter {

struct GatewayMetrics {
  metrics::Registry registry;

  // Requests answered, by the status the client got (499: client went away).
  metrics::Family<metrics::Counter>& requests = registry.counter(
      "arbiter_requests_total", "Requests answered, by model, class, tenant and status.",
      {"model", "class", "tenant", "status"});
  metrics::Gauge& in_flight =
      registry.gauge("arbiter_requests_in_flight", "Requests being handled right now.", {}).with({});
  metrics::Family<metrics::Histogram>& duration = registry.histogram(
      "arbiter_request_duration_seconds",
      "Time from request received to the last response byte written.", {"model", "class"});
  metrics::Family<metrics::Histogram>& first_byte = registry.histogram(
      "arbiter_time_to_first_byte_seconds",
      "Time from request received to the first response body byte written (for streams: the "
      "first event).",
      {"model", "class"});
  metrics::Family<metrics::Counter>& upstream_errors = registry.counter(
      "arbiter_upstream_errors_total",
      "Failed upstream exchanges by backend and kind (connect, timeout, reset, protocol, "
      "too_large).",
      {"backend", "kind"});
  metrics::Family<metrics::Counter>& cancelled = registry.counter(
      "arbiter_requests_cancelled_total",
      "Requests whose client went away before the answer was complete.", {"model", "class"});
  metrics::Family<metrics::Counter>& rewrites = registry.counter(
      "arbiter_max_tokens_capped_total", "Requests whose max_tokens the class cap rewrote.",
      {"class"});
  metrics::Family<metrics::Gauge>& backend_in_flight = registry.gauge(
      "arbiter_backend_in_flight", "Requests in flight per backend.", {"model", "backend"});
  metrics::Family<metrics::Counter>& upstream_retries = registry.counter(
      "arbiter_upstream_retries_total",
      "Requests resent on a new connection after a pooled one turned out closed.", {"backend"});
};

}  // namespace arbiter
