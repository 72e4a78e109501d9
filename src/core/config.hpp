// The gateway's configuration as plain data: parsed once at start-up (see
// gateway/config_yaml.hpp), immutable afterwards and shared by every request.
// Every default here is documented in docs/configuration.md.
#pragma once

#include "core/rollout/alias_config.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/adaptive_capacity.hpp"
#include "core/cache/cache_config.hpp"
#include "core/overload/overload_config.hpp"
#include "core/pricing.hpp"
#include "core/quota/quota_config.hpp"
#include "core/resilience/resilience_config.hpp"
#include "core/request.hpp"
#include "core/scheduler_config.hpp"

namespace arbiter {

using Millis = std::chrono::milliseconds;

// listener.tls: TLS on the listener (docs/security.md). Off while cert_file
// is empty.
struct ListenerTlsConfig {
  std::string cert_file;       // PEM certificate chain
  std::string key_file;        // PEM private key
  std::string min_version = "1.3";  // "1.3", or "1.2" to also allow TLS 1.2
  std::string client_ca_file;  // CA bundle that client certificates must chain to
  std::string client_cert = "off";  // off | optional | required
  bool enabled() const { return !cert_file.empty(); }
};

struct ListenerConfig {
  std::string address = "127.0.0.1";  // interface to bind
  uint16_t port = 8080;               // 0 picks a free port (tests)
  unsigned threads = 0;               // I/O threads; 0 = one per core
  unsigned max_connections = 0;       // open client connections; beyond: 503 and close. 0 = no limit
  ListenerTlsConfig tls;
};

// The listener for the gateway's own endpoints (docs/security.md, "Admin
// listener"), on loopback unless set: /metrics and /admin/* are served there
// only; the public port answers them 404 (issue 42: a fresh install served
// tenant names and spend to anyone who could reach the API). The token
// guards them; /healthz and /readyz never ask for it.
struct AdminConfig {
  bool enabled = true;                 // false: no admin listener, and /metrics and /admin/* nowhere
  std::string address = "127.0.0.1";   // interface to bind
  uint16_t port = 9090;                // 0 picks a free one (--admin-port-file)
  std::string token_env;               // bearer token: an environment variable's name
  std::string token_file;              // ... or a file (its first line)
  std::string token;                   // read at load; empty: no token asked
};

struct LimitsConfig {
  std::size_t max_body_bytes = 4u << 20;               // request body
  std::size_t max_header_bytes = 16u << 10;            // request header block
  std::size_t max_upstream_response_bytes = 64u << 20; // non-streaming answers
  std::size_t max_json_depth = 128;                    // request body nesting (deep tool schemas)
};

struct TimeoutsConfig {
  Millis client_header{10'000};       // first byte to end of request header
  Millis client_body{30'000};         // reading the request body
  Millis keepalive_idle{60'000};      // idle client connection between requests
  Millis client_write{30'000};        // one write to a slow client
  Millis upstream_connect{2'000};     // TCP connect to a backend
  Millis upstream_first_byte{120'000}; // request sent -> response header (whole generation when not streaming)
  Millis stream_idle{60'000};         // gap between two pieces of an upstream body
  Millis drain{30'000};               // SIGTERM -> forced exit
};

struct AuthConfig {
  bool enabled = false;  // true: every request needs a tenant's key
};

struct TenantConfig {
  std::string name;                          // appears in logs and metrics
  std::string team;                          // cost allocation; defaults to name
  double weight = 1;                         // share against other tenants of a class
  uint32_t max_running = 0;                  // backend slots it may hold per model pool (hybrid); 0: no cap
  double max_share = 0;                      // share of a model pool's slots it may hold (hybrid); 0: no cap
  // Client hints (core/client_hints.hpp): how far above its class's
  // priority an x-priority hint may take a request (0: not above it), and
  // the tightest x-slo-ttft-ms it may claim (0: its class's own target).
  int max_priority_raise = 0;
  std::chrono::milliseconds min_ttft_hint{0};
  std::vector<std::string> key_sha256;       // lower-case hex SHA-256 of each key
  // Verified client certificates (listener.tls) whose subject CN or a DNS
  // SAN is one of these name this tenant, without an API key.
  std::vector<std::string> client_cert_names;
  std::vector<std::string> allowed_classes;  // empty: every class
  std::vector<quota::QuotaLimits> quotas;    // none: unlimited (docs/quotas.md)
  quota::StoreDownPolicy quota_store_down = quota::StoreDownPolicy::kLocal;
};

// A class matches a request when every rule that is set holds.
struct ClassMatch {
  std::vector<Route> routes;            // empty: any route
  std::vector<std::string> models;      // empty: any model
  std::vector<std::string> tenants;     // empty: any tenant
  std::optional<int64_t> max_tokens_at_least;  // requested max_tokens >= this
  std::optional<int64_t> max_tokens_at_most;   // requested max_tokens <= this
};

struct ClassConfig {
  std::string name;
  // Rule-based match; nullopt means the class is reached only by the
  // x-arbiter-class header (or as the default class).
  std::optional<ClassMatch> match;
  std::optional<int64_t> max_tokens_cap;  // rewrite max_tokens above this
  // Scheduling: shares, weight, deadline, queue limits, preemption, debounce,
  // engine priority (policy.name mirrors name).
  sched::ClassPolicy policy;
  // Requests carrying the OpenAI `user` field supersede the tenant's older
  // ones with the same user (keystroke storms), besides the explicit
  // x-arbiter-supersede-key header.
  bool supersede_by_user = false;
  // What staged degradation does to it (its `degrade:` mapping); none: the
  // defaults for its kind (overload::default_actions).
  std::optional<overload::ClassActions> degrade;
  // Its result-cache choices (its `cache:` mapping; docs/cache.md).
  cache::ClassCacheConfig cache;
};

enum class BackendType { kHttp, kSim };

// The engine software behind a backend, for what its API leaves to each
// engine: the order of the `priority` field.
enum class EngineKind {
  kVllm,      // --scheduling-policy priority: lower values run first
  kSglang,    // --enable-priority-scheduling: higher values run first (unless
              // --schedule-low-priority-values-first)
  kLlamaCpp,  // llama.cpp server: no request priority
};

// The `priority` value to send `engine` for a class whose engine_priority is
// `class_priority` (lower runs first in Arbiter's configs, as in vLLM).
inline int engine_priority_field(EngineKind engine, int class_priority) {
  return engine == EngineKind::kSglang ? -class_priority : class_priority;
}

struct BackendConfig {
  std::string name;          // unique label; defaults to host:port
  EngineKind engine = EngineKind::kVllm;  // maps class priority to the engine's `priority` order
  bool priority_scheduling = false;  // engine runs priority scheduling: send `priority`
  // A stream whose client did not ask for usage asks the engine for it
  // (stream_options.include_usage), so its tokens are the engine's count;
  // the usage chunk that adds is kept from the client.
  bool stream_usage = true;
  // The engine takes vLLM's continue_final_message (a preempted chat request
  // can resume there); embedded simulators always do.
  bool continue_final_message = false;
  BackendType type = BackendType::kHttp;
  std::string host;          // from url (type http)
  uint16_t port = 0;         // from url (type http)
  // url https://: TLS to the engine, its certificate verified against
  // ca_file (empty: the system's store) and the host; cert_file/key_file:
  // the gateway's client certificate (upstream mTLS).
  bool tls = false;
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  std::string sim_profile;   // type sim: engine profile name (src/engine/profile.hpp)
  std::optional<uint32_t> sim_max_num_seqs;  // type sim: overrides the profile
  unsigned max_concurrency = 64;  // in-flight requests this backend takes
  // Prompt tokens the engine prefills per second, for the scheduler's
  // prefill backlog limit (scheduler.max_prefill_backlog_ms); 0: off. Type
  // sim: the profile's rate unless set.
  double prefill_tokens_per_s = 0;
  // Tokens of prompt prefix the engine caches (its KV size), for prefix-
  // affinity routing; 0: off for this backend. Default 262,144 (an 8B model
  // on a 40 GB GPU holds about that); type sim: the profile's KV size.
  uint64_t prefix_cache_tokens = 262'144;
  // `prefix_cache_tokens: auto` (the default for type http): the engine's
  // own figure (vLLM's cache_config_info) replaces the value above once a
  // scrape reports it.
  bool prefix_cache_from_engine = false;
  // Classes this backend serves (issue 12: per-class pools, as the BRIEF
  // deploys completion and chat apart). A model's backends with the same
  // list form one scheduler pool; empty: the model's other classes.
  std::vector<std::string> classes;
  // The engine's own API key (vLLM's --api-key), sent as Authorization:
  // Bearer: the name of an environment variable holding it, or of a file
  // (first line). The key itself is `authorization`, read at load.
  std::string api_key_env;
  std::string api_key_file;
  std::string authorization;  // "Bearer <key>", or empty: no credential
  // Its idle slots serve the model's other pools when their own backends
  // are full (borrowing; taken back when its own classes' work arrives).
  // The backends of one pool agree on it. Off by default: borrowed work
  // fills the lender's prefix cache with prompts its own classes do not
  // reuse (docs/benchmarks.md, completion-vs-chat-pools).
  bool lend = false;
  // LoRA adapters the engine serves next to the model (vLLM --lora-modules,
  // the `parent` entries of its /v1/models): a request naming one runs only
  // on a backend that lists it. Type sim: its simulated engine serves them.
  std::vector<std::string> adapters;
  // Adapters the engine runs at once (vLLM --max-loras, default 1): the
  // scheduler sends an adapter's requests where it is loaded while that
  // engine is within the affinity bound (docs/scheduler.md, LoRA adapters).
  uint32_t max_loras = 1;
  // The engine serves OpenAI's Responses API (/v1/responses): vLLM does;
  // by default false for SGLang and llama.cpp (`engine`), true for sims.
  bool responses = true;
};

struct ModelConfig {
  std::string name;                    // what clients put in "model"
  std::vector<BackendConfig> backends; // the pool serving it
  // After loading, one entry per pool of the model: the classes its
  // backends serve (empty: every class no other pool of the model names).
  std::vector<std::string> classes;
  // After loading: its backends' `lend` (the model's other pools borrow
  // its idle slots).
  bool lends = false;
  // After loading: the model's entry of `prices` (every pool of the model
  // has it), or none: its requests cost nothing.
  std::optional<ModelPrice> price;
  // Where the model breaker sends its requests (docs/resilience.md): at
  // degrade_at errors the degraded variant (e.g. a quantised pool), at
  // fallback_at the fallback model; names of other models, or empty.
  std::string degraded;
  std::string fallback;
  // Its own adaptive capacity: the global section's settings with the keys
  // its `adaptive_capacity` names changed; none: the global section applies.
  std::optional<sched::AdaptiveCapacityConfig> adaptive_capacity;
  // Its answers may be kept by the result cache (docs/cache.md).
  bool cache = true;
  // The pool's name in metrics: the model's, with its classes when it has
  // them ("m1/completion").
  std::string pool_name() const;
};


// Scraping each backend's /metrics for saturation (docs/engine-signals.md).
struct EngineSignalsConfig {
  bool enabled = true;
  Millis interval{100};        // scrape period per backend
  Millis stale_after{2000};    // older verdicts fall back to max_concurrency alone
  // Scrapes that only time out make a backend down after this long without
  // an answer (refused ones after three in a row).
  Millis silence_before_down{10000};
  double kv_saturation = 0.9;  // KV cache use above this takes no new dispatch
};

// Cross-origin requests from browser apps (docs/configuration.md, `cors`):
// off while no origin is allowed.
struct CorsConfig {
  std::vector<std::string> allowed_origins;  // "https://chat.example.com" (scheme://host[:port]) or "*"
  bool allow_credentials = false;           // browsers may send cookies / client certificates
  std::chrono::seconds max_age{600};        // how long a browser keeps a preflight's answer
};

struct LogConfig {
  bool access_log = true;  // one JSON line per request
  std::string access_file;  // appended to, reopened on SIGUSR1; empty: stdout
  Millis access_flush{100};  // buffered lines are written at least this often
};

// store: the usage and audit store (docs/audit.md): a SQLite file, written
// off the request path through a journal that outlives a crash and a
// store outage.
struct StoreConfig {
  bool enabled = true;
  std::string path = "arbiter.db";  // relative: to the config file's folder
  // PostgreSQL instead of the SQLite file: a libpq connection string, or the
  // environment variable that holds one (a password may be in it only
  // there). The journal stays at path + ".journal".
  std::string url;
  std::string url_env;
  std::string replica;              // this gateway's name in the rows; empty: the host name
  std::chrono::hours retention{31 * 24};
  std::size_t spool_bytes = std::size_t{256} << 20;  // the journal's bound while the store is down
  bool audit = true;                                 // arbitration decisions recorded
  // Per request decision kind ("dispatched", ...), the share of requests
  // whose row of that kind is kept (by their id's hash); unlisted: all.
  std::vector<std::pair<std::string, double>> audit_sample;
};

// The Batch API (/v1/files, /v1/batches; docs/batches.md): where its files
// and jobs live, the class its lines run in, and its bounds.
struct BatchConfig {
  bool enabled = true;
  std::string dir = "arbiter-batches";  // relative: to the config file's folder
  // The class a batch's lines run in; empty: a class named "batch", else
  // the class of the lowest priority.
  std::string klass;
  std::size_t max_lines = 50'000;  // lines a batch input file may hold (OpenAI's limit)
  // An uploaded file's size (POST /v1/files): the listener's body limit
  // for that route alone, the rest keep limits.max_body_bytes. Held in
  // memory while it is checked and stored.
  std::size_t max_file_bytes = std::size_t{64} << 20;
  // The bytes one tenant's files may hold in all (its uploads and its
  // batches' outputs): an upload past it is refused, so that no tenant
  // fills the disk the others' files and the store share.
  std::size_t max_tenant_bytes = std::size_t{10} << 30;
  // Lines of one batch handed to the scheduler at once; the scheduler
  // orders them against every other request.
  std::size_t max_in_flight = 1024;
  std::chrono::hours max_window{7 * 24};  // the longest completion_window accepted
  // A replica runs a batch under a lease it renews every second; a batch
  // whose lease has not been renewed for this long (its replica died or lost
  // the store) is taken over by another replica, which resumes it.
  std::chrono::seconds takeover{30};
};

// OpenTelemetry traces (docs/tracing.md): where the spans go and how many
// requests are traced.
struct TracingConfig {
  // OTLP/HTTP traces URL (http://collector:4318/v1/traces); empty: off.
  std::string endpoint;
  // The share of requests traced when the client's traceparent does not
  // say (its sampled flag decides when it does).
  double sample = 0.1;
  std::string service_name = "arbiter";
  std::chrono::milliseconds flush{1000};  // at most this long between exports
  std::size_t max_queued_spans = 20'000;  // past it spans are dropped and counted
};

// A LoRA adapter and the model it is served with (Config::adapters).
struct AdapterConfig {
  std::string name;   // what clients put in "model"
  std::string model;  // its base model's name
};

struct Config {
  ListenerConfig listener;
  AdminConfig admin;
  LimitsConfig limits;
  TimeoutsConfig timeouts;
  AuthConfig auth;
  std::vector<TenantConfig> tenants;
  std::vector<quota::TeamConfig> teams;  // quotas shared by a team's tenants
  // Public model names that map to weighted targets (canaries, blue-green;
  // docs/rollouts.md), after the models they name.
  std::vector<rollout::AliasConfig> aliases;
  quota::QuotaStoreConfig quota_store;
  quota::TrafficBreakerConfig traffic_breaker;
  std::vector<ClassConfig> classes;  // in match order
  std::string default_class;         // when no rule matches
  std::vector<ModelConfig> models;
  // After loading: every LoRA adapter a backend serves, in the order the
  // file first names them; an adapter's number in the scheduler
  // (sched::Request::adapter) is its place here plus one.
  std::vector<AdapterConfig> adapters;
  sched::SchedulerTunables scheduler;
  EngineSignalsConfig engine_signals;
  // Each backend's slot limit learned from its engine's figures and token
  // gaps (core/adaptive_capacity.hpp), starting from its max_concurrency;
  // off by default. Needs engine_signals. A model may have its own.
  sched::AdaptiveCapacityConfig adaptive_capacity;
  // What applies to pool `pool`'s backends (models[pool]): its model's
  // own section, else the global one.
  const sched::AdaptiveCapacityConfig& adaptive_capacity_of(std::size_t pool) const {
    return models[pool].adaptive_capacity ? *models[pool].adaptive_capacity : adaptive_capacity;
  }
  // Whether any pool runs adaptive capacity.
  bool any_adaptive_capacity() const;
  // The scheduler's number of the adapter named `name` (its place in
  // `adapters` plus one); 0 when no backend serves one of that name.
  uint16_t adapter_number(std::string_view name) const;
  resilience::OutlierDetectionConfig outlier_detection;
  resilience::RetryConfig retries;
  resilience::HealthProbesConfig health_probes;
  resilience::ModelBreakerSectionConfig model_breaker;
  overload::DegradationConfig degradation;  // staged degradation (gateway/stages/degrade)
  cache::CacheConfig cache;                 // the result cache (gateway/stages/cache)
  CorsConfig cors;
  StoreConfig store;
  BatchConfig batches;
  TracingConfig tracing;
  LogConfig log;
  // Classes the file listed under a built-in class's name: they started from
  // its scheduling settings and cap (what `--check` reports).
  std::vector<std::string> inherited_classes;
};

// The pool of a model (`pools`: its pools, indexes into config.models) that
// serves class `cls`: the one whose class list names it, else the one
// without a list (config validation makes sure there is one).
std::size_t class_pool(const Config& config, const std::vector<std::size_t>& pools, std::size_t cls);

// The classes used when the config names none: an interactive completion
// class capped at 128 tokens, standard chat, and two header-only classes.
std::vector<ClassConfig> default_classes();
inline constexpr const char* kDefaultClassName = "chat";
inline constexpr int64_t kCompletionMaxTokensCap = 128;

}  // namespace arbiter
