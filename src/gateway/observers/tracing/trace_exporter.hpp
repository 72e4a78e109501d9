// Where a traced request's spans go (docs/tracing.md): a bounded queue
// that request threads append to under a mutex held for the copy, and a
// loop on the gateway's timer strand that sends what is queued, every
// `tracing.flush_ms` (sooner when 512 spans wait), to the OTLP/HTTP
// receiver as one JSON export request. Off the request path: a slow or
// absent receiver costs requests nothing; past `max_queued_spans` spans
// are dropped and counted.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "core/config.hpp"
#include "core/tracing/span.hpp"
#include "gateway/periodic.hpp"
#include "http/outbound_connection.hpp"
#include "observability/metrics_registry.hpp"

namespace arbiter {

class TraceExporter {
 public:
  // `config.endpoint` must be set (checked by the config's reader).
  TraceExporter(const TracingConfig& config, net::any_io_executor executor, metrics::Registry& registry);
  ~TraceExporter();

  void start();
  void stop();
  // At a drain: the loop stops and what is queued is sent, within `deadline`.
  Task<void> drain(std::chrono::milliseconds deadline);

  // A request's spans, queued (any thread; never blocks on the receiver).
  void add(std::vector<tracing::Span> spans);

 private:
  Task<void> flush();
  bool flushing_ = false;  // a flush is under way (on the executor)

  const TracingConfig config_;
  std::string host_;
  uint16_t port_ = 0;
  std::string target_;
  net::any_io_executor executor_;
  std::shared_ptr<OutboundConnection> connection_;
  Periodic loop_;
  std::mutex mu_;
  std::vector<tracing::Span> queue_;  // under mu_
  metrics::Counter& exported_;
  metrics::Counter& dropped_;
  metrics::Counter& failures_;
};

}  // namespace arbiter
