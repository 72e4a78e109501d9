#include "gateway/store/store_config_section.hpp"

#include <algorithm>
#include <cstdlib>
#include <iterator>

#include "gateway/store/pg_connection.hpp"
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

// A request's decision kinds (docs/audit.md): what audit_sample may name.
constexpr std::string_view kSampledKinds[] = {"refused",  "answered", "dispatched", "not_dispatched", "preempted",
                                              "degraded", "retried",  "superseded", "failover",       "inherited"};

void read_sample(YamlReader& r, const YAML::Node& v, const std::string& path, StoreConfig& s) {
  if (!v.IsMap()) {
    r.error(path, "must be a map of decision kind to the share kept, e.g. {dispatched: 0.1}");
    return;
  }
  s.audit_sample.clear();
  for (const auto& entry : v) {
    const auto kind = r.scalar(entry.first, path);
    if (!kind) continue;
    const std::string at = YamlReader::join(path, *kind);
    if (std::find(std::begin(kSampledKinds), std::end(kSampledKinds), *kind) == std::end(kSampledKinds)) {
      r.error(at, "is not a request's decision kind (refused, answered, dispatched, not_dispatched, preempted, "
                  "degraded, retried, superseded, failover, inherited)");
      continue;
    }
    if (auto share = r.number(entry.second, at, 0, 1)) s.audit_sample.emplace_back(*kind, *share);
  }
}
std::string write_sample(const StoreConfig& s) {
  std::string out = "{";
  for (const auto& [kind, share] : s.audit_sample) {
    out += (out.size() > 1 ? ", " : "") + kind + ": " + YamlReader::format_number(share);
  }
  return out + "}";
}

constexpr SettingKey<StoreConfig> kStoreKeys[] = {
    {"enabled", "true or false", read_bool<StoreConfig, &StoreConfig::enabled>,
     write_bool<StoreConfig, &StoreConfig::enabled>},
    {"path", "a file path (relative: to the config file's folder)", read_text<StoreConfig, &StoreConfig::path>,
     write_text<StoreConfig, &StoreConfig::path>},
    {"url", "a PostgreSQL connection string (postgresql://user@host/db), no password in it",
     read_text<StoreConfig, &StoreConfig::url>, write_text_if_set<StoreConfig, &StoreConfig::url>},
    {"url_env", "an environment variable's name (it holds the connection string)",
     read_text<StoreConfig, &StoreConfig::url_env>, write_text_if_set<StoreConfig, &StoreConfig::url_env>},
    {"replica", "a name (empty: the host name)", read_text<StoreConfig, &StoreConfig::replica>,
     write_text<StoreConfig, &StoreConfig::replica>},
    {"retention_days", "days in [1, 3650]", read_days<StoreConfig, &StoreConfig::retention, 1, 3650>,
     write_days<StoreConfig, &StoreConfig::retention>},
    {"spool_bytes", "a size (KiB, MiB, GiB)", read_size<StoreConfig, &StoreConfig::spool_bytes>,
     write_size<StoreConfig, &StoreConfig::spool_bytes>},
    {"audit", "true or false", read_bool<StoreConfig, &StoreConfig::audit>, write_bool<StoreConfig, &StoreConfig::audit>},
    {"audit_sample", "a map of decision kind to a share in [0, 1]", read_sample, write_sample},
};

void check_url(YamlReader& r, const std::string& section, const StoreConfig& s) {
  if (!s.url.empty() && !s.url_env.empty()) {
    r.error(section + ".url", "give url or url_env, not both");
    return;
  }
  if (!s.url.empty()) {
    if (auto why = store::PgConnection::conninfo_error(s.url, /*allow_password=*/false)) r.error(section + ".url", *why);
    return;
  }
  if (s.url_env.empty() || !s.enabled) return;
  const char* value = std::getenv(s.url_env.c_str());
  if (value == nullptr || *value == '\0') {
    r.error(section + ".url_env", "environment variable " + s.url_env + " is not set");
  } else if (auto why = store::PgConnection::conninfo_error(value, /*allow_password=*/true)) {
    r.error(section + ".url_env", "environment variable " + s.url_env + ": " + *why);
  }
}

void check_store(YamlReader& r, std::string_view section, const Config& c) {
  check_url(r, std::string(section), c.store);
  if (c.store.enabled && c.store.path.empty()) r.error(std::string(section) + ".path", "must name a file");
  if (c.store.spool_bytes < (std::size_t{1} << 20)) r.error(std::string(section) + ".spool_bytes", "must be 1MiB or more");
}

}  // namespace

std::span<const SettingKey<StoreConfig>> store_keys() { return kStoreKeys; }

ConfigSection store_section() { return flat_section<StoreConfig, &Config::store, store_keys, check_store>("store"); }

}  // namespace arbiter
