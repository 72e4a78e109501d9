#include "support/harness.hpp"

#include <exception>

#include <gtest/gtest.h>

#include "support/http_client.hpp"

namespace arbiter::test {

Harness::Harness(GatewayConfig config) : upstream_(2) {
  config.backend_ports.push_back(upstream_.port());
  gateway_ = std::make_unique<GatewayProcess>(config.to_yaml(), Millis(20'000), config.fd_limit);
}

Harness::~Harness() {
  // An exception in flight fails the test too, though gtest records it later.
  if (::testing::Test::HasFailure() || std::uncaught_exceptions() > 0) {
    std::fprintf(stderr, "%s\n%s", describe_output(*gateway_).c_str(), upstream_.describe().c_str());
  }
}

std::optional<double> Harness::metric(const std::string& name, const Labels& labels) {
  const auto res = http_get(gateway_->admin_port(), "/metrics");
  if (res.status != 200) return std::nullopt;
  return metric_value(res.body, name, labels);
}

std::optional<double> Harness::wait_for_metric(const std::string& name, double value, Millis timeout,
                                               const Labels& labels) {
  return gateway_->wait_for_metric(name, [value](double v) { return v == value; }, timeout, labels);
}

std::string describe_output(const GatewayProcess& gateway, std::size_t max_bytes) {
  auto tail = [max_bytes](std::string s) {
    return s.size() > max_bytes ? "..." + s.substr(s.size() - max_bytes) : s;
  };
  return "---- gateway stdout ----\n" + tail(gateway.stdout_text()) +
         "\n---- gateway stderr ----\n" + tail(gateway.stderr_text()) + "\n------------------------";
}

}  // namespace arbiter::test
