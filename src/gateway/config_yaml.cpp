#include "gateway/config_yaml.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <boost/url/parse.hpp>

#include "core/quota/traffic_breaker.hpp"
#include "core/tenants.hpp"
#include "engine/profile.hpp"
#include "gateway/redis/redis_connection.hpp"
#include "gateway/scheduler_setup.hpp"
#include "http/tls_context.hpp"
#include "yaml/setting_keys.hpp"
#include "yaml/yaml_reader.hpp"

namespace arbiter {
namespace {

// The gateway's reading of values on top of the shared YamlReader, for the
// keys of lists (tenants, models, backends, match rules) that the section
// tables (yaml/setting_keys.hpp) do not cover.
class Reader : public YamlReader {
 public:
  template <class Int>
  void read_int(const YAML::Node& parent, const std::string& path, const char* key, Int& out,
                int64_t min, int64_t max) {
    const YAML::Node n = parent[key];
    if (!n) return;
    if (auto v = integer(n, join(path, key), min, max)) out = static_cast<Int>(*v);
  }

  template <class Int>
  void read_int(const YAML::Node& parent, const std::string& path, const char* key,
                std::optional<Int>& out, int64_t min, int64_t max) {
    const YAML::Node n = parent[key];
    if (!n) return;
    if (auto v = integer(n, join(path, key), min, max)) out = static_cast<Int>(*v);
  }

