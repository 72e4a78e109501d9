#include "bench/scenario.hpp"

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

}  // namespace arbiter::bench
