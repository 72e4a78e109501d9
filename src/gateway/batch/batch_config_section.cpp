#include "gateway/batch/batch_config_section.hpp"

#include <algorithm>

#include "yaml/setting_rows.hpp"

namespace arbiter {
namespace {

using namespace setting_rows;

void read_window(YamlReader& r, const YAML::Node& v, const std::string& path, BatchConfig& s) {
  if (auto hours = r.integer(v, path, 1, 24 * 365)) s.max_window = std::chrono::hours(*hours);
}
std::string write_window(const BatchConfig& s) { return std::to_string(s.max_window.count()); }

constexpr SettingKey<BatchConfig> kBatchKeys[] = {
    {"enabled", "true or false", read_bool<BatchConfig, &BatchConfig::enabled>,
     write_bool<BatchConfig, &BatchConfig::enabled>},
    {"dir", "a folder (relative: to the config file's folder)", read_text<BatchConfig, &BatchConfig::dir>,
     write_text<BatchConfig, &BatchConfig::dir>},
    {"class", "a class's name (empty: 'batch' if there is one, else the lowest priority)",
     read_text<BatchConfig, &BatchConfig::klass>, write_text_if_set<BatchConfig, &BatchConfig::klass>},
    {"max_lines", "an integer in [1, 1000000]", read_integer<BatchConfig, &BatchConfig::max_lines, 1, 1'000'000>,
     write_integer<BatchConfig, &BatchConfig::max_lines>},
    {"max_file_bytes", "a size (KiB, MiB, GiB)", read_size<BatchConfig, &BatchConfig::max_file_bytes>,
     write_size<BatchConfig, &BatchConfig::max_file_bytes>},
    {"max_tenant_bytes", "a size (KiB, MiB, GiB)", read_size<BatchConfig, &BatchConfig::max_tenant_bytes>,
     write_size<BatchConfig, &BatchConfig::max_tenant_bytes>},
    {"max_in_flight", "an integer in [1, 100000]",
     read_integer<BatchConfig, &BatchConfig::max_in_flight, 1, 100'000>,
     write_integer<BatchConfig, &BatchConfig::max_in_flight>},
    {"max_window_hours", "hours in [1, 8760]", read_window, write_window},
    {"takeover_s", "seconds in [3, 3600]", read_seconds<BatchConfig, &BatchConfig::takeover, 3, 3'600>,
     write_seconds<BatchConfig, &BatchConfig::takeover>},
};

void check_batches(YamlReader& r, std::string_view section, const Config& c) {
  const BatchConfig& b = c.batches;
  if (b.enabled && b.dir.empty()) r.error(std::string(section) + ".dir", "must name a folder");
  if (!b.klass.empty() && std::none_of(c.classes.begin(), c.classes.end(),
                                       [&](const ClassConfig& k) { return k.name == b.klass; })) {
    r.error(std::string(section) + ".class", "names no class in classes");
  }
}

}  // namespace

std::span<const SettingKey<BatchConfig>> batch_keys() { return kBatchKeys; }

ConfigSection batches_section() {
  return flat_section<BatchConfig, &Config::batches, batch_keys, check_batches>("batches");
}

}  // namespace arbiter
