#include "gateway/config_yaml.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/config_exposure.hpp"
#include "gateway/config_entries.hpp"
#include "gateway/config_section.hpp"
#include "gateway/scheduler_setup.hpp"
#include "http/tls_context.hpp"
#include "yaml/setting_keys.hpp"
#include "yaml/yaml_reader.hpp"

namespace arbiter {
namespace {

// listener: its flat keys and the tls mapping, whose files are loaded now
// so that a bad certificate or key is a config error, not a failed start.
void read_listener(YamlReader& r, const YAML::Node& n, ListenerConfig& out) {
  std::vector<std::string_view> known = key_names(listener_keys());
  known.push_back("tls");
  if (!n || !r.map(n, "listener", known)) return;
  read_settings(listener_keys(), r, n, "listener", out);
  const YAML::Node tls = n["tls"];
  if (!tls) return;
  const std::size_t errors_before = r.errors.size();
  read_section(listener_tls_keys(), r, tls, "listener.tls", out.tls);
  for (const auto* key : {"cert_file", "key_file"}) {
    if (!tls[key]) r.error("listener.tls", std::string("needs ") + key);
  }
  if (out.tls.client_cert != "off" && out.tls.client_ca_file.empty()) {
    r.error("listener.tls.client_ca_file", "is needed when client_cert is " + out.tls.client_cert);
  }
  if (out.tls.client_cert == "off" && !out.tls.client_ca_file.empty()) {
    r.error("listener.tls.client_cert", "is off: set it to optional or required to use client_ca_file");
  }
  if (r.errors.size() != errors_before) return;
  if (auto ctx = make_server_tls(out.tls); !ctx) r.error("listener.tls", ctx.error());
}

void read_classes(YamlReader& r, const YAML::Node& n, std::vector<ClassConfig>& out,
                  std::vector<std::string>& inherited) {
  const std::vector<ClassConfig> builtins = default_classes();
  if (!n) {
    out = builtins;
    return;
  }
  if (n.IsSequence() && n.size() == 0) {
    r.error("classes", "must name at least one class (or be left out for the defaults)");
  }
  // A class named like a built-in one starts from the built-in's settings
  // (read_class): listing `batch` to route it must not silently make it
  // foreground work. --check names them.
  read_entries(read_class, r, n, "classes", out);
  for (const ClassConfig& cc : out) {
    const auto builtin = [&](const ClassConfig& b) { return b.name == cc.name; };
    if (std::any_of(builtins.begin(), builtins.end(), builtin)) inherited.push_back(cc.name);
  }
}

// The admin listener: its token, and the rules that keep it from
// exposing what it guards.
void read_admin(YamlReader& r, const YAML::Node& n, Config& c) {
  read_section(admin_keys(), r, n, "admin", c.admin);
  AdminConfig& a = c.admin;
  a.token = read_secret(r, "admin", "token_env", a.token_env, "token_file", a.token_file);
  if (!a.enabled) return;
  if (a.port != 0 && a.port == c.listener.port) {
    r.error("admin.port", "must differ from listener.port (" + std::to_string(c.listener.port) + ")");
  }
  if (a.token_env.empty() && a.token_file.empty() && !is_loopback(a.address)) {
    r.error("admin.address", "binding " + a.address +
                                 " exposes /metrics and /admin/* beyond this host: set token_env or "
                                 "token_file, or bind to 127.0.0.1");
  }
}

template <class T, class NameOf>
void check_unique(YamlReader& r, const std::vector<T>& items, const std::string& list, NameOf name_of) {
  std::set<std::string> seen;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string& name = name_of(items[i]);
    if (!name.empty() && !seen.insert(name).second) {
      r.error(YamlReader::index(list, i) + ".name", "duplicate name '" + name + "'");
    }
  }
}

// Cross-references: names used in one section must exist in another.
// The pool a backend belongs to within its model: its class list, in any
// order (backends listing the same classes form one pool).
std::vector<std::string> pool_key(const BackendConfig& b) {
  std::vector<std::string> list = b.classes;
  std::sort(list.begin(), list.end());
  return list;
}

// Whether `items` (anything with a `name`) holds one named `name`.
template <class Items>
bool has_named(const Items& items, const std::string& name) {
  return std::any_of(items.begin(), items.end(), [&](const auto& x) { return x.name == name; });
}

// Each of `names` (the list at `path`) names one of `items`; `what` says
// what they are ("class", "model", "tenant").
template <class Items>
void check_names(YamlReader& r, const std::vector<std::string>& names, const std::string& path, const Items& items,
                 const char* what) {
  for (std::size_t j = 0; j < names.size(); ++j) {
    if (!has_named(items, names[j])) {
      r.error(YamlReader::index(path, j), std::string("names no ") + what + ": '" + names[j] + "'");
    }
  }
}

// Quota scopes name classes and models that exist; a team's quotas apply
// to some tenant (one whose `team` it is).
void check_quota_references(YamlReader& r, const Config& c) {
  auto check_scopes = [&](const std::string& owner, const std::vector<quota::QuotaLimits>& quotas) {
    for (std::size_t i = 0; i < quotas.size(); ++i) {
      const auto path = YamlReader::index(owner + ".quotas", i);
      check_names(r, quotas[i].classes, path + ".classes", c.classes, "class");
      check_names(r, quotas[i].models, path + ".models", c.models, "model");
    }
  };
  for (std::size_t i = 0; i < c.tenants.size(); ++i) check_scopes(YamlReader::index("tenants", i), c.tenants[i].quotas);
  check_unique(r, c.teams, "teams", [](const quota::TeamConfig& t) -> const std::string& { return t.name; });
  for (std::size_t i = 0; i < c.teams.size(); ++i) {
    check_scopes(YamlReader::index("teams", i), c.teams[i].quotas);
    const auto& name = c.teams[i].name;
    if (std::none_of(c.tenants.begin(), c.tenants.end(), [&](auto& t) { return t.team == name; })) {
      r.error(YamlReader::index("teams", i) + ".name", "no tenant is in team '" + name + "' (tenants[].team)");
    }
  }
}

// Each price names a configured model, once.
void check_prices(YamlReader& r, const Config& c, const std::vector<ModelPrice>& prices) {
  std::set<std::string> seen;
  for (std::size_t i = 0; i < prices.size(); ++i) {
    const std::string& name = prices[i].model;
    const auto path = YamlReader::index("prices", i) + ".model";
    if (name.empty()) continue;  // already an error: required
    if (!has_named(c.models, name)) {
      r.error(path, "names no model: '" + name + "'");
    } else if (!seen.insert(name).second) {
      r.error(path, "model '" + name + "' is priced twice");
    }
  }
}

// A model's degraded variant and fallback name other models.
void check_model_variants(YamlReader& r, const Config& c) {
  for (std::size_t i = 0; i < c.models.size(); ++i) {
    const ModelConfig& m = c.models[i];
    for (const auto& [key, target] : {std::pair{"degraded", &m.degraded}, std::pair{"fallback", &m.fallback}}) {
      if (target->empty()) continue;
      const auto path = YamlReader::join(YamlReader::index("models", i), key);
      if (*target == m.name) {
        r.error(path, "names the model itself");
      } else if (!has_named(c.models, *target)) {
        r.error(path, "names no model: '" + *target + "'");
      }
    }
  }
  const auto& b = c.model_breaker;
  if (!(b.degrade_at <= b.fallback_at && b.fallback_at <= b.isolate_at)) {
    r.error("model_breaker", "needs degrade_at <= fallback_at <= isolate_at");
  }
  if (b.max_open < b.base_open) r.error("model_breaker.max_open_ms", "must be >= base_open_ms");
  if (c.outlier_detection.max_ejection < c.outlier_detection.base_ejection) {
    r.error("outlier_detection.max_ejection_ms", "must be >= base_ejection_ms");
  }
}

// An alias names models (each once), is no model's name itself, sends its
// traffic somewhere, and its canary is one of its targets with a stable
// side beside it.
void check_aliases(YamlReader& r, const Config& c) {
  check_unique(r, c.aliases, "aliases", [](const rollout::AliasConfig& a) -> const std::string& { return a.name; });
  for (std::size_t i = 0; i < c.aliases.size(); ++i) {
    const rollout::AliasConfig& a = c.aliases[i];
    const std::string path = YamlReader::index("aliases", i);
    if (has_named(c.models, a.name)) r.error(path + ".name", "'" + a.name + "' is a model's name already");
    double total = 0, stable = 0;
    for (std::size_t t = 0; t < a.targets.size(); ++t) {
      const std::string at = YamlReader::index(path + ".targets", t);
      if (!has_named(c.models, a.targets[t].model)) r.error(at + ".model", "no model is named '" + a.targets[t].model + "'");
      for (std::size_t u = 0; u < t; ++u) {
        if (a.targets[u].model == a.targets[t].model) r.error(at + ".model", "names a target twice");
      }
      total += a.targets[t].weight;
      if (!a.canary || a.targets[t].model != a.canary->target) stable += a.targets[t].weight;
    }
    if (!a.targets.empty() && total <= 0) r.error(path + ".targets", "needs a target with a weight above 0");
    if (a.shadow) {
      if (!has_named(c.models, a.shadow->model)) {
        r.error(path + ".shadow.model", "no model is named '" + a.shadow->model + "'");
      } else if (std::ranges::any_of(a.targets, [&](const auto& t) { return t.model == a.shadow->model; })) {
        // Its load would compete with the alias's real requests there, unseen by the scheduler.
        r.error(path + ".shadow.model", "must not be one of the alias's targets");
      }
    }
    if (a.canary) {
      const bool listed = std::ranges::any_of(a.targets, [&](const auto& t) { return t.model == a.canary->target; });
      if (!listed) r.error(path + ".canary.target", "must be one of the alias's targets");
      if (listed && stable <= 0) r.error(path + ".canary", "needs a stable target (another target with a weight above 0)");
    }
  }
}

// LoRA adapters: each name a model's alone (no model, alias or other
// model's adapter has it), numbered in the order first named.
void index_adapters(YamlReader& r, Config& c) {
  for (std::size_t i = 0; i < c.models.size(); ++i) {
    const ModelConfig& m = c.models[i];
    for (std::size_t j = 0; j < m.backends.size(); ++j) {
      const auto& names = m.backends[j].adapters;
      for (std::size_t k = 0; k < names.size(); ++k) {
        const std::string path =
            YamlReader::index(YamlReader::index(YamlReader::index("models", i) + ".backends", j) + ".adapters", k);
        const std::string& name = names[k];
        if (name.empty()) {
          r.error(path, "must not be empty");
        } else if (has_named(c.models, name)) {
          r.error(path, "'" + name + "' is a model's name: an adapter needs a name of its own");
        } else if (has_named(c.aliases, name)) {
          r.error(path, "'" + name + "' is an alias's name: an adapter needs a name of its own");
        } else if (std::find(names.begin(), names.begin() + k, name) != names.begin() + k) {
          r.error(path, "names adapter '" + name + "' twice");
        } else if (auto it = std::ranges::find(c.adapters, name, &AdapterConfig::name); it == c.adapters.end()) {
          c.adapters.push_back({.name = name, .model = m.name});
        } else if (it->model != m.name) {
          r.error(path, "adapter '" + name + "' is served with model '" + it->model + "' already");
        }
      }
    }
  }
  if (c.adapters.size() > UINT16_MAX) r.error("models", "more than 65535 LoRA adapters");
}

void check_references(YamlReader& r, Config& c) {
  check_unique(r, c.models, "models", [](const ModelConfig& m) -> const std::string& { return m.name; });
  check_unique(r, c.classes, "classes", [](const ClassConfig& x) -> const std::string& { return x.name; });
  check_unique(r, c.tenants, "tenants", [](const TenantConfig& t) -> const std::string& { return t.name; });
  for (std::size_t i = 0; i < c.models.size(); ++i) {
    check_unique(r, c.models[i].backends, YamlReader::index("models", i) + ".backends",
                 [](const BackendConfig& b) -> const std::string& { return b.name; });
  }
  auto has_class = [&](const std::string& name) { return has_named(c.classes, name); };
  if (c.default_class.empty()) {
    c.default_class = has_class(kDefaultClassName) || c.classes.empty() ? kDefaultClassName
                                                                         : c.classes.back().name;
  }
  if (!c.classes.empty() && !has_class(c.default_class)) {
    r.error("default_class", "names no class: '" + c.default_class + "'");
  }
  std::set<std::string> key_hashes, cert_names;
  for (std::size_t i = 0; i < c.tenants.size(); ++i) {
    const auto& t = c.tenants[i];
    check_names(r, t.allowed_classes, YamlReader::index("tenants", i) + ".allowed_classes", c.classes, "class");
    for (const auto& h : t.key_sha256) {
      if (!key_hashes.insert(h).second) {
        r.error(YamlReader::index("tenants", i), "an API key is shared with another tenant");
      }
    }
    if (!t.client_cert_names.empty() && c.listener.tls.client_cert == "off") {
      r.error(YamlReader::index("tenants", i) + ".client_cert_names",
              "no client certificate is asked for: set listener.tls.client_cert to optional or required");
    }
    for (const auto& name : t.client_cert_names) {
      if (!cert_names.insert(name).second) {
        r.error(YamlReader::index("tenants", i) + ".client_cert_names", "'" + name + "' names another tenant too");
      }
    }
  }
  for (std::size_t i = 0; i < c.classes.size(); ++i) {
    if (!c.classes[i].match) continue;
    const auto path = YamlReader::index("classes", i) + ".match";
    check_names(r, c.classes[i].match->tenants, path + ".tenants", c.tenants, "tenant");
    check_names(r, c.classes[i].match->models, path + ".models", c.models, "model");
  }
  check_quota_references(r, c);
  check_model_variants(r, c);
  if (!c.traffic_breaker.degrade_class.empty() && !has_class(c.traffic_breaker.degrade_class)) {
    r.error("traffic_breaker.degrade_class", "names no class: '" + c.traffic_breaker.degrade_class + "'");
  }
  if (c.auth.enabled && c.tenants.empty()) {
    r.error("auth.enabled", "is true but no tenants are configured: nobody could get in");
  }
  // Per-class pools: every class named exists, none in two pools of a model,
  // and every class has a pool in every model (a backend without `classes`
  // takes the rest).
  for (std::size_t i = 0; i < c.models.size(); ++i) {
    const auto& backends = c.models[i].backends;
    std::map<std::string, std::vector<std::string>> owner;  // class -> the class list that has it
    std::map<std::vector<std::string>, bool> lends;         // class list -> its backends' lend
    bool general = false;
    for (std::size_t j = 0; j < backends.size(); ++j) {
      const std::vector<std::string> list = pool_key(backends[j]);
      general = general || list.empty();
      if (auto [it, fresh] = lends.emplace(list, backends[j].lend); !fresh && it->second != backends[j].lend) {
        r.error(YamlReader::index(YamlReader::index("models", i) + ".backends", j) + ".lend",
                "differs from another backend with the same classes: a pool lends or does not");
      }
      for (std::size_t k = 0; k < backends[j].classes.size(); ++k) {
        const std::string& name = backends[j].classes[k];
        const auto path = YamlReader::index(YamlReader::index(YamlReader::index("models", i) + ".backends", j) + ".classes", k);
        if (!has_class(name)) {
          r.error(path, "names no class: '" + name + "'");
        } else if (auto [it, fresh] = owner.emplace(name, list); !fresh && it->second != list) {
          r.error(path, "class '" + name + "' is in two different class lists of this model: one pool each");
        }
      }
    }
    if (owner.empty() || general) continue;
    for (const auto& cls : c.classes) {
      if (!owner.contains(cls.name)) {
        r.error(YamlReader::index("models", i) + ".backends",
                "no backend serves class '" + cls.name + "' (name it, or leave one backend without classes)");
      }
    }
  }
}

void check_adaptive_capacity(YamlReader& r, const sched::AdaptiveCapacityConfig& a, const EngineSignalsConfig& signals,
                             const std::string& path) {
  if (const char* why = sched::validate(a)) r.error(path, why);
  if (a.enabled && !signals.enabled) {
    r.error(YamlReader::join(path, "enabled"),
            "needs engine_signals.enabled: the limit is learned from the engines' figures");
  }
}

// Each model's own adaptive_capacity: the global section with the keys it
// names read over it (so the global one is read first). Entry i is
// c.models[i] unless an earlier entry was no mapping, which failed the
// config already.
void read_model_adaptive_capacities(YamlReader& r, const YAML::Node& models, Config& c) {
  if (!models || !models.IsSequence()) return;
  for (std::size_t i = 0; i < models.size() && i < c.models.size(); ++i) {
    const YAML::Node own = models[i].IsMap() ? models[i]["adaptive_capacity"] : YAML::Node();
    if (!own || !own.IsMap()) continue;  // a scalar: read_model said so
    const std::string path = YamlReader::join(YamlReader::index("models", i), "adaptive_capacity");
    sched::AdaptiveCapacityConfig a = c.adaptive_capacity;
    read_section(adaptive_capacity_keys(), r, own, path, a);
    check_adaptive_capacity(r, a, c.engine_signals, path);
    c.models[i].adaptive_capacity = a;
  }
}

// One ModelConfig per pool: a model whose backends name classes becomes one
// entry per distinct class list, in the order first seen.
void split_class_pools(Config& c) {
  std::vector<ModelConfig> pools;
  for (ModelConfig& m : c.models) {
    std::vector<ModelConfig> groups;
    for (BackendConfig& b : m.backends) {
      const std::vector<std::string> list = pool_key(b);
      auto it = std::find_if(groups.begin(), groups.end(), [&](const ModelConfig& g) { return g.classes == list; });
      if (it == groups.end()) {
        groups.push_back(ModelConfig{.name = m.name,
                                     .backends = {},
                                     .classes = list,
                                     .lends = b.lend,
                                     .price = std::nullopt,
                                     .degraded = m.degraded,
                                     .fallback = m.fallback,
                                     .adaptive_capacity = m.adaptive_capacity,
                                     .cache = m.cache});
        it = groups.end() - 1;
      }
      it->backends.push_back(std::move(b));
    }
    for (ModelConfig& g : groups) pools.push_back(std::move(g));
  }
  c.models = std::move(pools);
}

}  // namespace

