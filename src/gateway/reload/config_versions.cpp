#include "gateway/reload/config_versions.hpp"

#include <algorithm>

#include <fmt/format.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace arbiter {

std::string config_hash(std::string_view yaml_text) {
  return fmt::format("{:016x}", XXH3_64bits(yaml_text.data(), yaml_text.size()));
}

void ConfigVersions::applied(ConfigVersion next) {
  std::erase_if(previous_, [&](const ConfigVersion& v) { return v.hash == next.hash; });
  if (current_.hash != next.hash) previous_.insert(previous_.begin(), std::move(current_));
  if (previous_.size() > kKeptPrevious) previous_.resize(kKeptPrevious);
  current_ = std::move(next);
}

const ConfigVersion* ConfigVersions::find(std::string_view hash) const {
  if (hash.size() < 6) return nullptr;
  const ConfigVersion* found = nullptr;
  auto consider = [&](const ConfigVersion& v) {
    if (!v.hash.starts_with(hash)) return true;
    if (found != nullptr) return false;  // ambiguous
    found = &v;
    return true;
  };
  if (!consider(current_)) return nullptr;
  for (const ConfigVersion& v : previous_) {
    if (!consider(v)) return nullptr;
  }
  return found;
}

}  // namespace arbiter
