#include "gateway/stages/breaker/breaker_config_section.hpp"

#include "yaml/setting_rows.hpp"

namespace arbiter {
namespace {

using namespace setting_rows;

using MB = resilience::ModelBreakerSectionConfig;
constexpr SettingKey<MB> kModelBreakerKeys[] = {
    {"enabled", "true or false", read_bool<MB, &MB::enabled>, write_bool<MB, &MB::enabled>},
    {"window_ms", "milliseconds in [100, 3600000]", read_ms<MB, &MB::window, 100, 3'600'000>,
     write_ms<MB, &MB::window>},
    {"min_requests", "integer in [1, 100000]", read_integer<MB, &MB::min_requests, 1, 100'000>,
     write_integer<MB, &MB::min_requests>},
    {"degrade_at", "number in [0, 1]", read_number<MB, &MB::degrade_at, 0.0, 1.0>, write_number<MB, &MB::degrade_at>},
    {"fallback_at", "number in [0, 1]", read_number<MB, &MB::fallback_at, 0.0, 1.0>,
     write_number<MB, &MB::fallback_at>},
    {"isolate_at", "number in [0, 1]", read_number<MB, &MB::isolate_at, 0.0, 1.0>, write_number<MB, &MB::isolate_at>},
    {"base_open_ms", "milliseconds in [1, 3600000]", read_ms<MB, &MB::base_open, 1, 3'600'000>,
     write_ms<MB, &MB::base_open>},
    {"max_open_ms", "milliseconds in [1, 86400000]", read_ms<MB, &MB::max_open, 1, kDayMs>,
     write_ms<MB, &MB::max_open>},
    {"probe_requests", "integer in [1, 1000]", read_integer<MB, &MB::probe_requests, 1, 1000>,
     write_integer<MB, &MB::probe_requests>},
};

}  // namespace

std::span<const SettingKey<resilience::ModelBreakerSectionConfig>> model_breaker_keys() { return kModelBreakerKeys; }

ConfigSection model_breaker_section() {
  return flat_section<resilience::ModelBreakerSectionConfig, &Config::model_breaker, model_breaker_keys>(
      "model_breaker");
}

}  // namespace arbiter
