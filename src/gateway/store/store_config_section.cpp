#include "gateway/store/store_config_section.hpp"

#include "yaml/setting_rows.hpp"

namespace arbiter {
namespace {

using namespace setting_rows;

template <class S, auto Member, int64_t Min, int64_t Max>
void read_days(YamlReader& r, const YAML::Node& v, const std::string& path, S& s) {
  if (auto days = r.integer(v, path, Min, Max)) s.*Member = std::chrono::hours(24 * *days);
}
template <class S, auto Member>
std::string write_days(const S& s) {
  return std::to_string((s.*Member).count() / 24);
}

constexpr SettingKey<StoreConfig> kStoreKeys[] = {
    {"enabled", "true or false", read_bool<StoreConfig, &StoreConfig::enabled>,
     write_bool<StoreConfig, &StoreConfig::enabled>},
    {"path", "a file path (relative: to the config file's folder)", read_text<StoreConfig, &StoreConfig::path>,
     write_text<StoreConfig, &StoreConfig::path>},
    {"replica", "a name (empty: the host name)", read_text<StoreConfig, &StoreConfig::replica>,
     write_text<StoreConfig, &StoreConfig::replica>},
    {"retention_days", "days in [1, 3650]", read_days<StoreConfig, &StoreConfig::retention, 1, 3650>,
     write_days<StoreConfig, &StoreConfig::retention>},
    {"spool_bytes", "a size (KiB, MiB, GiB)", read_size<StoreConfig, &StoreConfig::spool_bytes>,
     write_size<StoreConfig, &StoreConfig::spool_bytes>},
    {"audit", "true or false", read_bool<StoreConfig, &StoreConfig::audit>, write_bool<StoreConfig, &StoreConfig::audit>},
};

void check_store(YamlReader& r, std::string_view section, const Config& c) {
  if (c.store.enabled && c.store.path.empty()) r.error(std::string(section) + ".path", "must name a file");
  if (c.store.spool_bytes < (std::size_t{1} << 20)) r.error(std::string(section) + ".spool_bytes", "must be 1MiB or more");
}

}  // namespace

std::span<const SettingKey<StoreConfig>> store_keys() { return kStoreKeys; }

ConfigSection store_section() { return flat_section<StoreConfig, &Config::store, store_keys, check_store>("store"); }

}  // namespace arbiter
