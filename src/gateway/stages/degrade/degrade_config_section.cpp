#include "gateway/stages/degrade/degrade_config_section.hpp"

#include "yaml/setting_rows.hpp"

namespace arbiter {
namespace {

using namespace setting_rows;

using D = overload::DegradationConfig;
constexpr SettingKey<D> kDegradationKeys[] = {
    {"enabled", "true or false", read_bool<D, &D::enabled>, write_bool<D, &D::enabled>},
    {"weight_busy", "number in [0, 1]", read_number<D, &D::busy, 0.0, 1.0>, write_number<D, &D::busy>},
    {"weight_kv", "number in [0, 1]", read_number<D, &D::kv, 0.0, 1.0>, write_number<D, &D::kv>},
    {"weight_queue", "number in [0, 1]", read_number<D, &D::queue, 0.0, 1.0>, write_number<D, &D::queue>},
    {"weight_cache_miss", "number in [0, 1]", read_number<D, &D::cache_miss, 0.0, 1.0>,
     write_number<D, &D::cache_miss>},
    {"smoothing_ms", "milliseconds in [0, 600000]", read_ms<D, &D::smoothing, 0, 600'000>,
     write_ms<D, &D::smoothing>},
    {"elevated_at", "number in (0, 1]", read_number<D, &D::elevated_at, 0.0, 1.0>,
     write_number<D, &D::elevated_at>},
    {"high_at", "number in (0, 1]", read_number<D, &D::high_at, 0.0, 1.0>, write_number<D, &D::high_at>},
    {"shed_at", "number in (0, 1]", read_number<D, &D::shed_at, 0.0, 1.0>, write_number<D, &D::shed_at>},
    {"exit_margin", "number in [0, 1)", read_number<D, &D::exit_margin, 0.0, 1.0>, write_number<D, &D::exit_margin>},
    {"hold_ms", "milliseconds in [0, 3600000]", read_ms<D, &D::hold, 0, 3'600'000>, write_ms<D, &D::hold>},
    {"max_shed", "number in [0, 1]", read_number<D, &D::max_shed, 0.0, 1.0>, write_number<D, &D::max_shed>},
    {"cap_max_tokens", "integer in [1, 2147483647]", read_integer<D, &D::cap_max_tokens, 1, INT32_MAX>,
     write_integer<D, &D::cap_max_tokens>},
};

using A = overload::ClassActions;
constexpr SettingKey<A> kClassDegradeKeys[] = {
    {"protect", "true or false", read_bool<A, &A::protect>, write_bool<A, &A::protect>},
    {"cap_max_tokens", "integer in [0, 2147483647] (0: no cap)", read_integer<A, &A::cap_max_tokens, 0, INT32_MAX>,
     write_integer<A, &A::cap_max_tokens>},
    {"pause", "true or false", read_bool<A, &A::pause>, write_bool<A, &A::pause>},
    {"variant", "true or false", read_bool<A, &A::variant>, write_bool<A, &A::variant>},
    {"shed", "true or false", read_bool<A, &A::shed>, write_bool<A, &A::shed>},
};

// Thresholds rising, a margin below the first; some weight; engine signals
// on when degradation is (L is computed at the monitor's judgements).
void check_degradation(YamlReader& r, std::string_view section, const Config& c) {
  const overload::DegradationConfig& d = c.degradation;
  if (auto why = overload::invalid(d)) r.error(std::string(section), std::string(*why));
  if (d.busy + d.kv + d.queue + d.cache_miss <= 0) r.error(std::string(section), "needs a weight above 0");
  if (d.enabled && !c.engine_signals.enabled) {
    r.error(std::string(section) + ".enabled", "needs engine_signals.enabled: the load is read from the engines");
  }
}

}  // namespace

std::span<const SettingKey<overload::DegradationConfig>> degradation_keys() { return kDegradationKeys; }
std::span<const SettingKey<overload::ClassActions>> class_degrade_keys() { return kClassDegradeKeys; }

ConfigSection degradation_section() {
  return flat_section<overload::DegradationConfig, &Config::degradation, degradation_keys, check_degradation>(
      "degradation");
}

}  // namespace arbiter