std::expected<Config, ConfigErrors> parse_config(std::string_view yaml_text) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    return std::unexpected(ConfigErrors{"YAML syntax error at line " + std::to_string(e.mark.line + 1) +
                                        ", column " + std::to_string(e.mark.column + 1) + ": " + e.msg});
  }
  return parse_config(root);
}

std::expected<Config, ConfigErrors> parse_config(const YAML::Node& root) {
  YamlReader r;
  ConfigErrors& errors = r.errors;
  Config c;
  std::vector<std::string_view> top_level = {"listener", "admin",  "limits",        "timeouts",
                                             "auth",     "tenants", "teams",         "classes",
                                             "default_class", "models", "aliases", "prices", "scheduler",
                                             "engine_signals", "adaptive_capacity", "log"};
  for (const ConfigSection& section : feature_sections()) top_level.push_back(section.name);
  if (!r.map(root, "(top level)", top_level)) return std::unexpected(errors);
  read_listener(r, root["listener"], c.listener);
  read_admin(r, root["admin"], c);
  read_section(limits_keys(), r, root["limits"], "limits", c.limits);
  read_section(timeouts_keys(), r, root["timeouts"], "timeouts", c.timeouts);
  read_section(auth_keys(), r, root["auth"], "auth", c.auth);
  if (const YAML::Node tenants = root["tenants"]) read_entries(read_tenant, r, tenants, "tenants", c.tenants);
  if (const YAML::Node teams = root["teams"]) read_entries(read_team, r, teams, "teams", c.teams);
  read_classes(r, root["classes"], c.classes, c.inherited_classes);
  r.read(root, "", "default_class", c.default_class);
  if (const YAML::Node models = root["models"]) {
    read_entries(read_model, r, models, "models", c.models);
  } else {
    r.error("models", "is required: name at least one model and its backends");
  }
  if (const YAML::Node aliases = root["aliases"]) read_entries(read_alias, r, aliases, "aliases", c.aliases);
  std::vector<ModelPrice> prices;
  if (const YAML::Node list = root["prices"]) read_entries(read_price, r, list, "prices", prices);
  read_section(scheduler_keys(), r, root["scheduler"], "scheduler", c.scheduler);
  read_section(engine_signals_keys(), r, root["engine_signals"], "engine_signals", c.engine_signals);
  read_section(adaptive_capacity_keys(), r, root["adaptive_capacity"], "adaptive_capacity", c.adaptive_capacity);
  check_adaptive_capacity(r, c.adaptive_capacity, c.engine_signals, "adaptive_capacity");
  read_model_adaptive_capacities(r, root["models"], c);
  for (const ConfigSection& section : feature_sections()) {
    section.read(r, root[std::string(section.name)], section.name, c);
  }
  read_section(log_keys(), r, root["log"], "log", c.log);
  check_references(r, c);
  check_aliases(r, c);
  index_adapters(r, c);
  check_prices(r, c, prices);
  if (errors.empty()) split_class_pools(c);
  for (ModelConfig& m : c.models) {
    for (const ModelPrice& p : prices) {
      if (p.model == m.name) m.price = p;
    }
  }
  // Whole-config rules of the scheduler (e.g. min_shares adding up to more
  // than the pool) once the parts are valid on their own.
  if (errors.empty()) {
    if (auto why = sched::validate(to_scheduler_config(c))) r.error("classes", *why);
  }
  if (!errors.empty()) return std::unexpected(errors);
  return c;
}

std::expected<Config, ConfigErrors> load_config_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::unexpected(ConfigErrors{path + ": cannot open file"});
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_config(ss.str());
}

}  // namespace arbiter
