#include "gateway/config_print.hpp"

#include "yaml/setting_keys.hpp"
#include "yaml/yaml_reader.hpp"

#include <algorithm>
#include <charconv>
#include <sstream>

namespace arbiter {

namespace {

std::string_view yes_no(bool b) { return b ? "true" : "false"; }

std::string num(double d) { return YamlReader::format_number(d); }
std::string q(std::string_view text) { return YamlReader::quote(text); }

// A flow list of strings: [a, b].
template <class Range, class Text>
std::string list(const Range& items, const Text& text) {
  std::string out = "[";
  for (const auto& item : items) out += (out.size() > 1 ? ", " : "") + std::string(text(item));
  return out + "]";
}

std::string strings(const std::vector<std::string>& v) {
  return list(v, [](const std::string& s) { return q(s); });
}

std::string_view engine_name(EngineKind e) {
  switch (e) {
    case EngineKind::kVllm: return "vllm";
    case EngineKind::kSglang: return "sglang";
    case EngineKind::kLlamaCpp: return "llamacpp";
  }
  return "vllm";
}

void print_class(std::ostringstream& y, const ClassConfig& c) {
  const sched::ClassPolicy& p = c.policy;
  y << "  - name: " << q(c.name) << "\n";
  if (c.match) {
    const ClassMatch& m = *c.match;
    y << "    match: {routes: " << list(m.routes, [](Route r) { return route_path(r); })
      << ", models: " << strings(m.models) << ", tenants: " << strings(m.tenants);
    if (m.max_tokens_at_least) y << ", max_tokens_at_least: " << *m.max_tokens_at_least;
    if (m.max_tokens_at_most) y << ", max_tokens_at_most: " << *m.max_tokens_at_most;
    y << "}\n";
  }
  if (c.max_tokens_cap) y << "    max_tokens_cap: " << *c.max_tokens_cap << "\n";
  y << "    " << write_class_policy(p, "\n    ") << "\n"
    << "    supersede_by_user: " << yes_no(c.supersede_by_user) << "\n";
}

void print_backend(std::ostringstream& y, const BackendConfig& b) {
  y << "      - name: " << q(b.name) << "\n";
  if (b.type == BackendType::kSim) {
    y << "        type: sim\n        profile: " << q(b.sim_profile) << "\n";
    if (b.sim_max_num_seqs) y << "        max_num_seqs: " << *b.sim_max_num_seqs << "\n";
  } else {
    y << "        url: \"" << (b.tls ? "https" : "http") << "://" << b.host << ":" << b.port << "\"\n";
    if (!b.ca_file.empty()) y << "        ca_file: " << q(b.ca_file) << "\n";
    if (!b.cert_file.empty()) y << "        cert_file: " << q(b.cert_file) << "\n";
    if (!b.key_file.empty()) y << "        key_file: " << q(b.key_file) << "\n";
  }
  y << "        engine: " << engine_name(b.engine) << "\n"
    << "        priority_scheduling: " << yes_no(b.priority_scheduling) << "\n"
    << "        continue_final_message: " << yes_no(b.continue_final_message) << "\n"
    << "        max_concurrency: " << b.max_concurrency << "\n"
    << "        prefill_tokens_per_s: " << num(b.prefill_tokens_per_s) << "\n"
    << "        prefix_cache_tokens: " << (b.prefix_cache_from_engine ? std::string("auto") : std::to_string(b.prefix_cache_tokens)) << "\n"
    << "        classes: " << strings(b.classes) << "\n"
    << "        lend: " << yes_no(b.lend) << "\n";
  // Where the engine's key comes from, never the key.
  if (!b.api_key_env.empty()) y << "        api_key_env: " << q(b.api_key_env) << "\n";
  if (!b.api_key_file.empty()) y << "        api_key_file: " << q(b.api_key_file) << "\n";
}

// Each priced model's price once, however many pools serve the model.
void print_prices(std::ostringstream& y, const std::vector<ModelConfig>& models) {
  std::vector<std::string_view> printed;
  for (const ModelConfig& m : models) {
    if (!m.price || std::ranges::find(printed, m.name) != printed.end()) continue;
    if (printed.empty()) y << "prices:\n";
    printed.push_back(m.name);
    const ModelPrice& p = *m.price;
    y << "  - {model: " << q(p.model) << ", input_per_million: " << num(p.input_per_million)
      << ", output_per_million: " << num(p.output_per_million);
    if (p.cached_input_per_million) y << ", cached_input_per_million: " << num(*p.cached_input_per_million);
    y << ", per_gpu_second: " << num(p.per_gpu_second) << "}\n";
  }
}

}  // namespace

std::string_view store_down_name(quota::StoreDownPolicy p) {
  switch (p) {
    case quota::StoreDownPolicy::kOpen: return "open";
    case quota::StoreDownPolicy::kClosed: return "closed";
    case quota::StoreDownPolicy::kLocal: break;
  }
  return "local";
}

// A quotas list, flow style; only the limits that are set.
std::string quotas(const std::vector<quota::QuotaLimits>& list) {
  std::ostringstream y;
  y << "[";
  for (std::size_t i = 0; i < list.size(); ++i) {
    const quota::QuotaLimits& q = list[i];
    std::vector<std::string> parts;
    if (q.requests_per_minute) parts.push_back("requests_per_minute: " + num(*q.requests_per_minute));
    if (q.tokens_per_minute) parts.push_back("tokens_per_minute: " + num(*q.tokens_per_minute));
    if (q.tokens_per_day) parts.push_back("tokens_per_day: " + num(*q.tokens_per_day));
    if (q.max_concurrent) parts.push_back("max_concurrent: " + std::to_string(*q.max_concurrent));
    parts.push_back("classes: " + strings(q.classes));
    parts.push_back("models: " + strings(q.models));
    y << (i ? ", {" : "{");
    for (std::size_t k = 0; k < parts.size(); ++k) y << (k ? ", " : "") << parts[k];
    y << "}";
  }
  y << "]";
  return y.str();
}

std::string config_to_yaml(const Config& c) {
  std::ostringstream y;
  y << "listener: {" << write_settings(listener_keys(), c.listener, ", ");
  if (c.listener.tls.enabled()) y << ", tls: {" << write_settings(listener_tls_keys(), c.listener.tls, ", ") << "}";
  y << "}\n"
    << "admin: {" << write_settings(admin_keys(), c.admin, ", ") << "}\n"
    << "limits: {" << write_settings(limits_keys(), c.limits, ", ") << "}\n"
    << "timeouts: {" << write_settings(timeouts_keys(), c.timeouts, ", ") << "}\n"
    << "auth: {" << write_settings(auth_keys(), c.auth, ", ") << "}\n";
  if (!c.tenants.empty()) {
    y << "tenants:\n";
    for (const TenantConfig& tc : c.tenants) {
      y << "  - {name: " << q(tc.name) << ", team: " << q(tc.team) << ", weight: " << num(tc.weight)
        << ", api_key_sha256: " << strings(tc.key_sha256) << ", allowed_classes: " << strings(tc.allowed_classes)
        << ", quotas: " << quotas(tc.quotas) << ", quota_store_down: " << store_down_name(tc.quota_store_down)
        << ", client_cert_names: " << strings(tc.client_cert_names) << "}\n";
    }
  }
  if (!c.teams.empty()) {
    y << "teams:\n";
    for (const quota::TeamConfig& team : c.teams) {
      y << "  - {name: " << q(team.name) << ", quotas: " << quotas(team.quotas);
      if (const auto& d = team.dynamic_quota) {
        y << ", dynamic_quota: {members: " << num(d->members) << ", per_member: " << num(d->per_member)
          << ", complexity: " << num(d->complexity)
          << ", limit: " << (d->tokens ? "tokens_per_minute" : "requests_per_minute")
          << ", recompute_s: " << d->every.count() << "}";
      }
      y << "}\n";
    }
  }
  y << "quota_store: {" << write_settings(quota_store_keys(), c.quota_store, ", ") << "}\n";
  y << "traffic_breaker: {" << write_settings(traffic_breaker_keys(), c.traffic_breaker, ", ") << "}\n";
  y << "classes:\n";
  for (const ClassConfig& cls : c.classes) print_class(y, cls);
  y << "default_class: " << q(c.default_class) << "\n";
  // A model split into per-class pools is one model again: its backends
  // carry their class lists.
  y << "models:\n";
  for (std::size_t i = 0; i < c.models.size(); ++i) {
    bool first = true;
    for (std::size_t j = 0; j < i; ++j) first = first && c.models[j].name != c.models[i].name;
    if (!first) continue;
    y << "  - name: " << q(c.models[i].name) << "\n";
    if (!c.models[i].degraded.empty()) y << "    degraded: " << q(c.models[i].degraded) << "\n";
    if (!c.models[i].fallback.empty()) y << "    fallback: " << q(c.models[i].fallback) << "\n";
    y << "    backends:\n";
    for (std::size_t j = i; j < c.models.size(); ++j) {
      if (c.models[j].name != c.models[i].name) continue;
      for (const BackendConfig& b : c.models[j].backends) print_backend(y, b);
    }
  }
  print_prices(y, c.models);
  y << "scheduler: {" << write_settings(scheduler_keys(), c.scheduler, ", ") << "}\n";
  y << "engine_signals: {" << write_settings(engine_signals_keys(), c.engine_signals, ", ") << "}\n"
    << "outlier_detection: {" << write_settings(outlier_detection_keys(), c.outlier_detection, ", ") << "}\n"
    << "retries: {" << write_settings(retries_keys(), c.retries, ", ") << "}\n"
    << "health_probes: {" << write_settings(health_probes_keys(), c.health_probes, ", ") << "}\n"
    << "model_breaker: {" << write_settings(model_breaker_keys(), c.model_breaker, ", ") << "}\n"
    << "log: {" << write_settings(log_keys(), c.log, ", ") << "}\n";
  return y.str();
}

}  // namespace arbiter
