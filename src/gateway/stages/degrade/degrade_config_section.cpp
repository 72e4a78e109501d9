#include "gateway/stages/degrade/degrade_config_section.hpp"

namespace arbiter {
namespace {

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

ConfigSection degradation_section() {
  return flat_section<overload::DegradationConfig, &Config::degradation, degradation_keys, check_degradation>(
      "degradation");
}

}  // namespace arbiter
