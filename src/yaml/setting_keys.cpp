#include "yaml/setting_keys.hpp"

#include "yaml/setting_rows.hpp"

namespace arbiter {

namespace {

using namespace setting_rows;
using sched::ClassPolicy;

void read_policy_name(YamlReader& r, const YAML::Node& v, const std::string& path, sched::SchedulerTunables& s) {
  const auto text = r.scalar(v, path);
  if (!text) return;
  if (auto parsed = sched::policy_from_string(*text)) {
    s.policy = *parsed;
  } else {
    r.error(path, "must be fifo, priority or hybrid, not '" + *text + "'");
  }
}
std::string write_policy_name(const sched::SchedulerTunables& s) { return std::string(sched::policy_name(s.policy)); }

using C = ClassPolicy;
constexpr ClassPolicyKey kClassKeys[] = {
    {"min_share", "number in [0, 1]", read_number<C, &C::min_share, 0.0, 1.0>, write_number<C, &C::min_share>},
    {"max_share", "number in [0.001, 1]", read_number<C, &C::max_share, 0.001, 1.0>, write_number<C, &C::max_share>},
    {"weight", "number in [0.001, 1000]", read_number<C, &C::weight, 0.001, 1000.0>, write_number<C, &C::weight>},
    {"max_queue_wait_ms", "milliseconds, >= 1", read_ms<C, &C::max_queue_wait, 1, kLongestMs>,
     write_ms<C, &C::max_queue_wait>},
    {"preemptible", "true or false", read_bool<C, &C::preemptible>, write_bool<C, &C::preemptible>},
    {"background", "true or false", read_bool<C, &C::background>, write_bool<C, &C::background>},
    {"max_queue", "integer in [1, 10000000]", read_integer<C, &C::max_queue, 1, 10'000'000>,
     write_integer<C, &C::max_queue>},
    {"max_queue_per_tenant", "integer in [1, 10000000]", read_integer<C, &C::max_queue_per_tenant, 1, 10'000'000>,
     write_integer<C, &C::max_queue_per_tenant>},
    {"debounce_ms", "milliseconds, >= 0", read_ms<C, &C::debounce, 0, kLongestMs>, write_ms<C, &C::debounce>},
    {"adaptive_debounce", "true or false", read_bool<C, &C::adaptive_debounce>, write_bool<C, &C::adaptive_debounce>},
    {"typing_through", "true or false", read_bool<C, &C::typing_through>, write_bool<C, &C::typing_through>},
    {"priority", "integer in [-1000000, 1000000]", read_integer<C, &C::engine_priority, -1'000'000, 1'000'000>,
     write_integer<C, &C::engine_priority>},
    {"ttft_slo_ms", "milliseconds, >= 0 (0: none)", read_ms<C, &C::ttft_slo, 0, kLongestMs>,
     write_ms<C, &C::ttft_slo>},
    {"tpot_slo_ms", "milliseconds, >= 0, a fraction allowed (0: none)",
     read_fractional_ms<C, &C::tpot_slo, 0.0, 60'000.0>, write_fractional_ms<C, &C::tpot_slo>},
};

using Sch = sched::SchedulerTunables;
constexpr SchedulerKey kSchedulerKeys[] = {
    {"policy", "fifo, priority or hybrid", read_policy_name, write_policy_name},
    {"aging_fraction", "number in [0, 1]", read_number<Sch, &Sch::aging_fraction, 0.0, 1.0>,
     write_number<Sch, &Sch::aging_fraction>},
    {"slo_lead_fraction", "number in [0, 1]", read_number<Sch, &Sch::slo_lead_fraction, 0.0, 1.0>,
     write_number<Sch, &Sch::slo_lead_fraction>},
    {"tenant_headroom", "number in [0, 0.5]", read_number<Sch, &Sch::tenant_headroom, 0.0, 0.5>,
     write_number<Sch, &Sch::tenant_headroom>},
    {"tenant_fair_cap", "number in [0, 100]", read_number<Sch, &Sch::tenant_fair_cap, 0.0, 100.0>,
     write_number<Sch, &Sch::tenant_fair_cap>},
    {"early_reject_margin", "number in [0, 1000]", read_number<Sch, &Sch::early_reject_margin, 0.0, 1000.0>,
     write_number<Sch, &Sch::early_reject_margin>},
    {"affinity_load_slack", "number in [0, 100]", read_number<Sch, &Sch::affinity_load_slack, 0.0, 100.0>,
     write_number<Sch, &Sch::affinity_load_slack>},
    {"preemption", "true or false", read_bool<Sch, &Sch::preemption>, write_bool<Sch, &Sch::preemption>},
    {"preempt_after_ms", "milliseconds in [0, 3600000]", read_ms<Sch, &Sch::preempt_after, 0, 3'600'000>,
     write_ms<Sch, &Sch::preempt_after>},
    {"preempt_guard_ms", "milliseconds in [0, 3600000]", read_ms<Sch, &Sch::preempt_guard, 0, 3'600'000>,
     write_ms<Sch, &Sch::preempt_guard>},
    {"max_prefill_backlog_ms", "milliseconds in [0, 60000] (0: off)",
     read_ms<Sch, &Sch::max_prefill_backlog, 0, 60'000>, write_ms<Sch, &Sch::max_prefill_backlog>},
    {"affinity_cache_credit", "true or false", read_bool<Sch, &Sch::affinity_cache_credit>,
     write_bool<Sch, &Sch::affinity_cache_credit>},
};

using L = ListenerConfig;
constexpr SettingKey<L> kListenerKeys[] = {
    {"address", "an address to bind", read_text<L, &L::address>, write_text<L, &L::address>},
    {"port", "integer in [0, 65535]", read_integer<L, &L::port, 0, 65535>, write_integer<L, &L::port>},
    {"threads", "integer in [0, 1024]", read_integer<L, &L::threads, 0, 1024>, write_integer<L, &L::threads>},
    {"max_connections", "integer in [0, 10000000]", read_integer<L, &L::max_connections, 0, 10'000'000>,
     write_integer<L, &L::max_connections>},
};

using A = AdminConfig;
constexpr SettingKey<A> kAdminKeys[] = {
    {"enabled", "true or false", read_bool<A, &A::enabled>, write_bool<A, &A::enabled>},
    {"address", "an address to bind", read_text<A, &A::address>, write_text<A, &A::address>},
    {"port", "integer in [0, 65535]", read_integer<A, &A::port, 0, 65535>, write_integer<A, &A::port>},
    {"token_env", "an environment variable's name", read_text<A, &A::token_env>, write_text<A, &A::token_env>},
    {"token_file", "a file path", read_text<A, &A::token_file>, write_text<A, &A::token_file>},
};

template <auto Member, std::string_view const* Choices, std::size_t N>
void read_choice(YamlReader& r, const YAML::Node& v, const std::string& path, ListenerTlsConfig& s) {
  const auto text = r.scalar(v, path);
  if (!text) return;
  std::string allowed;
  for (std::size_t i = 0; i < N; ++i) {
    if (*text == Choices[i]) {
      s.*Member = *text;
      return;
    }
    allowed += (i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(Choices[i]);
  }
  r.error(path, "must be " + allowed + ", not '" + *text + "'");
}
constexpr std::string_view kTlsVersions[] = {"1.3", "1.2"};
constexpr std::string_view kClientCertModes[] = {"off", "optional", "required"};

using LT = ListenerTlsConfig;
constexpr SettingKey<LT> kListenerTlsKeys[] = {
    {"cert_file", "a PEM file", read_text<LT, &LT::cert_file>, write_text<LT, &LT::cert_file>},
    {"key_file", "a PEM file", read_text<LT, &LT::key_file>, write_text<LT, &LT::key_file>},
    {"min_version", "1.3 or 1.2", read_choice<&LT::min_version, kTlsVersions, 2>, write_text<LT, &LT::min_version>},
    {"client_ca_file", "a PEM file", read_text<LT, &LT::client_ca_file>, write_text<LT, &LT::client_ca_file>},
    {"client_cert", "off, optional or required", read_choice<&LT::client_cert, kClientCertModes, 3>,
     write_text<LT, &LT::client_cert>},
};

using Lim = LimitsConfig;
constexpr SettingKey<Lim> kLimitsKeys[] = {
    {"max_body_bytes", "bytes (KiB, MiB, GiB)", read_size<Lim, &Lim::max_body_bytes>,
     write_size<Lim, &Lim::max_body_bytes>},
    {"max_header_bytes", "bytes (KiB, MiB, GiB)", read_size<Lim, &Lim::max_header_bytes>,
     write_size<Lim, &Lim::max_header_bytes>},
    {"max_upstream_response_bytes", "bytes (KiB, MiB, GiB)", read_size<Lim, &Lim::max_upstream_response_bytes>,
     write_size<Lim, &Lim::max_upstream_response_bytes>},
    {"max_json_depth", "integer in [2, 10000]", read_integer<Lim, &Lim::max_json_depth, 2, 10'000>,
     write_integer<Lim, &Lim::max_json_depth>},
};

using T = TimeoutsConfig;
constexpr SettingKey<T> kTimeoutKeys[] = {
    {"client_header_ms", "milliseconds in [1, 86400000]", read_ms<T, &T::client_header, 1, kDayMs>,
     write_ms<T, &T::client_header>},
    {"client_body_ms", "milliseconds in [1, 86400000]", read_ms<T, &T::client_body, 1, kDayMs>,
     write_ms<T, &T::client_body>},
    {"keepalive_idle_ms", "milliseconds in [1, 86400000]", read_ms<T, &T::keepalive_idle, 1, kDayMs>,
     write_ms<T, &T::keepalive_idle>},
    {"client_write_ms", "milliseconds in [1, 86400000]", read_ms<T, &T::client_write, 1, kDayMs>,
     write_ms<T, &T::client_write>},
    {"upstream_connect_ms", "milliseconds in [1, 86400000]", read_ms<T, &T::upstream_connect, 1, kDayMs>,
     write_ms<T, &T::upstream_connect>},
    {"upstream_first_byte_ms", "milliseconds in [1, 86400000]", read_ms<T, &T::upstream_first_byte, 1, kDayMs>,
     write_ms<T, &T::upstream_first_byte>},
    {"stream_idle_ms", "milliseconds in [1, 86400000]", read_ms<T, &T::stream_idle, 1, kDayMs>,
     write_ms<T, &T::stream_idle>},
    {"drain_ms", "milliseconds in [1, 86400000]", read_ms<T, &T::drain, 1, kDayMs>, write_ms<T, &T::drain>},
};

constexpr SettingKey<AuthConfig> kAuthKeys[] = {
    {"enabled", "true or false", read_bool<AuthConfig, &AuthConfig::enabled>,
     write_bool<AuthConfig, &AuthConfig::enabled>},
};

using E = EngineSignalsConfig;
constexpr SettingKey<E> kEngineSignalKeys[] = {
    {"enabled", "true or false", read_bool<E, &E::enabled>, write_bool<E, &E::enabled>},
    {"interval_ms", "milliseconds in [1, 86400000]", read_ms<E, &E::interval, 1, kDayMs>, write_ms<E, &E::interval>},
    {"stale_after_ms", "milliseconds in [1, 86400000]", read_ms<E, &E::stale_after, 1, kDayMs>,
     write_ms<E, &E::stale_after>},
    {"silence_before_down_ms", "milliseconds in [1, 86400000]", read_ms<E, &E::silence_before_down, 1, kDayMs>,
     write_ms<E, &E::silence_before_down>},
    {"kv_saturation", "number in [0.01, 1]", read_number<E, &E::kv_saturation, 0.01, 1.0>,
     write_number<E, &E::kv_saturation>},
};

using AC = sched::AdaptiveCapacityConfig;
constexpr SettingKey<AC> kAdaptiveCapacityKeys[] = {
    {"enabled", "true or false", read_bool<AC, &AC::enabled>, write_bool<AC, &AC::enabled>},
    {"min", "integer in [1, 100000]", read_integer<AC, &AC::min_limit, 1, 100'000>, write_integer<AC, &AC::min_limit>},
    {"max", "integer in [1, 100000]", read_integer<AC, &AC::max_limit, 1, 100'000>, write_integer<AC, &AC::max_limit>},
    {"max_extra_share", "number in [0, 100]", read_number<AC, &AC::max_extra_share, 0.0, 100.0>,
     write_number<AC, &AC::max_extra_share>},
    {"interval_ms", "milliseconds in [1, 60000]", read_ms<AC, &AC::interval, 1, 60'000>, write_ms<AC, &AC::interval>},
    {"itl_target_ms", "milliseconds in [1, 60000]", read_ms<AC, &AC::itl_target, 1, 60'000>,
     write_ms<AC, &AC::itl_target>},
    {"itl_quantile", "number in [0.01, 1]", read_number<AC, &AC::itl_quantile, 0.01, 1.0>,
     write_number<AC, &AC::itl_quantile>},
    {"min_gaps", "integer in [1, 1000000]", read_integer<AC, &AC::min_gaps, 1, 1'000'000>,
     write_integer<AC, &AC::min_gaps>},
    {"kv_grow_below", "number in [0.01, 1]", read_number<AC, &AC::kv_grow_below, 0.01, 1.0>,
     write_number<AC, &AC::kv_grow_below>},
    {"kv_shrink_above", "number in [0.01, 1]", read_number<AC, &AC::kv_shrink_above, 0.01, 1.0>,
     write_number<AC, &AC::kv_shrink_above>},
    {"ttft_headroom", "number in [0.01, 1]", read_number<AC, &AC::ttft_headroom, 0.01, 1.0>,
     write_number<AC, &AC::ttft_headroom>},
    {"budget_patience", "integer in [1, 1000]", read_integer<AC, &AC::budget_patience, 1, 1000>,
     write_integer<AC, &AC::budget_patience>},
    {"growth", "number in [0.001, 1]", read_number<AC, &AC::growth, 0.001, 1.0>, write_number<AC, &AC::growth>},
    {"backoff", "number in [0.01, 0.99]", read_number<AC, &AC::backoff, 0.01, 0.99>, write_number<AC, &AC::backoff>},
};

using DC = overload::DegradationConfig;
constexpr SettingKey<DC> kDegradationKeys[] = {
    {"enabled", "true or false", read_bool<DC, &DC::enabled>, write_bool<DC, &DC::enabled>},
    {"weight_busy", "number in [0, 1]", read_number<DC, &DC::busy, 0.0, 1.0>, write_number<DC, &DC::busy>},
    {"weight_kv", "number in [0, 1]", read_number<DC, &DC::kv, 0.0, 1.0>, write_number<DC, &DC::kv>},
    {"weight_queue", "number in [0, 1]", read_number<DC, &DC::queue, 0.0, 1.0>, write_number<DC, &DC::queue>},
    {"weight_cache_miss", "number in [0, 1]", read_number<DC, &DC::cache_miss, 0.0, 1.0>,
     write_number<DC, &DC::cache_miss>},
    {"smoothing_ms", "milliseconds in [0, 600000]", read_ms<DC, &DC::smoothing, 0, 600'000>,
     write_ms<DC, &DC::smoothing>},
    {"elevated_at", "number in (0, 1]", read_number<DC, &DC::elevated_at, 0.0, 1.0>,
     write_number<DC, &DC::elevated_at>},
    {"high_at", "number in (0, 1]", read_number<DC, &DC::high_at, 0.0, 1.0>, write_number<DC, &DC::high_at>},
    {"shed_at", "number in (0, 1]", read_number<DC, &DC::shed_at, 0.0, 1.0>, write_number<DC, &DC::shed_at>},
    {"exit_margin", "number in [0, 1)", read_number<DC, &DC::exit_margin, 0.0, 1.0>, write_number<DC, &DC::exit_margin>},
    {"hold_ms", "milliseconds in [0, 3600000]", read_ms<DC, &DC::hold, 0, 3'600'000>, write_ms<DC, &DC::hold>},
    {"max_shed", "number in [0, 1]", read_number<DC, &DC::max_shed, 0.0, 1.0>, write_number<DC, &DC::max_shed>},
    {"cap_max_tokens", "integer in [1, 2147483647]", read_integer<DC, &DC::cap_max_tokens, 1, INT32_MAX>,
     write_integer<DC, &DC::cap_max_tokens>},
};

using CA = overload::ClassActions;
constexpr SettingKey<CA> kClassDegradeKeys[] = {
    {"protect", "true or false", read_bool<CA, &CA::protect>, write_bool<CA, &CA::protect>},
    {"cap_max_tokens", "integer in [0, 2147483647] (0: no cap)", read_integer<CA, &CA::cap_max_tokens, 0, INT32_MAX>,
     write_integer<CA, &CA::cap_max_tokens>},
    {"pause", "true or false", read_bool<CA, &CA::pause>, write_bool<CA, &CA::pause>},
    {"variant", "true or false", read_bool<CA, &CA::variant>, write_bool<CA, &CA::variant>},
    {"shed", "true or false", read_bool<CA, &CA::shed>, write_bool<CA, &CA::shed>},
};

using CC = cache::CacheConfig;
void read_scope(YamlReader& r, const YAML::Node& v, const std::string& path, CC& c) {
  const auto text = r.scalar(v, path);
  if (!text) return;
  if (auto scope = cache::scope_from_name(*text)) {
    c.scope = *scope;
  } else {
    r.error(path, "must be tenant, team or global");
  }
}
std::string write_scope(const CC& c) { return std::string(cache::scope_name(c.scope)); }

constexpr SettingKey<CC> kCacheKeys[] = {
    {"enabled", "true or false", read_bool<CC, &CC::enabled>, write_bool<CC, &CC::enabled>},
    {"max_bytes", "a size (KiB, MiB, GiB)", read_size<CC, &CC::max_bytes>, write_size<CC, &CC::max_bytes>},
    {"ttl_s", "seconds in [1, 2592000]", read_seconds<CC, &CC::ttl, 1, 2'592'000>, write_seconds<CC, &CC::ttl>},
    {"max_entry_bytes", "a size (KiB, MiB, GiB)", read_size<CC, &CC::max_entry_bytes>,
     write_size<CC, &CC::max_entry_bytes>},
    {"scope", "tenant, team or global", read_scope, write_scope},
    {"near", "true or false", read_bool<CC, &CC::near>, write_bool<CC, &CC::near>},
    {"near_threshold", "number in [0.5, 1]", read_number<CC, &CC::near_threshold, 0.5, 1.0>,
     write_number<CC, &CC::near_threshold>},
    {"near_degraded_threshold", "number in [0.5, 1]", read_number<CC, &CC::near_degraded_threshold, 0.5, 1.0>,
     write_number<CC, &CC::near_degraded_threshold>},
    {"near_max_prompt_bytes", "a size (KiB, MiB, GiB)", read_size<CC, &CC::near_max_prompt_bytes>,
     write_size<CC, &CC::near_max_prompt_bytes>},
    {"semantic_model", "a model's name (empty: off)", read_text<CC, &CC::semantic_model>,
     write_text<CC, &CC::semantic_model>},
    {"semantic_threshold", "number in [0.5, 1]", read_number<CC, &CC::semantic_threshold, 0.5, 1.0>,
     write_number<CC, &CC::semantic_threshold>},
    {"semantic_degraded_threshold", "number in [0.5, 1]",
     read_number<CC, &CC::semantic_degraded_threshold, 0.5, 1.0>, write_number<CC, &CC::semantic_degraded_threshold>},
    {"semantic_timeout_ms", "milliseconds in [1, 10000]", read_ms<CC, &CC::semantic_timeout, 1, 10'000>,
     write_ms<CC, &CC::semantic_timeout>},
    {"semantic_max_bytes", "a size (KiB, MiB, GiB)", read_size<CC, &CC::semantic_max_bytes>,
     write_size<CC, &CC::semantic_max_bytes>},
    {"semantic_max_prompt_bytes", "a size (KiB, MiB, GiB)", read_size<CC, &CC::semantic_max_prompt_bytes>,
     write_size<CC, &CC::semantic_max_prompt_bytes>},
    {"semantic_dimensions", "integer in [0, 16384] (0: the model's own)",
     read_integer<CC, &CC::semantic_dimensions, 0, 16'384>, write_integer<CC, &CC::semantic_dimensions>},
    {"redis", "host:port (empty: none)", read_text<CC, &CC::redis>, write_text<CC, &CC::redis>},
    {"redis_timeout_ms", "milliseconds in [1, 10000]", read_ms<CC, &CC::redis_timeout, 1, 10'000>,
     write_ms<CC, &CC::redis_timeout>},
};

using CCC = cache::ClassCacheConfig;
constexpr SettingKey<CCC> kClassCacheKeys[] = {
    {"enabled", "true or false", read_optional_bool<CCC, &CCC::enabled>, write_optional_bool<CCC, &CCC::enabled>},
    {"near", "true or false", read_optional_bool<CCC, &CCC::near>, write_optional_bool<CCC, &CCC::near>},
    {"tools", "true or false", read_bool<CCC, &CCC::tools>, write_bool<CCC, &CCC::tools>},
};

constexpr SettingKey<LogConfig> kLogKeys[] = {
    {"access_log", "true or false", read_bool<LogConfig, &LogConfig::access_log>,
     write_bool<LogConfig, &LogConfig::access_log>},
    {"access_file", "a file path (empty: stdout)", read_text<LogConfig, &LogConfig::access_file>,
     write_text<LogConfig, &LogConfig::access_file>},
    {"access_flush_ms", "milliseconds in [1, 60000]", read_ms<LogConfig, &LogConfig::access_flush, 1, 60'000>,
     write_ms<LogConfig, &LogConfig::access_flush>},
};

}  // namespace

std::span<const ClassPolicyKey> class_policy_keys() { return kClassKeys; }
std::span<const SchedulerKey> scheduler_keys() { return kSchedulerKeys; }
std::span<const SettingKey<ListenerConfig>> listener_keys() { return kListenerKeys; }
std::span<const SettingKey<AdminConfig>> admin_keys() { return kAdminKeys; }
std::span<const SettingKey<ListenerTlsConfig>> listener_tls_keys() { return kListenerTlsKeys; }
std::span<const SettingKey<LimitsConfig>> limits_keys() { return kLimitsKeys; }
std::span<const SettingKey<TimeoutsConfig>> timeouts_keys() { return kTimeoutKeys; }
std::span<const SettingKey<AuthConfig>> auth_keys() { return kAuthKeys; }
std::span<const SettingKey<EngineSignalsConfig>> engine_signals_keys() { return kEngineSignalKeys; }
std::span<const SettingKey<LogConfig>> log_keys() { return kLogKeys; }
std::span<const SettingKey<sched::AdaptiveCapacityConfig>> adaptive_capacity_keys() { return kAdaptiveCapacityKeys; }
std::span<const SettingKey<overload::DegradationConfig>> degradation_keys() { return kDegradationKeys; }
std::span<const SettingKey<overload::ClassActions>> class_degrade_keys() { return kClassDegradeKeys; }
std::span<const SettingKey<cache::CacheConfig>> cache_keys() { return kCacheKeys; }
std::span<const SettingKey<cache::ClassCacheConfig>> class_cache_keys() { return kClassCacheKeys; }

void read_class_policy(YamlReader& r, const YAML::Node& node, const std::string& path, sched::ClassPolicy& p) {
  read_settings(class_policy_keys(), r, node, path, p);
  if (p.min_share > p.max_share) r.error(YamlReader::join(path, "min_share"), "must not exceed max_share");
}

std::string write_class_policy(const sched::ClassPolicy& p, std::string_view separator) {
  return write_settings(class_policy_keys(), p, separator);
}

}  // namespace arbiter
