#include "gateway/config_print.hpp"

#include <algorithm>
#include <sstream>

#include "gateway/config_entries.hpp"
#include "gateway/config_section.hpp"
#include "yaml/setting_keys.hpp"

namespace arbiter {

namespace {

// A list's entries through their table, one flow mapping a line.
template <class Entry>
void print_entries(std::ostringstream& y, std::string_view list, std::span<const SettingKey<Entry>> keys,
                   const std::vector<Entry>& entries) {
  if (entries.empty()) return;
  y << list << ":\n";
  for (const Entry& e : entries) y << "  - {" << write_settings(keys, e, ", ") << "}\n";
}

void print_class(std::ostringstream& y, const ClassConfig& c) {
  y << "  - " << write_settings(class_keys(), c, "\n    ") << "\n"
    << "    " << write_class_policy(c.policy, "\n    ") << "\n";
}

// A model split into per-class pools is one entry again: its backends carry
// their class lists.
std::vector<ModelConfig> models_as_written(const std::vector<ModelConfig>& pools) {
  std::vector<ModelConfig> models;
  for (const ModelConfig& pool : pools) {
    auto it = std::ranges::find(models, pool.name, &ModelConfig::name);
    if (it == models.end()) {
      models.push_back(pool);
    } else {
      it->backends.insert(it->backends.end(), pool.backends.begin(), pool.backends.end());
    }
  }
  return models;
}

// Each priced model's price once, however many pools serve the model.
std::vector<ModelPrice> prices_of(const std::vector<ModelConfig>& models) {
  std::vector<ModelPrice> prices;
  for (const ModelConfig& m : models) {
    if (m.price) prices.push_back(*m.price);
  }
  return prices;
}

}  // namespace

std::string config_to_yaml(const Config& c) {
  std::ostringstream y;
  y << "listener: {" << write_settings(listener_keys(), c.listener, ", ");
  if (c.listener.tls.enabled()) y << ", tls: {" << write_settings(listener_tls_keys(), c.listener.tls, ", ") << "}";
  y << "}\n"
    << "admin: {" << write_settings(admin_keys(), c.admin, ", ") << "}\n"
    << "limits: {" << write_settings(limits_keys(), c.limits, ", ") << "}\n"
    << "timeouts: {" << write_settings(timeouts_keys(), c.timeouts, ", ") << "}\n"
    << "auth: {" << write_settings(auth_keys(), c.auth, ", ") << "}\n";
  print_entries(y, "tenants", tenant_keys(), c.tenants);
  print_entries(y, "teams", team_keys(), c.teams);
  y << "classes:\n";
  for (const ClassConfig& cls : c.classes) print_class(y, cls);
  y << "default_class: " << YamlReader::quote(c.default_class) << "\n";
  const std::vector<ModelConfig> models = models_as_written(c.models);
  y << "models:\n";
  for (const ModelConfig& m : models) y << "  - " << write_settings(model_keys(), m, "\n    ") << "\n";
  print_entries(y, "aliases", alias_keys(), c.aliases);
  print_entries(y, "prices", price_keys(), prices_of(models));
  y << "scheduler: {" << write_settings(scheduler_keys(), c.scheduler, ", ") << "}\n";
  y << "engine_signals: {" << write_settings(engine_signals_keys(), c.engine_signals, ", ") << "}\n"
    << "adaptive_capacity: {" << write_settings(adaptive_capacity_keys(), c.adaptive_capacity, ", ") << "}\n";
  for (const ConfigSection& section : feature_sections()) y << section.name << ": {" << section.write(c) << "}\n";
  y << "log: {" << write_settings(log_keys(), c.log, ", ") << "}\n";
  return y.str();
}

}  // namespace arbiter