  void read_double(const YAML::Node& parent, const std::string& path, const char* key, double& out,
                   double min, double max) {
    if (const YAML::Node n = parent[key]) {
      if (auto d = number(n, join(path, key), min, max)) out = *d;
    }
  }
};

bool is_sha256_hex(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

template <std::size_t N>
std::vector<std::string_view> keys_of(const std::string_view (&keys)[N]) {
  return {std::begin(keys), std::end(keys)};
}

// A tenant's or team's `quotas` list (docs/quotas.md).
void read_quotas(Reader& r, const YAML::Node& parent, const std::string& owner, std::vector<quota::QuotaLimits>& out) {
  const YAML::Node n = parent["quotas"];
  const std::string list = Reader::join(owner, "quotas");
  if (!n || !r.sequence(n, list)) return;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const auto path = Reader::index(list, i);
    if (!r.map(n[i], path, keys_of(kQuotaKeys))) continue;
    quota::QuotaLimits q;
    auto rate = [&](const char* key, std::optional<double>& slot) {
      double v = 0;
      r.read_double(n[i], path, key, v, 0.001, 1e15);
      if (n[i][key]) slot = v;
    };
    rate("requests_per_minute", q.requests_per_minute);
    rate("tokens_per_minute", q.tokens_per_minute);
    rate("tokens_per_day", q.tokens_per_day);
    r.read_int(n[i], path, "max_concurrent", q.max_concurrent, 1, 10'000'000);
    r.read_list(n[i], path, "classes", q.classes);
    r.read_list(n[i], path, "models", q.models);
    if (!q.limits_anything()) {
      r.error(path, "sets no limit (requests_per_minute, tokens_per_minute, tokens_per_day or max_concurrent)");
    }
    out.push_back(std::move(q));
  }
}

// A team's `dynamic_quota` (docs/quotas.md).
void read_dynamic_quota(Reader& r, const YAML::Node& parent, const std::string& team,
                        std::optional<quota::DynamicQuotaConfig>& out) {
  const YAML::Node n = parent["dynamic_quota"];
  const std::string path = Reader::join(team, "dynamic_quota");
  if (!n || !r.map(n, path, keys_of(kDynamicQuotaKeys))) return;
  quota::DynamicQuotaConfig d;
  if (!n["members"]) r.error(path, "needs members (the team's size)");
  r.read_double(n, path, "members", d.members, 0.001, 1e9);
  r.read_double(n, path, "per_member", d.per_member, 0.001, 1e12);
  r.read_double(n, path, "complexity", d.complexity, 0.001, 1000);
  int64_t every = d.every.count();
  r.read_int(n, path, "recompute_s", every, 1, 86'400);
  d.every = std::chrono::seconds(every);
  if (const YAML::Node limit = n["limit"]) {
    const auto text = r.scalar(limit, Reader::join(path, "limit"));
    if (text == "tokens_per_minute") {
      d.tokens = true;
    } else if (text && text != "requests_per_minute") {
      r.error(Reader::join(path, "limit"), "must be requests_per_minute or tokens_per_minute");
    }
  }
  out = d;
}

void read_teams(Reader& r, const YAML::Node& n, std::vector<quota::TeamConfig>& out) {
  if (!n || !r.sequence(n, "teams")) return;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const auto path = Reader::index("teams", i);
    if (!r.map(n[i], path, keys_of(kTeamKeys))) continue;
    quota::TeamConfig team;
    r.read(n[i], path, "name", team.name, /*required=*/true);
    read_quotas(r, n[i], path, team.quotas);
    read_dynamic_quota(r, n[i], path, team.dynamic_quota);
    out.push_back(std::move(team));
  }
}

// listener: its flat keys and the tls mapping, whose files are loaded now
// so that a bad certificate or key is a config error, not a failed start.
void read_listener(Reader& r, const YAML::Node& n, ListenerConfig& out) {
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

void read_tenants(Reader& r, const YAML::Node& n, std::vector<TenantConfig>& out) {
  if (!n || !r.sequence(n, "tenants")) return;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const auto path = Reader::index("tenants", i);
    const YAML::Node t = n[i];
    if (!r.map(t, path, keys_of(kTenantKeys))) continue;
    TenantConfig tc;
    r.read(t, path, "name", tc.name, /*required=*/true);
    r.read(t, path, "team", tc.team);
    r.read_double(t, path, "weight", tc.weight, 0.001, 1000);
    if (tc.team.empty()) tc.team = tc.name;
    std::vector<std::string> plain;
    r.read_list(t, path, "api_keys", plain);
    for (const auto& k : plain) tc.key_sha256.push_back(sha256_hex(k));
    std::vector<std::string> hashes;
    r.read_list(t, path, "api_key_sha256", hashes);
    for (std::size_t j = 0; j < hashes.size(); ++j) {
      std::string h = hashes[j];
      std::transform(h.begin(), h.end(), h.begin(), [](unsigned char c) { return std::tolower(c); });
      if (!is_sha256_hex(h)) {
        r.error(Reader::index(Reader::join(path, "api_key_sha256"), j), "must be 64 hex digits");
      } else {
        tc.key_sha256.push_back(h);
      }
    }
    r.read_list(t, path, "client_cert_names", tc.client_cert_names);
    if (tc.key_sha256.empty() && tc.client_cert_names.empty()) {
      r.error(path, "needs at least one of api_keys, api_key_sha256 or client_cert_names");
    }
    r.read_list(t, path, "allowed_classes", tc.allowed_classes);
    read_quotas(r, t, path, tc.quotas);
    if (const YAML::Node down = t["quota_store_down"]) {
      const auto text = r.scalar(down, Reader::join(path, "quota_store_down"));
      if (text == "local") {
        tc.quota_store_down = quota::StoreDownPolicy::kLocal;
      } else if (text == "open") {
        tc.quota_store_down = quota::StoreDownPolicy::kOpen;
      } else if (text == "closed") {
        tc.quota_store_down = quota::StoreDownPolicy::kClosed;
      } else if (text) {
        r.error(Reader::join(path, "quota_store_down"), "must be local, open or closed");
      }
    }
    out.push_back(std::move(tc));
  }
}

void read_class_match(Reader& r, const YAML::Node& n, const std::string& path, ClassMatch& out) {
  if (!r.map(n, path, {"routes", "models", "tenants", "max_tokens_at_least", "max_tokens_at_most"}))
    return;
  std::vector<std::string> routes;
  r.read_list(n, path, "routes", routes);
  for (std::size_t i = 0; i < routes.size(); ++i) {
    if (auto route = route_from_path(routes[i])) {
      out.routes.push_back(*route);
    } else {
      r.error(Reader::index(Reader::join(path, "routes"), i),
              "unknown route '" + routes[i] + "' (use /v1/chat/completions or /v1/completions)");
    }
  }
  r.read_list(n, path, "models", out.models);
  r.read_list(n, path, "tenants", out.tenants);
  r.read_int(n, path, "max_tokens_at_least", out.max_tokens_at_least, 1, INT32_MAX);
  r.read_int(n, path, "max_tokens_at_most", out.max_tokens_at_most, 1, INT32_MAX);
}

void read_classes(Reader& r, const YAML::Node& n, std::vector<ClassConfig>& out,
                  std::vector<std::string>& inherited) {
  const std::vector<ClassConfig> builtins = default_classes();
  if (!n) {
    out = builtins;
    return;
  }
  if (!r.sequence(n, "classes")) return;
  if (n.size() == 0) r.error("classes", "must name at least one class (or be left out for the defaults)");
  for (std::size_t i = 0; i < n.size(); ++i) {
    const auto path = Reader::index("classes", i);
    const YAML::Node c = n[i];
    std::vector<std::string_view> known = key_names(class_policy_keys());
    known.insert(known.end(), {"name", "match", "max_tokens_cap", "supersede_by_user"});
    if (!r.map(c, path, known)) continue;
    // A class named like a built-in one starts from the built-in's scheduling
    // settings and cap (docs/configuration.md): listing `batch` to route it
    // must not silently make it foreground work. Its match rules are the
    // file's own: routing is what a listed class restates.
    ClassConfig cc;
    r.read(c, path, "name", cc.name, /*required=*/true);
    for (const ClassConfig& builtin : builtins) {
      if (builtin.name != cc.name) continue;
      cc.policy = builtin.policy;
      cc.max_tokens_cap = builtin.max_tokens_cap;
      cc.supersede_by_user = builtin.supersede_by_user;
      inherited.push_back(cc.name);
    }
    if (const YAML::Node m = c["match"]) {
      cc.match.emplace();
      read_class_match(r, m, Reader::join(path, "match"), *cc.match);
    }
    r.read_int(c, path, "max_tokens_cap", cc.max_tokens_cap, 1, INT32_MAX);
    cc.policy.name = cc.name;
    read_class_policy(r, c, path, cc.policy);
    r.read(c, path, "supersede_by_user", cc.supersede_by_user);
    out.push_back(std::move(cc));
  }
}

// A secret named by an environment variable or a file (its first line),
// read now so a missing one is a config error at start-up, not a 401 per
// request. Empty when neither is given or on error (reported).
std::string read_secret(Reader& r, const std::string& path, std::string_view env_key, const std::string& env,
                        std::string_view file_key, const std::string& file) {
  std::string secret;
  if (!env.empty() && !file.empty()) {
    r.error(Reader::join(path, std::string(env_key)),
            "give " + std::string(env_key) + " or " + std::string(file_key) + ", not both");
    return secret;
  }
  if (!env.empty()) {
    const char* value = std::getenv(env.c_str());
    if (value == nullptr || *value == '\0') {
      r.error(Reader::join(path, std::string(env_key)), "environment variable " + env + " is not set");
      return secret;
    }
    secret = value;
  } else if (!file.empty()) {
    std::ifstream in(file);
    if (!in || !std::getline(in, secret) || secret.empty()) {
      r.error(Reader::join(path, std::string(file_key)), "cannot read a key from " + file);
      return {};
    }
    while (!secret.empty() && (secret.back() == '\r' || secret.back() == ' ')) secret.pop_back();
  }
  return secret;
}

// api_key_env / api_key_file: the engine's key.
void read_backend_key(Reader& r, const YAML::Node& b, const std::string& path, BackendConfig& out) {
  r.read(b, path, "api_key_env", out.api_key_env);
  r.read(b, path, "api_key_file", out.api_key_file);
  const std::string key = read_secret(r, path, "api_key_env", out.api_key_env, "api_key_file", out.api_key_file);
  if (!key.empty()) out.authorization = "Bearer " + key;
}

bool is_loopback(const std::string& address) {
  return address == "127.0.0.1" || address == "::1" || address == "localhost" || address.starts_with("127.");
}

// The admin listener: its token, and the rules that keep it from
// exposing what it guards.
void read_admin(Reader& r, const YAML::Node& n, Config& c) {
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

void read_backend(Reader& r, const YAML::Node& b, const std::string& path, BackendConfig& out) {
  if (!r.map(b, path, std::vector<std::string_view>(std::begin(kBackendKeys), std::end(kBackendKeys))))
    return;
  std::string type = "http";
  r.read(b, path, "type", type);
  r.read(b, path, "name", out.name);
  r.read_int(b, path, "max_concurrency", out.max_concurrency, 1, 100000);
  r.read(b, path, "priority_scheduling", out.priority_scheduling);
  r.read_double(b, path, "prefill_tokens_per_s", out.prefill_tokens_per_s, 0, 1e9);
  if (const YAML::Node n = b["prefix_cache_tokens"]; n && n.IsScalar() && n.Scalar() == "auto") {
    out.prefix_cache_from_engine = true;
  } else {
    r.read_int(b, path, "prefix_cache_tokens", out.prefix_cache_tokens, 0, int64_t{1} << 40);
  }
  r.read_list(b, path, "classes", out.classes);
  r.read(b, path, "lend", out.lend);
  read_backend_key(r, b, path, out);
  std::string engine = "vllm";
  r.read(b, path, "engine", engine);
  if (engine == "sglang") {
    out.engine = EngineKind::kSglang;
  } else if (engine == "llamacpp") {
    out.engine = EngineKind::kLlamaCpp;
    if (out.priority_scheduling) {
      r.error(Reader::join(path, "priority_scheduling"), "llama.cpp server has no request priority");
    }
  } else if (engine != "vllm") {
    r.error(Reader::join(path, "engine"), "must be vllm, sglang or llamacpp, not '" + engine + "'");
  }
  r.read(b, path, "continue_final_message", out.continue_final_message);
  if (type == "sim") {
    // A simulated engine inside the gateway process (issue 3): no url.
    out.type = BackendType::kSim;
    out.sim_profile = "llama-8b-a100";
    r.read(b, path, "profile", out.sim_profile);
    if (!engine::find_profile(out.sim_profile)) {
      std::string known;
      for (auto name : engine::profile_names()) known += (known.empty() ? "" : ", ") + std::string(name);
      r.error(Reader::join(path, "profile"), "unknown profile '" + out.sim_profile + "' (known: " + known + ")");
    }
    r.read_int(b, path, "max_num_seqs", out.sim_max_num_seqs, 1, 100000);
    if (const engine::Profile* p = engine::find_profile(out.sim_profile)) {
      if (!b["prefill_tokens_per_s"]) out.prefill_tokens_per_s = engine::prefill_tokens_per_s(p->config);
      if (!b["prefix_cache_tokens"]) {
        out.prefix_cache_tokens = engine::kv_cache_tokens(p->config);
      }
    }
    for (const char* key : {"url", "ca_file", "cert_file", "key_file"}) {
      if (b[key]) r.error(Reader::join(path, key), "is not used by type sim");
    }
    return;
  }
  if (type != "http") {
    r.error(Reader::join(path, "type"), "must be http or sim, not '" + type + "'");
    return;
  }
  for (const char* key : {"profile", "max_num_seqs"}) {
    if (b[key]) r.error(Reader::join(path, key), "applies only to type sim");
  }
  std::string url;
  r.read(b, path, "url", url, /*required=*/true);
  if (url.empty()) return;
  auto parsed = boost::urls::parse_absolute_uri(url);
  const auto upath = Reader::join(path, "url");
  if (!parsed) {
    r.error(upath, "is not a valid URL: '" + url + "'");
    return;
  }
  if (parsed->scheme() != "http" && parsed->scheme() != "https") {
    r.error(upath, "scheme must be http or https");
    return;
  }
  if (!parsed->has_port() || parsed->port_number() == 0) {
    r.error(upath, "must name a port, e.g. http://127.0.0.1:8000");
    return;
  }
  out.tls = parsed->scheme() == "https";
  r.read(b, path, "ca_file", out.ca_file);
  r.read(b, path, "cert_file", out.cert_file);
  r.read(b, path, "key_file", out.key_file);
  if (!out.tls) {
    for (const char* key : {"ca_file", "cert_file", "key_file"}) {
      if (b[key]) r.error(Reader::join(path, key), "applies only to an https:// url");
    }
  } else if (out.cert_file.empty() != out.key_file.empty()) {
    r.error(Reader::join(path, out.cert_file.empty() ? "cert_file" : "key_file"),
            "cert_file and key_file go together (the gateway's client certificate)");
  } else if (auto ctx = make_client_tls(out); !ctx) {
    r.error(upath, ctx.error());
  }
  if (!parsed->encoded_path().empty() && parsed->encoded_path() != "/") {
    r.error(upath, "must not have a path: the gateway appends /v1/... itself");
    return;
  }
  out.host = parsed->host();
  out.port = parsed->port_number();
  if (!b["prefix_cache_tokens"]) out.prefix_cache_from_engine = true;  // auto
  if (out.name.empty()) out.name = out.host + ":" + std::to_string(out.port);
}

void read_models(Reader& r, const YAML::Node& n, std::vector<ModelConfig>& out) {
  if (!n) {
    r.error("models", "is required: name at least one model and its backends");
    return;
  }
  if (!r.sequence(n, "models")) return;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const auto path = Reader::index("models", i);
    const YAML::Node m = n[i];
    if (!r.map(m, path, std::vector<std::string_view>(std::begin(kModelKeys), std::end(kModelKeys)))) continue;
    ModelConfig mc;
    r.read(m, path, "name", mc.name, /*required=*/true);
    r.read(m, path, "degraded", mc.degraded);
    r.read(m, path, "fallback", mc.fallback);
    const auto bpath = Reader::join(path, "backends");
    const YAML::Node backends = m["backends"];
    if (!backends) {
      r.error(bpath, "is required");
    } else if (r.sequence(backends, bpath)) {
      if (backends.size() == 0) r.error(bpath, "must name at least one backend");
      for (std::size_t j = 0; j < backends.size(); ++j) {
        BackendConfig bc;
        read_backend(r, backends[j], Reader::index(bpath, j), bc);
        if (bc.type == BackendType::kSim && bc.name.empty()) {
          bc.name = "sim-" + mc.name + "-" + std::to_string(j);
        }
        mc.backends.push_back(std::move(bc));
      }
    }
    out.push_back(std::move(mc));
  }
}

// `prices`: one entry per priced model (docs/configuration.md), each
// setting at least one price.
void read_prices(Reader& r, const YAML::Node& n, std::vector<ModelPrice>& out) {
  if (!n || !r.sequence(n, "prices")) return;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const auto path = Reader::index("prices", i);
    if (!r.map(n[i], path, keys_of(kPriceKeys))) continue;
    ModelPrice p;
    r.read(n[i], path, "model", p.model, /*required=*/true);
    constexpr double kMax = 1e12;
    r.read_double(n[i], path, "input_per_million", p.input_per_million, 0, kMax);
    r.read_double(n[i], path, "output_per_million", p.output_per_million, 0, kMax);
    if (n[i]["cached_input_per_million"]) {
      p.cached_input_per_million.emplace();
      r.read_double(n[i], path, "cached_input_per_million", *p.cached_input_per_million, 0, kMax);
    }
    r.read_double(n[i], path, "per_gpu_second", p.per_gpu_second, 0, kMax);
    const auto sets = [&](std::string_view key) { return static_cast<bool>(n[i][std::string(key)]); };
    if (std::none_of(std::begin(kPriceKeys) + 1, std::end(kPriceKeys), sets)) {  // all but `model`
      r.error(path, "sets no price (input_per_million, output_per_million, cached_input_per_million or per_gpu_second)");
    }
    out.push_back(std::move(p));
  }
}

template <class T, class NameOf>
void check_unique(Reader& r, const std::vector<T>& items, const std::string& list, NameOf name_of) {
  std::set<std::string> seen;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string& name = name_of(items[i]);
    if (!name.empty() && !seen.insert(name).second) {
      r.error(Reader::index(list, i) + ".name", "duplicate name '" + name + "'");
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
void check_names(Reader& r, const std::vector<std::string>& names, const std::string& path, const Items& items,
                 const char* what) {
  for (std::size_t j = 0; j < names.size(); ++j) {
    if (!has_named(items, names[j])) {
      r.error(Reader::index(path, j), std::string("names no ") + what + ": '" + names[j] + "'");
    }
  }
}

// Quota scopes name classes and models that exist; a team's quotas apply
// to some tenant (one whose `team` it is).
void check_quota_references(Reader& r, const Config& c) {
  auto check_scopes = [&](const std::string& owner, const std::vector<quota::QuotaLimits>& quotas) {
    for (std::size_t i = 0; i < quotas.size(); ++i) {
      const auto path = Reader::index(owner + ".quotas", i);
      check_names(r, quotas[i].classes, path + ".classes", c.classes, "class");
      check_names(r, quotas[i].models, path + ".models", c.models, "model");
    }
  };
  for (std::size_t i = 0; i < c.tenants.size(); ++i) check_scopes(Reader::index("tenants", i), c.tenants[i].quotas);
  check_unique(r, c.teams, "teams", [](const quota::TeamConfig& t) -> const std::string& { return t.name; });
  for (std::size_t i = 0; i < c.teams.size(); ++i) {
    check_scopes(Reader::index("teams", i), c.teams[i].quotas);
    const auto& name = c.teams[i].name;
    if (std::none_of(c.tenants.begin(), c.tenants.end(), [&](auto& t) { return t.team == name; })) {
      r.error(Reader::index("teams", i) + ".name", "no tenant is in team '" + name + "' (tenants[].team)");
    }
  }
}

// quota_store.redis is host:port.
void check_quota_store(Reader& r, const quota::QuotaStoreConfig& store) {
  if (!store.redis.empty() && !parse_redis_address(store.redis)) {
    r.error("quota_store.redis", "must be host:port, e.g. 127.0.0.1:6379");
  }
}

// Each price names a configured model, once.
void check_prices(Reader& r, const Config& c, const std::vector<ModelPrice>& prices) {
  std::set<std::string> seen;
  for (std::size_t i = 0; i < prices.size(); ++i) {
    const std::string& name = prices[i].model;
    const auto path = Reader::index("prices", i) + ".model";
    if (name.empty()) continue;  // already an error: required
    if (!has_named(c.models, name)) {
      r.error(path, "names no model: '" + name + "'");
    } else if (!seen.insert(name).second) {
      r.error(path, "model '" + name + "' is priced twice");
    }
  }
}

// A model's degraded variant and fallback name other models.
void check_model_variants(Reader& r, const Config& c) {
  for (std::size_t i = 0; i < c.models.size(); ++i) {
    const ModelConfig& m = c.models[i];
    for (const auto& [key, target] : {std::pair{"degraded", &m.degraded}, std::pair{"fallback", &m.fallback}}) {
      if (target->empty()) continue;
      const auto path = Reader::join(Reader::index("models", i), key);
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

void check_references(Reader& r, Config& c) {
  check_unique(r, c.models, "models", [](const ModelConfig& m) -> const std::string& { return m.name; });
  check_unique(r, c.classes, "classes", [](const ClassConfig& x) -> const std::string& { return x.name; });
  check_unique(r, c.tenants, "tenants", [](const TenantConfig& t) -> const std::string& { return t.name; });
  for (std::size_t i = 0; i < c.models.size(); ++i) {
    check_unique(r, c.models[i].backends, Reader::index("models", i) + ".backends",
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
    check_names(r, t.allowed_classes, Reader::index("tenants", i) + ".allowed_classes", c.classes, "class");
    for (const auto& h : t.key_sha256) {
      if (!key_hashes.insert(h).second) {
        r.error(Reader::index("tenants", i), "an API key is shared with another tenant");
      }
    }
    if (!t.client_cert_names.empty() && c.listener.tls.client_cert == "off") {
      r.error(Reader::index("tenants", i) + ".client_cert_names",
              "no client certificate is asked for: set listener.tls.client_cert to optional or required");
    }
    for (const auto& name : t.client_cert_names) {
      if (!cert_names.insert(name).second) {
        r.error(Reader::index("tenants", i) + ".client_cert_names", "'" + name + "' names another tenant too");
      }
    }
  }
  for (std::size_t i = 0; i < c.classes.size(); ++i) {
    if (!c.classes[i].match) continue;
    const auto path = Reader::index("classes", i) + ".match";
    check_names(r, c.classes[i].match->tenants, path + ".tenants", c.tenants, "tenant");
    check_names(r, c.classes[i].match->models, path + ".models", c.models, "model");
  }
  check_quota_references(r, c);
  check_quota_store(r, c.quota_store);
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
        r.error(Reader::index(Reader::index("models", i) + ".backends", j) + ".lend",
                "differs from another backend with the same classes: a pool lends or does not");
      }
      for (std::size_t k = 0; k < backends[j].classes.size(); ++k) {
        const std::string& name = backends[j].classes[k];
        const auto path = Reader::index(Reader::index(Reader::index("models", i) + ".backends", j) + ".classes", k);
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
        r.error(Reader::index("models", i) + ".backends",
                "no backend serves class '" + cls.name + "' (name it, or leave one backend without classes)");
      }
    }
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
                                     .fallback = m.fallback});
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
  Reader r;
  ConfigErrors& errors = r.errors;
  Config c;
  if (!r.map(root, "(top level)", {"listener", "admin", "limits", "timeouts", "auth", "tenants", "teams",
                                    "quota_store", "traffic_breaker", "classes", "default_class", "models", "prices",
                                    "scheduler", "engine_signals", "outlier_detection", "retries",
                                    "health_probes", "model_breaker", "log"})) {
    return std::unexpected(errors);
  }
  read_listener(r, root["listener"], c.listener);
  read_admin(r, root["admin"], c);
  read_section(limits_keys(), r, root["limits"], "limits", c.limits);
  read_section(timeouts_keys(), r, root["timeouts"], "timeouts", c.timeouts);
  read_section(auth_keys(), r, root["auth"], "auth", c.auth);
  read_tenants(r, root["tenants"], c.tenants);
  read_teams(r, root["teams"], c.teams);
  read_section(quota_store_keys(), r, root["quota_store"], "quota_store", c.quota_store);
  read_section(traffic_breaker_keys(), r, root["traffic_breaker"], "traffic_breaker", c.traffic_breaker);
  if (auto why = quota::validate(quota::breaker_settings(c.traffic_breaker))) r.error("traffic_breaker", *why);
  read_classes(r, root["classes"], c.classes, c.inherited_classes);
  r.read(root, "", "default_class", c.default_class);
  read_models(r, root["models"], c.models);
  std::vector<ModelPrice> prices;
  read_prices(r, root["prices"], prices);
  read_section(scheduler_keys(), r, root["scheduler"], "scheduler", c.scheduler);
  read_section(engine_signals_keys(), r, root["engine_signals"], "engine_signals", c.engine_signals);
  read_section(outlier_detection_keys(), r, root["outlier_detection"], "outlier_detection", c.outlier_detection);
  read_section(retries_keys(), r, root["retries"], "retries", c.retries);
  if (c.retries.backoff_max < c.retries.backoff_base) r.error("retries.backoff_max_ms", "must be >= backoff_base_ms");
  read_section(health_probes_keys(), r, root["health_probes"], "health_probes", c.health_probes);
  read_section(model_breaker_keys(), r, root["model_breaker"], "model_breaker", c.model_breaker);
  read_section(log_keys(), r, root["log"], "log", c.log);
  check_references(r, c);
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
