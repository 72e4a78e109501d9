// One fake upstream plus one gateway in front of it: what most integration
// tests start with. On a failing test the gateway's output is printed so
// the report shows what the gateway said.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "support/fake_upstream.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"
#include "support/metrics_text.hpp"

namespace arbiter::test {

class Harness {
 public:
  explicit Harness(GatewayConfig config = {});
  ~Harness();

  FakeUpstream& upstream() { return upstream_; }
  GatewayProcess& gateway() { return *gateway_; }
  uint16_t port() const { return gateway_->port(); }
  uint16_t admin_port() const { return gateway_->admin_port(); }  // /metrics, /admin/*

  // GET /metrics, then the named sample (summed over matching labels).
  std::optional<double> metric(const std::string& name, const Labels& labels = {});
  // Polls /metrics until the sample equals `value`; the last value seen.
  std::optional<double> wait_for_metric(const std::string& name, double value, Millis timeout,
                                        const Labels& labels = {});

 private:
  FakeUpstream upstream_;  // outlives the gateway: declared first
  std::unique_ptr<GatewayProcess> gateway_;
};

// The gateway's stdout and stderr, last `max_bytes` of each, for messages.
std::string describe_output(const GatewayProcess& gateway, std::size_t max_bytes = 4000);

}  // namespace arbiter::test
