#include "bench/scenario.hpp"

#include <algorithm>

namespace arbiter::bench {

std::vector<uint16_t> scheduler_classes(const Scenario& scenario) {
  std::vector<uint16_t> out(scenario.classes.size(), 0);
  uint16_t next = 0;
  for (std::size_t i = 0; i < scenario.classes.size(); ++i) {
    const std::string& joins = scenario.classes[i].scheduler_class;
    if (joins.empty()) {
      out[i] = next++;
      continue;
    }
    // The parser checked that an earlier entry with that name is a class of its own.
    for (std::size_t j = 0; j < i; ++j) {
      if (scenario.classes[j].scheduler_class.empty() && scenario.classes[j].name == joins) out[i] = out[j];
    }
  }
  return out;
}

std::vector<std::string> scheduler_class_names(const Scenario& scenario) {
  std::vector<std::string> out;
  for (const ClassSpec& c : scenario.classes) {
    if (c.scheduler_class.empty()) out.push_back(c.name);
  }
  return out;
}

std::vector<double> class_gap_bounds_s(const Scenario& scenario) {
  const std::vector<uint16_t> klass = scheduler_classes(scenario);
  std::vector<double> out(scheduler_class_names(scenario).size(), 0);
  for (std::size_t i = 0; i < scenario.classes.size(); ++i) {
    const SloSpec& slo = scenario.classes[i].slo;
    double bound = 0;
    if (slo.tpot_ms) {
      bound = *slo.tpot_ms / 1000;
    } else if (slo.e2e_ms && slo.ttft_ms && *slo.e2e_ms > *slo.ttft_ms) {
      bound = (*slo.e2e_ms - *slo.ttft_ms) / 1000 / std::max<uint32_t>(1, scenario.classes[i].traffic.max_tokens);
    }
    double& to = out[klass[i]];
    if (bound > 0) to = to > 0 ? std::min(to, bound) : bound;
  }
  return out;
}

bool serves_adapter(const LoraSpec& lora, uint32_t index, uint32_t count, uint16_t adapter) {
  if (adapter == 0 || lora.replicas == 0 || lora.replicas >= count) return true;
  // Adapter a on engines a-1, a, ... a+replicas-2 (mod count): spread evenly.
  const uint32_t first = (adapter - 1u) % count;
  return (index + count - first) % count < lora.replicas;
}

uint32_t PoolLayout::pool_of_engine(std::size_t e) const {
  return static_cast<uint32_t>(std::upper_bound(first.begin(), first.end(), e) - first.begin() - 1);
}

PoolLayout pool_layout(const Scenario& scenario) {
  PoolLayout out;
  const std::vector<std::string> names = scheduler_class_names(scenario);
  const auto add_variant = [&] {
    if (scenario.engine.variant_count == 0) return;
    out.variant_pool = static_cast<uint32_t>(out.first.size());
    out.first.push_back(scenario.engine.count);
    out.count.push_back(scenario.engine.variant_count);
  };
  if (scenario.pools.empty()) {
    out.first = {0};
    out.count = {scenario.engine.count};
    out.pool_of_class.assign(names.size(), 0);
    add_variant();
    return out;
  }
  uint32_t next = 0, general = 0;
  out.pool_of_class.assign(names.size(), UINT32_MAX);
  for (uint32_t p = 0; p < scenario.pools.size(); ++p) {
    const PoolGroup& g = scenario.pools[p];
    out.first.push_back(next);
    out.count.push_back(g.engines);
    next += g.engines;
    if (g.classes.empty()) general = p;
    for (const std::string& name : g.classes) {
      for (std::size_t c = 0; c < names.size(); ++c) {
        if (names[c] == name) out.pool_of_class[c] = p;
      }
    }
  }
  for (uint32_t& p : out.pool_of_class) {
    if (p == UINT32_MAX) p = general;  // the parser checked a pool without classes exists
  }
  add_variant();
  return out;
}

}  // namespace arbiter::bench
