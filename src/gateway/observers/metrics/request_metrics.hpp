// Completion observer: the per-request metrics (requests by status, in
// flight, latency histograms, queue waits and their reasons, tokens,
// cancels, upstream errors and retries, resumes). Labelled series of an
// admitted request are found on first use and kept per (pool, class[,
// tenant]): no labelled lookup per request after that.
#pragma once

#include <atomic>
#include <memory>

#include "core/config.hpp"
#include "gateway/gateway_metrics.hpp"
#include "gateway/pipeline/stage.hpp"

namespace arbiter {

class RequestMetrics final : public CompletionObserver {
 public:
  RequestMetrics(const Config& config, GatewayMetrics& metrics);
  void on_start(RequestContext& ctx) override;
  void on_complete(const RequestContext& ctx) override;

 private:
  // A (pool, class)'s latency series. Indexed pool * classes + class.
  struct ClassSeries {
    std::atomic<metrics::Histogram*> duration{nullptr};
    std::atomic<metrics::Histogram*> first_byte{nullptr};
  };
  // A (pool, class, tenant)'s token counters. Indexed
  // (pool * classes + class) * (tenants + 1) + tenant.
  struct TokenSeries {
    std::atomic<metrics::Counter*> prompt{nullptr};
    std::atomic<metrics::Counter*> completion{nullptr};
  };
  metrics::Histogram& class_histogram(const RequestContext& ctx, std::atomic<metrics::Histogram*> ClassSeries::*member,
                                      metrics::Family<metrics::Histogram>& family);

  const Config& config_;
  GatewayMetrics& metrics_;
  std::unique_ptr<ClassSeries[]> class_series_;
  std::unique_ptr<TokenSeries[]> token_series_;
};

}  // namespace arbiter
