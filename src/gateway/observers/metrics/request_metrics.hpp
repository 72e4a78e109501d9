// Completion observer: the per-request metrics (requests by status, in
// flight, latency histograms, queue waits and their reasons, tokens by
// tenant and by team, cost by team, cancels, upstream errors and retries,
// resumes). Labelled series of an admitted request are found on first use
// and kept per (pool, class[, tenant]) or (pool, tenant): no labelled lookup
// per request after that.
#pragma once

#include <array>
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
  // One series' token counters, by kind: prompt, completion, cached.
  using TokenSeries = std::array<std::atomic<metrics::Counter*>, 3>;
  // A (pool, class, tenant)'s series: its tokens, its requests answered 200
  // (the usual status; others are looked up) and its queue waits. Indexed
  // (pool * classes + class) * (tenants + 1) + tenant.
  struct TenantSeries {
    TokenSeries tokens{};
    std::atomic<metrics::Counter*> ok{nullptr};
    std::atomic<metrics::Histogram*> queue_wait{nullptr};
  };
  // A (pool, tenant)'s team series: its team's tokens and cost on the
  // pool's model. Indexed pool * (tenants + 1) + tenant.
  struct TeamSeries {
    TokenSeries tokens{};
    std::atomic<metrics::RealCounter*> cost{nullptr};
  };
  metrics::Histogram& class_histogram(const RequestContext& ctx, std::atomic<metrics::Histogram*> ClassSeries::*member,
                                      metrics::Family<metrics::Histogram>& family);
  // Tokens and cost of an admitted request, into its tenant's and team's series.
  void count_usage(const RequestContext& ctx, TenantSeries& series);
  // The series of an admitted request's (pool, class, tenant).
  TenantSeries& tenant_series(const RequestContext& ctx);

  const Config& config_;
  GatewayMetrics& metrics_;
  std::unique_ptr<ClassSeries[]> class_series_;
  std::unique_ptr<TenantSeries[]> tenant_series_;
  std::unique_ptr<TeamSeries[]> team_series_;
};

}  // namespace arbiter
