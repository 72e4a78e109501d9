#include "core/batch/batch_class.hpp"

namespace arbiter::batch {

std::size_t batch_class(const Config& config) {
  const std::vector<ClassConfig>& classes = config.classes;
  const std::string& named = config.batches.klass.empty() ? std::string("batch") : config.batches.klass;
  for (std::size_t i = 0; i < classes.size(); ++i) {
    if (classes[i].name == named) return i;
  }
  for (std::size_t i = 0; i < classes.size(); ++i) {
    if (classes[i].policy.background) return i;
  }
  std::size_t last = 0;
  for (std::size_t i = 1; i < classes.size(); ++i) {
    if (classes[i].policy.engine_priority > classes[last].policy.engine_priority) last = i;
  }
  return last;
}

}  // namespace arbiter::batch
