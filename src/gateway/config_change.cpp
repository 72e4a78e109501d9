#include "gateway/config_change.hpp"

#include <map>

#include "gateway/config_print.hpp"

namespace arbiter {

namespace {

std::string dump(const YAML::Node& node) { return node ? YAML::Dump(node) : std::string(); }

}  // namespace

PrintedConfig::PrintedConfig(const Config& config) : root(YAML::Load(config_to_yaml(config))) {}

std::vector<std::string> restart_only_changes(const PrintedConfig& running, const PrintedConfig& next) {
  const YAML::Node& a = running.root;
  const YAML::Node& b = next.root;
  std::vector<std::string> changed;
  for (const char* section : {"listener", "admin", "log", "quota_store", "cache", "store", "batches"}) {
    if (dump(a[section]) != dump(b[section])) changed.push_back(section);
  }
  // Tracing's exporter outlives generations; its share of requests does not.
  for (const char* key : {"endpoint", "service_name", "flush_ms", "max_queued_spans"}) {
    if (dump(a["tracing"][key]) != dump(b["tracing"][key])) changed.push_back(std::string("tracing.") + key);
  }
  for (const char* key : {"max_body_bytes", "max_header_bytes"}) {
    if (dump(a["limits"][key]) != dump(b["limits"][key])) changed.push_back(std::string("limits.") + key);
  }
  for (const char* key : {"client_header_ms", "client_body_ms", "keepalive_idle_ms", "client_write_ms", "drain_ms"}) {
    if (dump(a["timeouts"][key]) != dump(b["timeouts"][key])) changed.push_back(std::string("timeouts.") + key);
  }
  return changed;
}

std::vector<std::string> changed_models(const PrintedConfig& running, const PrintedConfig& next) {
  // A model split into per-class pools is listed once per pool: compare
  // every entry of the name together.
  auto entries = [](const PrintedConfig& config) {
    std::map<std::string, std::string> out;
    for (const auto& m : config.root["models"]) out[m["name"].as<std::string>()] += dump(m);
    return out;
  };
  const auto before = entries(running);
  const auto after = entries(next);
  std::vector<std::string> changed;
  for (const auto& [name, text] : before) {
    const auto it = after.find(name);
    if (it == after.end() || it->second != text) changed.push_back(name);
  }
  return changed;
}

bool same_section(const PrintedConfig& running, const PrintedConfig& next, const char* section) {
  return dump(running.root[section]) == dump(next.root[section]);
}

CarryMap carry_map(const Config& running, const Config& next) {
  CarryMap map;
  for (const ModelConfig& old : running.models) {
    std::optional<sched::PoolId> pool;
    std::vector<std::optional<sched::BackendId>> backends(old.backends.size());
    for (std::size_t p = 0; p < next.models.size(); ++p) {
      if (next.models[p].pool_name() != old.pool_name()) continue;
      pool = static_cast<sched::PoolId>(p);
      const auto& now = next.models[p].backends;
      for (std::size_t b = 0; b < old.backends.size(); ++b) {
        for (std::size_t n = 0; n < now.size(); ++n) {
          if (now[n].name == old.backends[b].name) backends[b] = static_cast<sched::BackendId>(n);
        }
      }
      break;
    }
    map.pools.push_back(pool);
    map.backends.push_back(std::move(backends));
  }
  for (const ClassConfig& old : running.classes) {
    std::optional<sched::ClassId> klass;
    for (std::size_t c = 0; c < next.classes.size(); ++c) {
      if (next.classes[c].name == old.name) klass = static_cast<sched::ClassId>(c);
    }
    map.classes.push_back(klass);
  }
  for (const TenantConfig& old : running.tenants) {
    std::optional<sched::TenantId> tenant;
    for (std::size_t t = 0; t < next.tenants.size(); ++t) {
      if (next.tenants[t].name == old.name) tenant = static_cast<sched::TenantId>(t);
    }
    map.tenants.push_back(tenant);
  }
  map.tenants.push_back(static_cast<sched::TenantId>(next.tenants.size()));  // the anonymous tenant
  map.adapters.push_back(0);
  for (const AdapterConfig& old : running.adapters) {
    const uint16_t number = next.adapter_number(old.name);
    map.adapters.push_back(number != 0 ? std::optional(number) : std::nullopt);
  }
  map.hold_added_backends = next.engine_signals.enabled;
  return map;
}

}  // namespace arbiter
