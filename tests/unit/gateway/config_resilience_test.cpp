// The backend-failure sections (outlier_detection, retries, health_probes,
// model_breaker) and models' degraded/fallback: read, checked, printed back.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gateway/config_print.hpp"
#include "gateway/config_yaml.hpp"

namespace arbiter::config_resilience_test {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

std::string models(const std::string& m1_extra) {
  return R"(
models:
  - name: m1
)" + m1_extra + R"(
    backends: [{url: "http://127.0.0.1:8000"}]
  - name: m1-awq
    backends: [{url: "http://127.0.0.1:8001"}]
  - name: small
    backends: [{url: "http://127.0.0.1:8002"}]
)";
}

std::vector<std::string> errors_of(const std::string& yaml) {
  auto c = parse_config(yaml);
  return c ? std::vector<std::string>{} : c.error();
}

TEST(ConfigResilience, DefaultsAreTheDocumentedOnes) {
  auto c = parse_config(models(""));
  ASSERT_TRUE(c) << ::testing::PrintToString(c.error());
  EXPECT_TRUE(c->outlier_detection.enabled);
  EXPECT_EQ(c->outlier_detection.consecutive_failures, 5u);
  EXPECT_EQ(c->retries.max_retries, 2u);
  EXPECT_DOUBLE_EQ(c->retries.budget, 0.1);
  EXPECT_EQ(c->health_probes.interval, std::chrono::minutes(5));
  EXPECT_DOUBLE_EQ(c->model_breaker.isolate_at, 0.2);
  EXPECT_TRUE(c->models[0].degraded.empty());
}

TEST(ConfigResilience, VariantsAndSectionsAreReadAndPrintedBack) {
  const std::string yaml = models("    degraded: m1-awq\n    fallback: small") + R"(
outlier_detection: {consecutive_failures: 3, base_ejection_ms: 1000, slow_start_ms: 0}
retries: {max_retries: 1, budget: 0.2}
health_probes: {interval_ms: 60000}
model_breaker: {window_ms: 2000, min_requests: 5, degrade_at: 0.1, fallback_at: 0.2, isolate_at: 0.5}
)";
  auto c = parse_config(yaml);
  ASSERT_TRUE(c) << ::testing::PrintToString(c.error());
  EXPECT_EQ(c->models[0].degraded, "m1-awq");
  EXPECT_EQ(c->models[0].fallback, "small");
  EXPECT_EQ(c->outlier_detection.consecutive_failures, 3u);
  EXPECT_EQ(c->retries.max_retries, 1u);
  EXPECT_EQ(c->model_breaker.min_requests, 5u);
  // --print-config's text reads back to the same settings.
  auto again = parse_config(config_to_yaml(*c));
  ASSERT_TRUE(again) << ::testing::PrintToString(again.error());
  EXPECT_EQ(again->models[0].degraded, "m1-awq");
  EXPECT_EQ(again->models[0].fallback, "small");
  EXPECT_EQ(again->outlier_detection.base_ejection, std::chrono::seconds(1));
  EXPECT_DOUBLE_EQ(again->model_breaker.isolate_at, 0.5);
}

TEST(ConfigResilience, BadReferencesAndOrdersAreErrors) {
  EXPECT_THAT(errors_of(models("    degraded: m1")), Contains(HasSubstr("models[0].degraded: names the model itself")));
  EXPECT_THAT(errors_of(models("    fallback: nope")), Contains(HasSubstr("models[0].fallback: names no model: 'nope'")));
  EXPECT_THAT(errors_of(models("") + "model_breaker: {degrade_at: 0.3, fallback_at: 0.2}\n"),
              Contains(HasSubstr("degrade_at <= fallback_at <= isolate_at")));
  EXPECT_THAT(errors_of(models("") + "outlier_detection: {base_ejection_ms: 5000, max_ejection_ms: 10}\n"),
              Contains(HasSubstr("max_ejection_ms")));
  EXPECT_THAT(errors_of(models("") + "retries: {backoff_base_ms: 100, backoff_max_ms: 10}\n"),
              Contains(HasSubstr("backoff_max_ms")));
  EXPECT_THAT(errors_of(models("") + "retries: {max_retries: 11}\n"), Contains(HasSubstr("retries.max_retries")));
  EXPECT_THAT(errors_of(models("") + "retries: {retry_on: [500]}\n"), Contains(HasSubstr("retry_on")));
}

}  // namespace
}  // namespace arbiter::config_resilience_test
