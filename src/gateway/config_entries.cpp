#include "gateway/config_entries.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include <boost/url/parse.hpp>

#include "core/tenants.hpp"
#include "engine/profile.hpp"
#include "gateway/stages/degrade/degrade_config_section.hpp"
#include "http/tls_context.hpp"
#include "yaml/setting_rows.hpp"

namespace arbiter {
namespace {

using namespace setting_rows;

// Whether `node` has any of `keys`.
bool has_any(const YAML::Node& node, std::initializer_list<const char*> keys) {
  return std::any_of(keys.begin(), keys.end(), [&](const char* key) { return static_cast<bool>(node[key]); });
}

// A flow mapping of `keys`' settings: {a: 1, b: 2}. (Appended, not
// "{" + ... + "}": GCC 12 warns wrongly about the latter, -Wrestrict.)
template <class Settings>
std::string flow_mapping(std::span<const SettingKey<Settings>> keys, const Settings& s) {
  std::string out(1, '{');
  out += write_settings(keys, s, ", ");
  out += '}';
  return out;
}

// One of `choices` into an enum member: the value's place in the list. The
// message names the refused value where it always has (engine, type).
template <class S, auto Member, const std::string_view* Choices, std::size_t N, bool NameValue = true>
void read_enum(YamlReader& r, const YAML::Node& v, const std::string& path, S& s) {
  const auto text = r.scalar(v, path);
  if (!text) return;
  std::string allowed;
  for (std::size_t i = 0; i < N; ++i) {
    if (*text == Choices[i]) {
      s.*Member = static_cast<std::remove_reference_t<decltype(s.*Member)>>(i);
      return;
    }
    allowed += (i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(Choices[i]);
  }
  r.error(path, "must be " + allowed + (NameValue ? ", not '" + *text + "'" : ""));
}
template <class S, auto Member, const std::string_view* Choices>
std::string write_enum(const S& s) {
  return std::string(Choices[static_cast<std::size_t>(s.*Member)]);
}

// ---- quotas[] (docs/quotas.md) ----

using Q = quota::QuotaLimits;
constexpr double kMaxRate = 1e15;
constexpr SettingKey<Q> kQuotaKeys[] = {
    {"requests_per_minute", "number in [0.001, 1e15]", read_optional_number<Q, &Q::requests_per_minute, 0.001, kMaxRate>,
     write_optional_number<Q, &Q::requests_per_minute>},
    {"tokens_per_minute", "number in [0.001, 1e15]", read_optional_number<Q, &Q::tokens_per_minute, 0.001, kMaxRate>,
     write_optional_number<Q, &Q::tokens_per_minute>},
    {"tokens_per_day", "number in [0.001, 1e15]", read_optional_number<Q, &Q::tokens_per_day, 0.001, kMaxRate>,
     write_optional_number<Q, &Q::tokens_per_day>},
    {"max_concurrent", "integer in [1, 10000000]", read_optional_integer<Q, &Q::max_concurrent, 1, 10'000'000>,
     write_optional_integer<Q, &Q::max_concurrent>},
    {"classes", "list of class names", read_strings<Q, &Q::classes>, write_strings<Q, &Q::classes>},
    {"models", "list of model names", read_strings<Q, &Q::models>, write_strings<Q, &Q::models>},
};

// A tenant's or team's `quotas`: a flow list of quota entries.
template <class S, auto Member>
void read_quotas(YamlReader& r, const YAML::Node& v, const std::string& path, S& s) {
  read_entries(read_quota, r, v, path, s.*Member);
}
template <class S, auto Member>
std::string write_quotas(const S& s) {
  std::vector<std::string> entries;
  for (const Q& q : s.*Member) entries.push_back(flow_mapping(quota_keys(), q));
  return flow_list(entries);
}

// ---- tenants[] ----

bool is_sha256_hex(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// api_keys: plain keys, kept only as their SHA-256 (and never written).
void read_api_keys(YamlReader& r, const YAML::Node& v, const std::string& path, TenantConfig& t) {
  for (const auto& key : read_string_list(r, v, path)) t.key_sha256.push_back(sha256_hex(key));
}
std::string write_nothing(const TenantConfig&) { return {}; }

void read_key_hashes(YamlReader& r, const YAML::Node& v, const std::string& path, TenantConfig& t) {
  const std::vector<std::string> hashes = read_string_list(r, v, path);
  for (std::size_t j = 0; j < hashes.size(); ++j) {
    std::string h = hashes[j];
    std::transform(h.begin(), h.end(), h.begin(), [](unsigned char c) { return std::tolower(c); });
    if (!is_sha256_hex(h)) {
      r.error(YamlReader::index(path, j), "must be 64 hex digits");
    } else {
      t.key_sha256.push_back(h);
    }
  }
}

constexpr std::string_view kStoreDownPolicies[] = {"local", "open", "closed"};  // quota::StoreDownPolicy's order

using T = TenantConfig;
constexpr SettingKey<T> kTenantKeys[] = {
    {"name", "text, unique", read_name<T, &T::name>, write_text<T, &T::name>, true},
    {"team", "a team's name", read_text<T, &T::team>, write_text<T, &T::team>},
    {"weight", "number in [0.001, 1000]", read_number<T, &T::weight, 0.001, 1000.0>, write_number<T, &T::weight>},
    {"max_running", "integer in [0, 100000]", read_integer<T, &T::max_running, 0, 100'000>,
     write_integer<T, &T::max_running>},
    {"max_share", "number in [0, 1]", read_number<T, &T::max_share, 0.0, 1.0>, write_number<T, &T::max_share>},
    {"max_priority_raise", "integer in [0, 1000000]", read_integer<T, &T::max_priority_raise, 0, 1'000'000>,
     write_integer<T, &T::max_priority_raise>},
    {"min_ttft_hint_ms", "milliseconds in [0, 86400000] (0: the class's own target)",
     read_ms<T, &T::min_ttft_hint, 0, 86'400'000>, write_ms<T, &T::min_ttft_hint>},
    {"api_keys", "list of keys", read_api_keys, write_nothing},
    {"api_key_sha256", "list of 64 hex digits", read_key_hashes, write_strings<T, &T::key_sha256>},
    {"client_cert_names", "list of names", read_strings<T, &T::client_cert_names>,
     write_strings<T, &T::client_cert_names>},
    {"allowed_classes", "list of class names", read_strings<T, &T::allowed_classes>,
     write_strings<T, &T::allowed_classes>},
    {"quotas", "list of quota entries", read_quotas<T, &T::quotas>, write_quotas<T, &T::quotas>},
    {"quota_store_down", "local, open or closed", read_enum<T, &T::quota_store_down, kStoreDownPolicies, 3, false>,
     write_enum<T, &T::quota_store_down, kStoreDownPolicies>},
};

// ---- teams[] and their dynamic_quota ----

using D = quota::DynamicQuotaConfig;
constexpr std::string_view kDynamicLimits[] = {"requests_per_minute", "tokens_per_minute"};  // D::tokens: false, true
constexpr SettingKey<D> kDynamicQuotaKeys[] = {
    {"members", "number in [0.001, 1e9]", read_number<D, &D::members, 0.001, 1e9>, write_number<D, &D::members>},
    {"per_member", "number in [0.001, 1e12]", read_number<D, &D::per_member, 0.001, 1e12>,
     write_number<D, &D::per_member>},
    {"complexity", "number in [0.001, 1000]", read_number<D, &D::complexity, 0.001, 1000.0>,
     write_number<D, &D::complexity>},
    {"recompute_s", "integer in [1, 86400] (seconds)", read_seconds<D, &D::every, 1, 86'400>, write_seconds<D, &D::every>},
    {"limit", "requests_per_minute or tokens_per_minute", read_enum<D, &D::tokens, kDynamicLimits, 2, false>,
     write_enum<D, &D::tokens, kDynamicLimits>},
};

using Team = quota::TeamConfig;
void read_dynamic_quota(YamlReader& r, const YAML::Node& v, const std::string& path, Team& team) {
  D d;
  if (!r.map(v, path, key_names(dynamic_quota_keys()))) return;
  // Its own words: members is the one setting without a usable default.
  if (!v["members"]) r.error(path, "needs members (the team's size)");
  read_settings(dynamic_quota_keys(), r, v, path, d);
  team.dynamic_quota = d;
}
std::string write_dynamic_quota(const Team& team) {
  return team.dynamic_quota ? flow_mapping(dynamic_quota_keys(), *team.dynamic_quota) : "";
}

constexpr SettingKey<Team> kTeamKeys[] = {
    {"name", "a name some tenant's team is", read_name<Team, &Team::name>, write_text<Team, &Team::name>, true},
    {"quotas", "list of quota entries", read_quotas<Team, &Team::quotas>, write_quotas<Team, &Team::quotas>},
    {"dynamic_quota", "a mapping (below)", read_dynamic_quota, write_dynamic_quota},
};

// ---- aliases[], their targets[] and canary ----

using AT = rollout::AliasTarget;
constexpr SettingKey<AT> kAliasTargetKeys[] = {
    {"model", "a model's name", read_name<AT, &AT::model>, write_text<AT, &AT::model>, true},
    {"weight", "number in [0, 1000000]", read_number<AT, &AT::weight, 0.0, 1e6>, write_number<AT, &AT::weight>},
};

using CC = rollout::CanaryConfig;
void read_steps(YamlReader& r, const YAML::Node& v, const std::string& path, CC& c) {
  if (!r.sequence(v, path)) return;
  c.steps.clear();
  for (std::size_t i = 0; i < v.size(); ++i) {
    double step = 0;
    const std::string at = YamlReader::index(path, i);
    if (!v[i].IsScalar() || !YAML::convert<double>::decode(v[i], step) || !(step > 0 && step <= 100)) {
      r.error(at, "must be a percent in (0, 100]");
      continue;
    }
    if (!c.steps.empty() && step <= c.steps.back()) r.error(at, "must be above the step before it");
    c.steps.push_back(step);
  }
}
std::string write_steps(const CC& c) {
  std::vector<std::string> steps;
  for (const double s : c.steps) steps.push_back(YamlReader::format_number(s));
  return flow_list(steps);
}
constexpr SettingKey<CC> kCanaryKeys[] = {
    {"target", "one of the alias's target models", read_name<CC, &CC::target>, write_text<CC, &CC::target>, true},
    {"margin", "number in [0, 10]", read_number<CC, &CC::margin, 0.0, 10.0>, write_number<CC, &CC::margin>},
    {"window_s", "integer in [1, 86400] (seconds)", read_seconds<CC, &CC::window, 1, 86'400>, write_seconds<CC, &CC::window>},
    {"min_requests", "integer in [1, 1000000]", read_integer<CC, &CC::min_requests, 1, 1'000'000>,
     write_integer<CC, &CC::min_requests>},
    {"steps", "list of percents in (0, 100], rising", read_steps, write_steps},
    {"step_after_s", "integer in [1, 86400] (seconds)", read_seconds<CC, &CC::step_after, 1, 86'400>,
     write_seconds<CC, &CC::step_after>},
};

bool read_alias_target(YamlReader& r, const YAML::Node& v, const std::string& path, AT& t) {
  return read_entry(alias_target_keys(), r, v, path, t);
}

using SC = rollout::ShadowConfig;
constexpr SettingKey<SC> kShadowKeys[] = {
    {"model", "a model's name, none of the alias's targets", read_name<SC, &SC::model>, write_text<SC, &SC::model>, true},
    {"share", "number in [0.0001, 1]", read_number<SC, &SC::share, 0.0001, 1.0>, write_number<SC, &SC::share>},
    {"max_concurrency", "integer in [1, 1024]", read_integer<SC, &SC::max_concurrency, 1, 1024>,
     write_integer<SC, &SC::max_concurrency>},
    {"timeout_s", "integer in [1, 3600] (seconds)", read_seconds<SC, &SC::timeout, 1, 3600>, write_seconds<SC, &SC::timeout>},
};

using AC = rollout::AliasConfig;
void read_alias_targets(YamlReader& r, const YAML::Node& v, const std::string& path, AC& a) {
  if (!r.sequence(v, path)) return;
  if (v.size() == 0) r.error(path, "must name at least one target");
  read_entries(read_alias_target, r, v, path, a.targets);
}
std::string write_alias_targets(const AC& a) {
  std::vector<std::string> targets;
  for (const AT& t : a.targets) targets.push_back(flow_mapping(alias_target_keys(), t));
  return flow_list(targets);
}
void read_canary(YamlReader& r, const YAML::Node& v, const std::string& path, AC& a) {
  CC c;
  if (!read_entry(canary_keys(), r, v, path, c)) return;
  a.canary = std::move(c);
}
std::string write_canary(const AC& a) {
  return a.canary ? flow_mapping(canary_keys(), *a.canary) : "";
}
void read_shadow(YamlReader& r, const YAML::Node& v, const std::string& path, AC& a) {
  SC c;
  if (!read_entry(shadow_keys(), r, v, path, c)) return;
  a.shadow = std::move(c);
}
std::string write_shadow(const AC& a) { return a.shadow ? flow_mapping(shadow_keys(), *a.shadow) : ""; }

constexpr std::string_view kStickies[] = {"session", "tenant", "none"};  // rollout::Sticky's order
constexpr SettingKey<AC> kAliasKeys[] = {
    {"name", "text, unique, no model's name", read_name<AC, &AC::name>, write_text<AC, &AC::name>, true},
    {"targets", "list of {model, weight}", read_alias_targets, write_alias_targets, true},
    {"sticky", "session, tenant or none", read_enum<AC, &AC::sticky, kStickies, 3>,
     write_enum<AC, &AC::sticky, kStickies>},
    {"canary", "a mapping (below)", read_canary, write_canary},
    {"shadow", "a mapping (below)", read_shadow, write_shadow},
};

// ---- classes[] and their match ----

void read_routes(YamlReader& r, const YAML::Node& v, const std::string& path, ClassMatch& m) {
  const std::vector<std::string> routes = read_string_list(r, v, path);
  for (std::size_t i = 0; i < routes.size(); ++i) {
    if (auto route = route_from_path(routes[i])) {
      m.routes.push_back(*route);
    } else {
      r.error(YamlReader::index(path, i),
              "unknown route '" + routes[i] + "' (use /v1/chat/completions or /v1/completions)");
    }
  }
}
std::string write_routes(const ClassMatch& m) {
  std::vector<std::string> paths;
  for (Route route : m.routes) paths.emplace_back(route_path(route));
  return flow_list(paths);
}

using M = ClassMatch;
constexpr SettingKey<M> kClassMatchKeys[] = {
    {"routes", "list of /v1/chat/completions, /v1/completions", read_routes, write_routes},
    {"models", "list of model names", read_strings<M, &M::models>, write_strings<M, &M::models>},
    {"tenants", "list of tenant names", read_strings<M, &M::tenants>, write_strings<M, &M::tenants>},
    {"max_tokens_at_least", "integer in [1, 2147483647]", read_optional_integer<M, &M::max_tokens_at_least, 1, INT32_MAX>,
     write_optional_integer<M, &M::max_tokens_at_least>},
    {"max_tokens_at_most", "integer in [1, 2147483647]", read_optional_integer<M, &M::max_tokens_at_most, 1, INT32_MAX>,
     write_optional_integer<M, &M::max_tokens_at_most>},
};

// The name first: a built-in's name brings the built-in's settings, which
// the entry's other keys then override.
void read_class_name(YamlReader& r, const YAML::Node& v, const std::string& path, ClassConfig& c) {
  read_name<ClassConfig, &ClassConfig::name>(r, v, path, c);
  for (const ClassConfig& builtin : default_classes()) {
    if (builtin.name != c.name) continue;
    c.policy = builtin.policy;
    c.max_tokens_cap = builtin.max_tokens_cap;
    c.supersede_by_user = builtin.supersede_by_user;
  }
}

void read_match(YamlReader& r, const YAML::Node& v, const std::string& path, ClassConfig& c) {
  c.match.emplace();
  read_entry(class_match_keys(), r, v, path, *c.match);
}
std::string write_match(const ClassConfig& c) {
  return c.match ? flow_mapping(class_match_keys(), *c.match) : "";
}

void read_degrade(YamlReader& r, const YAML::Node& v, const std::string& path, ClassConfig& c) {
  c.degrade.emplace();
  read_entry(class_degrade_keys(), r, v, path, *c.degrade);
}
std::string write_degrade(const ClassConfig& c) {
  return c.degrade ? flow_mapping(class_degrade_keys(), *c.degrade) : "";
}

void read_class_cache(YamlReader& r, const YAML::Node& v, const std::string& path, ClassConfig& c) {
  read_entry(class_cache_keys(), r, v, path, c.cache);
}
std::string write_class_cache(const ClassConfig& c) {
  const cache::ClassCacheConfig& k = c.cache;
  return k.enabled || k.near || k.tools ? flow_mapping(class_cache_keys(), k) : "";
}

using C = ClassConfig;
constexpr SettingKey<C> kClassKeys[] = {
    {"name", "text, unique", read_class_name, write_text<C, &C::name>, true},
    {"match", "a mapping of rules", read_match, write_match},
    {"max_tokens_cap", "integer in [1, 2147483647]", read_optional_integer<C, &C::max_tokens_cap, 1, INT32_MAX>,
     write_optional_integer<C, &C::max_tokens_cap>},
    {"supersede_by_user", "true or false", read_bool<C, &C::supersede_by_user>, write_bool<C, &C::supersede_by_user>},
    {"degrade", "a mapping of staged-degradation actions", read_degrade, write_degrade},
    {"cache", "a mapping of result-cache choices", read_class_cache, write_class_cache},
};

// ---- models[] and their backends[] ----

using B = BackendConfig;

// `auto` (the engine's own figure, once scraped) or a number of tokens.
void read_prefix_cache(YamlReader& r, const YAML::Node& v, const std::string& path, B& b) {
  if (v.IsScalar() && v.Scalar() == "auto") {
    b.prefix_cache_from_engine = true;
  } else {
    read_integer<B, &B::prefix_cache_tokens, 0, int64_t{1} << 40>(r, v, path, b);
  }
}
std::string write_prefix_cache(const B& b) {
  return b.prefix_cache_from_engine ? std::string("auto") : std::to_string(b.prefix_cache_tokens);
}

constexpr std::string_view kEngines[] = {"vllm", "sglang", "llamacpp"};  // EngineKind's order
constexpr std::string_view kBackendTypes[] = {"http", "sim"};            // BackendType's order

// type sim's own keys, left out for type http.
template <auto Write>
std::string write_if_sim(const B& b) {
  return b.type == BackendType::kSim ? Write(b) : std::string();
}

// host, port and TLS from an engine's url; the port stays 0 when the url
// is refused. A path is refused too, but host and port are kept: the TLS
// files are still checked against the scheme. After `type` (the table's
// order): type sim takes no url, which its check says.
void read_url(YamlReader& r, const YAML::Node& v, const std::string& path, B& b) {
  if (b.type == BackendType::kSim) return;
  const auto url = r.scalar(v, path);
  if (!url) return;
  if (url->empty()) {
    r.error(path, "must not be empty");
    return;
  }
  auto parsed = boost::urls::parse_absolute_uri(*url);
  if (!parsed) {
    r.error(path, "is not a valid URL: '" + *url + "'");
    return;
  }
  if (parsed->scheme() != "http" && parsed->scheme() != "https") {
    r.error(path, "scheme must be http or https");
    return;
  }
  if (!parsed->has_port() || parsed->port_number() == 0) {
    r.error(path, "must name a port, e.g. http://127.0.0.1:8000");
    return;
  }
  if (!parsed->encoded_path().empty() && parsed->encoded_path() != "/") {
    r.error(path, "must not have a path: the gateway appends /v1/... itself");
  }
  b.tls = parsed->scheme() == "https";
  b.host = parsed->host();
  b.port = parsed->port_number();
}
std::string write_url(const B& b) {
  if (b.type != BackendType::kHttp || b.port == 0) return {};
  return "\"" + std::string(b.tls ? "https" : "http") + "://" + b.host + ":" + std::to_string(b.port) + "\"";
}

constexpr SettingKey<B> kBackendKeys[] = {
    {"name", "text (default host:port)", read_text<B, &B::name>, write_text<B, &B::name>},
    {"max_concurrency", "integer in [1, 100000]", read_integer<B, &B::max_concurrency, 1, 100'000>,
     write_integer<B, &B::max_concurrency>},
    {"priority_scheduling", "true or false", read_bool<B, &B::priority_scheduling>,
     write_bool<B, &B::priority_scheduling>},
    {"stream_usage", "true or false", read_bool<B, &B::stream_usage>, write_bool<B, &B::stream_usage>},
    {"prefill_tokens_per_s", "number in [0, 1e9]", read_number<B, &B::prefill_tokens_per_s, 0.0, 1e9>,
     write_number<B, &B::prefill_tokens_per_s>},
    {"prefix_cache_tokens", "auto, or integer in [0, 2^40]", read_prefix_cache, write_prefix_cache},
    {"classes", "list of class names", read_strings<B, &B::classes>, write_strings<B, &B::classes>},
    {"lend", "true or false", read_bool<B, &B::lend>, write_bool<B, &B::lend>},
    {"adapters", "list of LoRA adapter names", read_strings<B, &B::adapters>, write_strings<B, &B::adapters>},
    {"max_loras", "integer in [1, 1024]", read_integer<B, &B::max_loras, 1, 1024>, write_integer<B, &B::max_loras>},
    {"responses", "true or false", read_bool<B, &B::responses>, write_bool<B, &B::responses>},
    // Where the engine's key comes from, never the key.
    {"api_key_env", "an environment variable's name", read_text<B, &B::api_key_env>,
     write_text_if_set<B, &B::api_key_env>},
    {"api_key_file", "a file path", read_text<B, &B::api_key_file>, write_text_if_set<B, &B::api_key_file>},
    {"engine", "vllm, sglang or llamacpp", read_enum<B, &B::engine, kEngines, 3>, write_enum<B, &B::engine, kEngines>},
    {"continue_final_message", "true or false", read_bool<B, &B::continue_final_message>,
     write_bool<B, &B::continue_final_message>},
    {"type", "http or sim", read_enum<B, &B::type, kBackendTypes, 2>, write_enum<B, &B::type, kBackendTypes>},
    {"profile", "an engine profile's name", read_text<B, &B::sim_profile>,
     write_if_sim<write_text<B, &B::sim_profile>>},
    {"max_num_seqs", "integer in [1, 100000]", read_optional_integer<B, &B::sim_max_num_seqs, 1, 100'000>,
     write_optional_integer<B, &B::sim_max_num_seqs>},
    {"url", "http://host:port or https://host:port", read_url, write_url},
    {"ca_file", "a PEM file", read_text<B, &B::ca_file>, write_text_if_set<B, &B::ca_file>},
    {"cert_file", "a PEM file", read_text<B, &B::cert_file>, write_text_if_set<B, &B::cert_file>},
    {"key_file", "a PEM file", read_text<B, &B::key_file>, write_text_if_set<B, &B::key_file>},
};

// A simulated engine inside the gateway process (issue 3): no url; what the
// entry leaves out comes from its profile.
void check_sim_backend(YamlReader& r, const YAML::Node& b, const std::string& path, B& out) {
  if (!b["profile"]) out.sim_profile = "llama-8b-a100";
  const engine::Profile* profile = engine::find_profile(out.sim_profile);
  if (!profile) {
    std::string known;
    for (auto name : engine::profile_names()) known += (known.empty() ? "" : ", ") + std::string(name);
    r.error(YamlReader::join(path, "profile"), "unknown profile '" + out.sim_profile + "' (known: " + known + ")");
  } else {
    if (!b["prefill_tokens_per_s"]) out.prefill_tokens_per_s = engine::prefill_tokens_per_s(profile->config);
    if (!b["prefix_cache_tokens"]) out.prefix_cache_tokens = engine::kv_cache_tokens(profile->config);
  }
  for (const char* key : {"url", "ca_file", "cert_file", "key_file"}) {
    if (b[key]) r.error(YamlReader::join(path, key), "is not used by type sim");
  }
}

// An engine at `url`: host and port from it, TLS for https (its files
// loaded now, so a bad one is a config error).
void check_http_backend(YamlReader& r, const YAML::Node& b, const std::string& path, B& out) {
  for (const char* key : {"profile", "max_num_seqs"}) {
    if (b[key]) r.error(YamlReader::join(path, key), "applies only to type sim");
  }
  const auto upath = YamlReader::join(path, "url");
  if (!b["url"]) r.error(upath, "is required");
  if (out.port == 0) return;  // refused
  if (!out.tls) {
    for (const char* key : {"ca_file", "cert_file", "key_file"}) {
      if (b[key]) r.error(YamlReader::join(path, key), "applies only to an https:// url");
    }
  } else if (out.cert_file.empty() != out.key_file.empty()) {
    r.error(YamlReader::join(path, out.cert_file.empty() ? "cert_file" : "key_file"),
            "cert_file and key_file go together (the gateway's client certificate)");
  } else if (auto ctx = make_client_tls(out); !ctx) {
    r.error(upath, ctx.error());
  }
  if (!b["prefix_cache_tokens"]) out.prefix_cache_from_engine = true;  // auto
  if (!b["responses"]) out.responses = out.engine == EngineKind::kVllm;
  if (out.name.empty()) out.name = out.host + ":" + std::to_string(out.port);
}

// A model's backends, each in the list even when it is no mapping (as
// ever: it keeps the model's pools as the file has them).
void read_backends(YamlReader& r, const YAML::Node& v, const std::string& path, ModelConfig& m) {
  if (!r.sequence(v, path)) return;
  if (v.size() == 0) r.error(path, "must name at least one backend");
  for (std::size_t j = 0; j < v.size(); ++j) {
    BackendConfig bc;
    read_backend(r, v[j], YamlReader::index(path, j), bc);
    if (bc.type == BackendType::kSim && bc.name.empty()) bc.name = "sim-" + m.name + "-" + std::to_string(j);
    m.backends.push_back(std::move(bc));
  }
}
// A block list under the model's entry (models are top-level: the indent
// is known).
std::string write_backends(const ModelConfig& m) {
  std::string out;
  for (const BackendConfig& b : m.backends) out += "\n      - " + write_settings(backend_keys(), b, "\n        ");
  return out;
}

// A model's own adaptive_capacity: only its shape here; its keys are read
// over the global section's once that is known (parse_config).
void read_model_adaptive_capacity(YamlReader& r, const YAML::Node& v, const std::string& path, ModelConfig&) {
  if (!v.IsMap()) r.error(path, "must be a mapping of adaptive_capacity's keys");
}
std::string write_model_adaptive_capacity(const ModelConfig& m) {
  if (!m.adaptive_capacity) return "";
  return "{" + write_settings(adaptive_capacity_keys(), *m.adaptive_capacity, ", ") + "}";
}

// Written only when off (the default is on).
std::string write_model_cache(const ModelConfig& m) { return m.cache ? "" : "false"; }

using Mo = ModelConfig;
constexpr SettingKey<Mo> kModelKeys[] = {
    {"name", "text, unique", read_name<Mo, &Mo::name>, write_text<Mo, &Mo::name>, true},
    {"backends", "list of backend entries (at least one)", read_backends, write_backends, true},
    {"degraded", "a model's name", read_text<Mo, &Mo::degraded>, write_text_if_set<Mo, &Mo::degraded>},
    {"fallback", "a model's name", read_text<Mo, &Mo::fallback>, write_text_if_set<Mo, &Mo::fallback>},
    {"adaptive_capacity", "a mapping of adaptive_capacity's keys (over the global section's)",
     read_model_adaptive_capacity, write_model_adaptive_capacity},
    {"cache", "true or false", read_bool<Mo, &Mo::cache>, write_model_cache},
};

// ---- prices[] ----

using P = ModelPrice;
constexpr double kMaxPrice = 1e12;
constexpr SettingKey<P> kPriceKeys[] = {
    {"model", "a model's name", read_name<P, &P::model>, write_text<P, &P::model>, true},
    {"input_per_million", "number in [0, 1e12]", read_number<P, &P::input_per_million, 0.0, kMaxPrice>,
     write_number<P, &P::input_per_million>},
    {"output_per_million", "number in [0, 1e12]", read_number<P, &P::output_per_million, 0.0, kMaxPrice>,
     write_number<P, &P::output_per_million>},
    {"cached_input_per_million", "number in [0, 1e12]",
     read_optional_number<P, &P::cached_input_per_million, 0.0, kMaxPrice>,
     write_optional_number<P, &P::cached_input_per_million>},
    {"per_gpu_second", "number in [0, 1e12]", read_number<P, &P::per_gpu_second, 0.0, kMaxPrice>,
     write_number<P, &P::per_gpu_second>},
};

}  // namespace

std::span<const SettingKey<TenantConfig>> tenant_keys() { return kTenantKeys; }
std::span<const SettingKey<quota::TeamConfig>> team_keys() { return kTeamKeys; }
std::span<const SettingKey<quota::DynamicQuotaConfig>> dynamic_quota_keys() { return kDynamicQuotaKeys; }
std::span<const SettingKey<quota::QuotaLimits>> quota_keys() { return kQuotaKeys; }
std::span<const SettingKey<ClassConfig>> class_keys() { return kClassKeys; }
std::span<const SettingKey<ClassMatch>> class_match_keys() { return kClassMatchKeys; }
std::span<const SettingKey<ModelConfig>> model_keys() { return kModelKeys; }
std::span<const SettingKey<BackendConfig>> backend_keys() { return kBackendKeys; }
std::span<const SettingKey<ModelPrice>> price_keys() { return kPriceKeys; }
std::span<const SettingKey<rollout::AliasConfig>> alias_keys() { return kAliasKeys; }
std::span<const SettingKey<rollout::AliasTarget>> alias_target_keys() { return kAliasTargetKeys; }
std::span<const SettingKey<rollout::CanaryConfig>> canary_keys() { return kCanaryKeys; }
std::span<const SettingKey<rollout::ShadowConfig>> shadow_keys() { return kShadowKeys; }

bool read_quota(YamlReader& r, const YAML::Node& node, const std::string& path, quota::QuotaLimits& out) {
  if (!read_entry(quota_keys(), r, node, path, out)) return false;
  // A rate given counts even when refused (its error says enough).
  if (!has_any(node, {"requests_per_minute", "tokens_per_minute", "tokens_per_day"}) && !out.max_concurrent) {
    r.error(path, "sets no limit (requests_per_minute, tokens_per_minute, tokens_per_day or max_concurrent)");
  }
  return true;
}

bool read_tenant(YamlReader& r, const YAML::Node& node, const std::string& path, TenantConfig& out) {
  if (!read_entry(tenant_keys(), r, node, path, out)) return false;
  if (out.team.empty()) out.team = out.name;
  if (out.key_sha256.empty() && out.client_cert_names.empty()) {
    r.error(path, "needs at least one of api_keys, api_key_sha256 or client_cert_names");
  }
  return true;
}

bool read_team(YamlReader& r, const YAML::Node& node, const std::string& path, quota::TeamConfig& out) {
  return read_entry(team_keys(), r, node, path, out);
}

bool read_alias(YamlReader& r, const YAML::Node& node, const std::string& path, rollout::AliasConfig& out) {
  return read_entry(alias_keys(), r, node, path, out);
}

bool read_class(YamlReader& r, const YAML::Node& node, const std::string& path, ClassConfig& out) {
  std::vector<std::string_view> known = key_names(class_keys());
  for (std::string_view key : key_names(class_policy_keys())) known.push_back(key);
  if (!r.map(node, path, known)) return false;
  read_settings(class_keys(), r, node, path, out);
  out.policy.name = out.name;
  read_class_policy(r, node, path, out.policy);
  return true;
}

bool read_model(YamlReader& r, const YAML::Node& node, const std::string& path, ModelConfig& out) {
  return read_entry(model_keys(), r, node, path, out);
}

bool read_backend(YamlReader& r, const YAML::Node& node, const std::string& path, BackendConfig& out) {
  if (!read_entry(backend_keys(), r, node, path, out)) return false;
  const std::string key =
      read_secret(r, path, "api_key_env", out.api_key_env, "api_key_file", out.api_key_file);
  if (!key.empty()) out.authorization = "Bearer " + key;
  if (out.engine == EngineKind::kLlamaCpp && out.priority_scheduling) {
    r.error(YamlReader::join(path, "priority_scheduling"), "llama.cpp server has no request priority");
  }
  // A type the table refused is checked no further.
  const YAML::Node type = node["type"];
  if (type && type.IsScalar() && type.Scalar() != "http" && type.Scalar() != "sim") return true;
  if (out.type == BackendType::kSim) {
    check_sim_backend(r, node, path, out);
  } else {
    check_http_backend(r, node, path, out);
  }
  return true;
}

bool read_price(YamlReader& r, const YAML::Node& node, const std::string& path, ModelPrice& out) {
  if (!read_entry(price_keys(), r, node, path, out)) return false;
  if (!has_any(node, {"input_per_million", "output_per_million", "cached_input_per_million", "per_gpu_second"})) {
    r.error(path, "sets no price (input_per_million, output_per_million, cached_input_per_million or per_gpu_second)");
  }
  return true;
}

std::string read_secret(YamlReader& r, const std::string& path, std::string_view env_key, const std::string& env,
                        std::string_view file_key, const std::string& file) {
  std::string secret;
  if (!env.empty() && !file.empty()) {
    r.error(YamlReader::join(path, std::string(env_key)),
            "give " + std::string(env_key) + " or " + std::string(file_key) + ", not both");
    return secret;
  }
  if (!env.empty()) {
    const char* value = std::getenv(env.c_str());
    if (value == nullptr || *value == '\0') {
      r.error(YamlReader::join(path, std::string(env_key)), "environment variable " + env + " is not set");
      return secret;
    }
    secret = value;
  } else if (!file.empty()) {
    std::ifstream in(file);
    if (!in || !std::getline(in, secret) || secret.empty()) {
      r.error(YamlReader::join(path, std::string(file_key)), "cannot read a key from " + file);
      return {};
    }
    while (!secret.empty() && (secret.back() == '\r' || secret.back() == ' ')) secret.pop_back();
  }
  return secret;
}

}  // namespace arbiter
