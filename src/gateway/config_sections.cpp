// The features' config sections, one line each (gateway/config_section.hpp).
#include "gateway/config_section.hpp"
#include "gateway/batch/batch_config_section.hpp"
#include "gateway/cors_section.hpp"
#include "gateway/observers/tracing/tracing_config_section.hpp"
#include "gateway/resilience/resilience_config_section.hpp"
#include "gateway/stages/breaker/breaker_config_section.hpp"
#include "gateway/stages/cache/cache_config_section.hpp"
#include "gateway/stages/degrade/degrade_config_section.hpp"
#include "gateway/stages/quota/quota_config_section.hpp"
#include "gateway/store/store_config_section.hpp"

namespace arbiter {

std::span<const ConfigSection> feature_sections() {
  static const ConfigSection kSections[] = {
      quota_store_section(),        // stages/quota
      traffic_breaker_section(),    // stages/quota
      outlier_detection_section(),  // resilience
      retries_section(),            // resilience
      health_probes_section(),      // resilience
      model_breaker_section(),      // stages/breaker
      degradation_section(),        // stages/degrade
      cache_section(),              // stages/cache
      cors_section(),               // cors
      store_section(),              // store
      batches_section(),            // batch
      tracing_section(),            // observers/tracing
  };
  return kSections;
}

}  // namespace arbiter
