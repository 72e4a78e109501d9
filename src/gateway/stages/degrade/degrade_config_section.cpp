#include "gateway/stages/degrade/degrade_config_section.hpp"

namespace arbiter {
namespace {

// Thresholds rising, a margin below the first; some weight. (Without
// engine signals there is no load to read: the stage stays normal.)
void check_degradation(YamlReader& r, std::string_view section, const Config& c) {
  const overload::DegradationConfig& d = c.degradation;
  if (auto why = overload::invalid(d)) r.error(std::string(section), std::string(*why));
  if (d.busy + d.kv + d.queue + d.cache_miss <= 0) r.error(std::string(section), "needs a weight above 0");
}

}  // namespace

ConfigSection degradation_section() {
  return flat_section<overload::DegradationConfig, &Config::degradation, degradation_keys, check_degradation>(
      "degradation");
}

}  // namespace arbiter
