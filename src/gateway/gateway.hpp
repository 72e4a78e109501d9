// The gateway's request handler: routes admin endpoints and runs the
// request lifecycle for the OpenAI routes (auth, parse, classify, cap, pick a
// backend, relay, account). Holds the immutable config and the shared state.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <unordered_map>

#include "core/classifier.hpp"
#include "core/config.hpp"
#include "core/tenants.hpp"
#include "observability/access_log.hpp"
#include "gateway/backend_monitor.hpp"
#include "gateway/dispatcher.hpp"
#include "gateway/gateway_metrics.hpp"
#include "gateway/model_pool.hpp"
#include "gateway/upstream_relay.hpp"
#include "http/server.hpp"

namespace arbiter {

class Gateway {
 public:
  // `timer_executor` runs the scheduler's deadline timer.
  Gateway(Config config, std::size_t io_threads, net::any_io_executor timer_executor);
  ~Gateway();

  Task<void> handle(HttpRequest& req, ClientConnection& conn);

  // /readyz answers 200 only while ready (listener up, not draining).
  void set_ready(bool ready) { ready_ = ready; }
  const Config& config() const { return config_; }
  GatewayMetrics& metrics() { return metrics_; }

 private:
  struct Admission;
  using Headers = std::vector<std::pair<std::string, std::string>>;

  Task<void> handle_inference(Route route, HttpRequest& req, ClientConnection& conn);
  // Runs an admitted request on its slot until it ends: several upstream
  // runs when it is preempted and resumed from its checkpoint. Fills the
  // record's backend, queue time and preemption count.
  Task<RelayOutcome> run_upstream(Route route, Admission& admission, Dispatcher::Slot& slot,
                                  HttpRequest& req, ClientConnection& conn, AccessRecord& rec,
                                  Headers& headers);
  Task<void> send_json(ClientConnection& conn, http::status status, std::string body,
                       std::string_view content_type = "application/json");
  std::string models_body() const;
  // Copies the scheduler's gauges and counters into the registry.
  void refresh_scheduler_metrics();
  void refresh_monitor_metrics();
  void start_monitor(net::any_io_executor executor);

  // A (model, class) pair's latency series, found on first use and kept: a
  // labelled lookup per request otherwise. Indexed pool * classes + class.
  struct ClassSeries {
    std::atomic<metrics::Histogram*> duration{nullptr};
    std::atomic<metrics::Histogram*> first_byte{nullptr};
  };

  const Config config_;
  TenantDirectory tenants_;
  Classifier classifier_;
  GatewayMetrics metrics_;
  AccessLog access_log_;
  std::vector<std::unique_ptr<ModelPool>> pools_;             // in config order (= PoolId)
  // Model name -> its pools (pools_ indexes): one, or one per class list
  // when its backends name classes (see pool_for()).
  std::unordered_map<std::string, std::vector<std::size_t>> pool_index_;
  // The pool of `pools` that serves class `cls`: the one naming it, else the
  // one without classes (config validation makes sure there is one).
  std::size_t pool_for(const std::vector<std::size_t>& pools, std::size_t cls) const;
  std::unique_ptr<ClassSeries[]> class_series_;               // pools x classes
  // A (model, class, tenant)'s token counters (prompt, completion), found on
  // first use and kept. Indexed (pool * classes + class) * (tenants + 1) + tenant.
  struct TokenSeries {
    std::atomic<metrics::Counter*> prompt{nullptr};
    std::atomic<metrics::Counter*> completion{nullptr};
  };
  std::unique_ptr<TokenSeries[]> token_series_;
  std::unique_ptr<Dispatcher> dispatcher_;                    // queues and the scheduler
  std::unique_ptr<BackendMonitor> monitor_;                   // engine signals; null if disabled
  std::atomic<bool> ready_{false};
};

}  // namespace arbiter
