#include "gateway/observers/tracing/trace_exporter.hpp"

#include <boost/url/parse.hpp>

#include "observability/event_log.hpp"

namespace arbiter {

namespace {

constexpr std::size_t kBatch = 512;  // spans a export request at most
constexpr std::chrono::milliseconds kTimeout{5'000};

}  // namespace

TraceExporter::TraceExporter(const TracingConfig& config, net::any_io_executor executor, metrics::Registry& r)
    : config_(config),
      executor_(std::move(executor)),
      exported_(r.counter("arbiter_trace_spans_total", "Spans of traced requests, by what became of them", {"result"})
                    .with({"exported"})),
      dropped_(r.counter("arbiter_trace_spans_total", "Spans of traced requests, by what became of them", {"result"})
                   .with({"dropped"})),
      failures_(r.counter("arbiter_trace_export_failures_total",
                          "Export requests the OTLP receiver failed or refused (their spans dropped)", {})
                    .with({})) {
  const auto url = boost::urls::parse_absolute_uri(config_.endpoint);
  host_ = std::string(url->host());
  port_ = url->has_port() ? url->port_number() : 80;
  target_ = url->encoded_target().empty() ? std::string("/v1/traces") : std::string(url->encoded_target());
  connection_ = std::make_shared<OutboundConnection>(executor_, host_, port_, TlsContext{});
}

TraceExporter::~TraceExporter() { loop_.stop(); }

void TraceExporter::start() {
  loop_.start(executor_, config_.flush, [this]() -> Task<void> { co_await flush(); });
}

void TraceExporter::stop() { loop_.stop(); }

Task<void> TraceExporter::drain(std::chrono::milliseconds deadline) {
  loop_.stop();
  co_await net::post(executor_, net::use_awaitable);  // on the loop's strand from here
  const auto until = std::chrono::steady_clock::now() + deadline;
  net::steady_timer timer(executor_);
  while (flushing_ && std::chrono::steady_clock::now() < until) {  // the loop's last round
    timer.expires_after(std::chrono::milliseconds(10));
    co_await timer.async_wait(kAsTuple);
  }
  if (!flushing_) co_await flush();
}

void TraceExporter::add(std::vector<tracing::Span> spans) {
  std::lock_guard lock(mu_);
  const std::size_t room = config_.max_queued_spans > queue_.size() ? config_.max_queued_spans - queue_.size() : 0;
  const std::size_t taken = std::min(room, spans.size());
  if (taken < spans.size()) dropped_.inc(spans.size() - taken);
  for (std::size_t i = 0; i < taken; ++i) queue_.push_back(std::move(spans[i]));
}

Task<void> TraceExporter::flush() {
  flushing_ = true;
  struct Done {
    bool& flag;
    ~Done() { flag = false; }
  } done{flushing_};
  for (;;) {
    std::vector<tracing::Span> batch;
    {
      std::lock_guard lock(mu_);
      if (queue_.empty()) co_return;
      const std::size_t n = std::min(kBatch, queue_.size());
      batch.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.begin() + n));
      queue_.erase(queue_.begin(), queue_.begin() + n);
    }
    http::request<http::string_body> req{http::verb::post, target_, 11};
    req.set(http::field::host, host_ + ":" + std::to_string(port_));
    req.set(http::field::content_type, "application/json");
    req.body() = tracing::otlp_json(batch, config_.service_name);
    req.prepare_payload();
    const OutboundResponse res = co_await connection_->request(req, kTimeout, 64 << 10);
    const unsigned status = res.failure == OutboundFailure::kNone ? res.response.result_int() : 0;
    if (status / 100 != 2) {
      failures_.inc();
      dropped_.inc(batch.size());
      log_event(EventLevel::kWarn, "trace_export_failed",
                {{"endpoint", config_.endpoint},
                 {"status", status},
                 {"failure", outbound_failure_name(res.failure)},
                 {"spans", batch.size()}});
      co_return;  // the next round tries again with what has queued since
    }
    exported_.inc(batch.size());
  }
}

}  // namespace arbiter
