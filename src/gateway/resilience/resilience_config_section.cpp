#include "gateway/resilience/resilience_config_section.hpp"

#include "yaml/setting_rows.hpp"

namespace arbiter {
namespace {

using namespace setting_rows;

using OD = resilience::OutlierDetectionConfig;
constexpr SettingKey<OD> kOutlierKeys[] = {
    {"enabled", "true or false", read_bool<OD, &OD::enabled>, write_bool<OD, &OD::enabled>},
    {"consecutive_failures", "integer in [0, 1000] (0: rule off)", read_integer<OD, &OD::consecutive_failures, 0, 1000>,
     write_integer<OD, &OD::consecutive_failures>},
    {"failure_rate", "number in [0.01, 2] (above 1: rule off)", read_number<OD, &OD::failure_rate, 0.01, 2.0>,
     write_number<OD, &OD::failure_rate>},
    {"min_requests", "integer in [1, 100000]", read_integer<OD, &OD::min_requests, 1, 100'000>,
     write_integer<OD, &OD::min_requests>},
    {"window_ms", "milliseconds in [100, 3600000]", read_ms<OD, &OD::window, 100, 3'600'000>,
     write_ms<OD, &OD::window>},
    {"base_ejection_ms", "milliseconds in [1, 3600000]", read_ms<OD, &OD::base_ejection, 1, 3'600'000>,
     write_ms<OD, &OD::base_ejection>},
    {"max_ejection_ms", "milliseconds in [1, 86400000]", read_ms<OD, &OD::max_ejection, 1, kDayMs>,
     write_ms<OD, &OD::max_ejection>},
    {"max_ejected_share", "number in [0, 1]", read_number<OD, &OD::max_ejected_share, 0.0, 1.0>,
     write_number<OD, &OD::max_ejected_share>},
    {"slow_start_ms", "milliseconds in [0, 3600000]", read_ms<OD, &OD::slow_start, 0, 3'600'000>,
     write_ms<OD, &OD::slow_start>},
    {"max_retry_after_ms", "milliseconds in [0, 3600000]", read_ms<OD, &OD::max_retry_after, 0, 3'600'000>,
     write_ms<OD, &OD::max_retry_after>},
};

using RT = resilience::RetryConfig;
constexpr SettingKey<RT> kRetryKeys[] = {
    {"max_retries", "integer in [0, 10]", read_integer<RT, &RT::max_retries, 0, 10>,
     write_integer<RT, &RT::max_retries>},
    {"budget", "number in [0, 1]", read_number<RT, &RT::budget, 0.0, 1.0>, write_number<RT, &RT::budget>},
    {"min_retries", "integer in [0, 100000]", read_integer<RT, &RT::min_retries, 0, 100'000>,
     write_integer<RT, &RT::min_retries>},
    {"window_ms", "milliseconds in [100, 3600000]", read_ms<RT, &RT::window, 100, 3'600'000>,
     write_ms<RT, &RT::window>},
    {"backoff_base_ms", "milliseconds in [0, 60000]", read_ms<RT, &RT::backoff_base, 0, 60'000>,
     write_ms<RT, &RT::backoff_base>},
    {"backoff_max_ms", "milliseconds in [0, 60000]", read_ms<RT, &RT::backoff_max, 0, 60'000>,
     write_ms<RT, &RT::backoff_max>},
};

using HP = resilience::HealthProbesConfig;
constexpr SettingKey<HP> kProbeKeys[] = {
    {"enabled", "true or false", read_bool<HP, &HP::enabled>, write_bool<HP, &HP::enabled>},
    {"interval_ms", "milliseconds in [100, 86400000]", read_ms<HP, &HP::interval, 100, kDayMs>,
     write_ms<HP, &HP::interval>},
    {"timeout_ms", "milliseconds in [10, 600000]", read_ms<HP, &HP::timeout, 10, 600'000>, write_ms<HP, &HP::timeout>},
};

void check_retries(YamlReader& r, std::string_view section, const Config& c) {
  if (c.retries.backoff_max < c.retries.backoff_base) {
    r.error(std::string(section) + ".backoff_max_ms", "must be >= backoff_base_ms");
  }
}

}  // namespace

std::span<const SettingKey<resilience::OutlierDetectionConfig>> outlier_detection_keys() { return kOutlierKeys; }
std::span<const SettingKey<resilience::RetryConfig>> retries_keys() { return kRetryKeys; }
std::span<const SettingKey<resilience::HealthProbesConfig>> health_probes_keys() { return kProbeKeys; }

ConfigSection outlier_detection_section() {
  return flat_section<resilience::OutlierDetectionConfig, &Config::outlier_detection, outlier_detection_keys>(
      "outlier_detection");
}

ConfigSection retries_section() {
  return flat_section<resilience::RetryConfig, &Config::retries, retries_keys, check_retries>("retries");
}

ConfigSection health_probes_section() {
  return flat_section<resilience::HealthProbesConfig, &Config::health_probes, health_probes_keys>("health_probes");
}

}  // namespace arbiter
