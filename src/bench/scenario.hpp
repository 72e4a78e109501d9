// A benchmark scenario as plain data: the engines, the tenants, and per class
// the traffic that arrives and the SLOs it is judged by. Parsed once from
// YAML (scenario_yaml.hpp); the key reference is docs/arbiter-bench.md.
#pragma once

#include "core/adaptive_capacity.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"
#include "core/scheduler_config.hpp"
#include "engine/profile.hpp"

namespace arbiter::bench {

// A token count drawn per request.
struct LengthDist {
  enum class Kind { kFixed, kUniform, kLognormal };
  Kind kind = Kind::kFixed;
  double value = 1;    // kFixed: the count; kLognormal: the mean
  double sigma = 0.5;  // kLognormal: sigma of the underlying normal
  uint32_t min = 1;    // kUniform bounds; clamp for kLognormal
  uint32_t max = 1;    // kUniform bounds; clamp for kLognormal
};

// A multiplicative change of a class's rate: a step (for_s empty) or a burst.
struct RateChange {
  double at_s = 0;              // start, seconds of virtual time
  std::optional<double> for_s;  // length; nullopt: until the end
  double factor = 1;            // rate multiplier while it lasts
};

// A day compressed into `period_s`: the rate factor follows a fixed office-day
// shape (0 at night, 1 at the morning and afternoon peaks) between `night` and `peak`.
struct DayCurve {
  double period_s = 240;  // one simulated day
  double night = 0.2;     // factor at the quietest hour
  double peak = 1;        // factor at the busiest hour
  double start_hour = 0;  // hour of day at t = 0
};

// Rate over time: base * product of active changes * day factor.
struct RateSpec {
  double base = 0;                  // per second at factor 1
  std::vector<RateChange> changes;  // steps and bursts
  std::optional<DayCurve> day;      // none: flat
};

// Inter-arrival times: Poisson, or gamma with shape `burstiness` (vllm bench
// serve's definition: < 1 burstier than Poisson, > 1 more regular).
struct ArrivalSpec {
  bool gamma = false;
  double burstiness = 1;
};

// A client that gives up: that share of requests aborts `after_s` after
// arrival unless finished by then.
struct PatienceSpec {
  double share = 0;
  double after_s = 0;
};

enum class TrafficKind {
  kRequests,  // independent requests (critical tasks, API calls)
  kTyping,    // IDE completions: keystroke bursts, each request superseding the last
  kChat,      // multi-turn sessions whose context grows
  kBacklog,   // batch jobs: a backlog at t = 0 plus an optional stream, with deadlines
};

struct TrafficSpec {
  TrafficKind kind = TrafficKind::kRequests;
  RateSpec rate;        // requests/s; typing: bursts/s; chat: sessions/s; backlog: extra jobs/s
  ArrivalSpec arrival;  // process of `rate`'s events
  LengthDist prompt;    // prompt tokens (typing: after the file prefix; chat: each user turn)
  LengthDist output;    // natural answer length
  uint32_t max_tokens = 4096;        // request's max_tokens: caps the answer, and the cost estimate
  std::optional<double> deadline_s;  // completion deadline after arrival (SLO and queue deadline)
  PatienceSpec patience;
  // Shared prefixes (system prompts): `count` distinct ones of `tokens` tokens,
  // used by `share` of the requests.
  uint32_t prefix_count = 0;
  uint32_t prefix_tokens = 0;
  double prefix_share = 0;
  // typing
  uint32_t developers = 1;      // each is one supersede key
  LengthDist keystrokes;        // requests per burst
  LengthDist keystroke_gap_ms;  // between requests of a burst (5-10/s: 100-200 ms)
  LengthDist file_tokens;       // the file being edited: a per-developer prefix
  // Each developer types at their own pace: their keystroke gaps are scaled
  // by a factor drawn once per developer, lognormal with median 1 and this
  // sigma (0: everyone alike).
  double rhythm_spread = 0;
  // The plugin debounces itself: a keystroke's request is sent only when no
  // further keystroke follows within this, and then this long after the
  // keystroke (0: every keystroke is sent at once, as today's plugins do).
  double client_debounce_ms = 0;
  // Share of keystrokes (after a burst's first) that type exactly the start
  // (one token) of the suggestion the previous keystroke's completion is
  // generating: the developer types along, or the model predicted what they
  // were typing anyway. The rest type something else (0: none do).
  double type_along = 0;
  // chat
  LengthDist turns;               // turns per session
  LengthDist think_s;             // between the starts of two turns
  uint32_t max_context = 16'000;  // context is cut to this many tokens
  // backlog
  uint32_t jobs = 0;  // jobs queued at t = 0
};

// What a good request is, for goodput (vllm bench serve --goodput): every
// set bound must hold.
struct SloSpec {
  std::optional<double> ttft_ms;
  std::optional<double> tpot_ms;
  std::optional<double> e2e_ms;
};

struct ClassSpec {
  std::string name;           // scheduler class name (or this stream's name, see below)
  // Empty: this entry is a scheduler class of its own. Otherwise the name of
  // an earlier entry whose scheduler class this traffic joins: a separate
  // stream (its own tenants, rate and shape, e.g. one tenant flooding) that
  // is reported on its own row but scheduled as that class.
  std::string scheduler_class;
  sched::ClassPolicy policy;  // core defaults for the name, then the scenario's overrides
  SloSpec slo;
  std::vector<double> tenant_mix;  // traffic weight per tenant (scenario order)
  TrafficSpec traffic;
};

struct TenantSpec {
  std::string name;
  double weight = 1;      // scheduler weight inside every class
  uint32_t max_running = 0;  // slots it may hold per pool (the gateway's tenants[].max_running); 0: no cap
  double max_share = 0;      // share of a pool's slots it may hold (tenants[].max_share); 0: no cap
};

struct EngineSpec {
  std::string profile = "llama-8b-a100";
  engine::EngineConfig config;  // the profile's
  uint32_t count = 1;
  uint32_t max_concurrency = 64;  // gateway slots per engine (the gateway's default)
  // Saturation signal the gateway scrapes (docs/engine-signals.md).
  double scrape_ms = 100;
  uint32_t max_waiting = 0;
  double kv_threshold = 0.9;
  bool signals = true;
  // Engines run vLLM's --scheduling-policy priority and the gateway passes
  // each class's engine_priority (as BackendConfig::priority_scheduling);
  // direct clients send none (0).
  bool priority_scheduling = false;
  // The gateway routes by prefix affinity, its index sized from the engines'
  // KV cache (num_blocks x block_size tokens); false: least loaded.
  bool prefix_affinity = true;
  // Adaptive capacity per engine (core/adaptive_capacity.hpp): the gateway's
  // slot limit per engine starts at max_concurrency and follows the engine's
  // signals; needs `signals`.
  sched::AdaptiveCapacityConfig adaptive;
  // The model's degraded variant (a quantised or smaller model: the
  // gateway's models[].degraded) on engines of its own, after the others:
  // staged degradation sends degradable classes there from its high stage
  // (docs/overload.md); nothing else uses them. 0: none.
  uint32_t variant_count = 0;
  std::string variant_profile;
  engine::EngineConfig variant_config;  // the variant profile's

  uint32_t total() const { return count + variant_count; }
};

// LoRA adapters on the base model (`lora:`): `adapters` of them; a request
// asks for one with probability `share`, which one by popularity (Zipf with
// exponent `skew`, 0: uniform; a developer's keystrokes and a chat session's
// turns keep theirs); each is served by `replicas` engines of its pool (0:
// every engine), placed round the pool. The engines' adapter slots and load
// time are engine.max_loras and engine.lora_load_ms.
struct LoraSpec {
  uint32_t adapters = 0;  // 0: every request is for the base model
  double skew = 1;
  double share = 1;
  uint32_t replicas = 0;
};

// Engine `engine` (of `count` in its pool, `index` there) serves `adapter`.
bool serves_adapter(const LoraSpec& lora, uint32_t index, uint32_t count, uint16_t adapter);

enum class DirectRouting { kLeastLoaded, kRoundRobin };

// Policies a run compares: "direct" (no gateway), the scheduler's "fifo",
// "priority", "hybrid", and "hybrid-no-preemption" (hybrid with preemption
// off whatever the scenario says, to show what preemption changes).
inline constexpr std::string_view kHybridNoPreemption = "hybrid-no-preemption";
inline constexpr std::string_view kHybridNoAffinity = "hybrid-no-affinity";  // hybrid, least-loaded routing
inline constexpr std::string_view kHybridNoBorrowing = "hybrid-no-borrowing";  // hybrid, pools lend nothing
inline constexpr std::string_view kHybridNoDebounce = "hybrid-no-debounce";  // hybrid, no class holds keyed requests
// Hybrid with another rendezvous salt: a tie-break and nothing else, the
// sweep's noise floor (DECISIONS.md D1).
inline constexpr std::string_view kHybridTieBreak = "hybrid-tiebreak";
// Hybrid without staged degradation (docs/overload.md), which hybrid and its
// other variants run as the gateway does by default (the scenario's
// `degradation` section).
inline constexpr std::string_view kHybridNoDegradation = "hybrid-no-degradation";
// Hybrid routing LoRA requests to the least loaded engine serving their
// adapter, whatever it has loaded (sched::SchedulerConfig::lora_affinity off).
inline constexpr std::string_view kHybridNoLoraAffinity = "hybrid-no-lora-affinity";
inline bool is_policy_name(std::string_view name) {
  return name == "direct" || name == kHybridNoPreemption || name == kHybridNoAffinity ||
         name == kHybridNoBorrowing || name == kHybridNoDebounce || name == kHybridTieBreak ||
         name == kHybridNoDegradation || name == kHybridNoLoraAffinity ||
         sched::policy_from_string(name);
}

struct Scenario;

// The scheduler class of each entry of Scenario::classes (an index among the
// entries that are classes of their own), and those entries' names.
std::vector<uint16_t> scheduler_classes(const Scenario& scenario);
std::vector<std::string> scheduler_class_names(const Scenario& scenario);
// Per scheduler class (as scheduler_classes numbers them): the gap between
// tokens its SLO asks for, seconds; 0 when it declares none. Its tpot_ms,
// or else what an e2e_ms leaves after its ttft_ms spread over max_tokens
// (the pace that still meets it at the longest answer); the tightest of the
// streams that join the class. The parser sets it as each class's
// tpot_slo (adaptive capacity's gap target, in both modes).
std::vector<double> class_gap_bounds_s(const Scenario& scenario);

// Some of the scenario's engines as a pool of their own for some classes
// (issue 12: the BRIEF deploys completion and chat apart); the gateway's
// `backends[].classes`.
struct PoolGroup {
  std::vector<std::string> classes;  // scheduler classes; empty: every class no other pool names
  uint32_t engines = 1;
  bool lend = false;  // its idle slots serve the other pools (the gateway's backends[].lend)
};

// Where the engines and classes go: pool p owns engines [first[p],
// first[p] + count[p]); scheduler class c runs in pool_of_class[c]. One
// pool of every engine when the scenario has no `pools`.
struct PoolLayout {
  std::vector<uint32_t> first, count;
  std::vector<uint32_t> pool_of_class;
  // The degraded variant's engines, the last pool (EngineSpec::variant_count).
  std::optional<uint32_t> variant_pool;
  // The pool that owns engine e.
  uint32_t pool_of_engine(std::size_t e) const;
};
PoolLayout pool_layout(const Scenario& scenario);

// A window of the run reported on its own (e.g. a surge): requests that
// arrive in [from_s, to_s).
struct PhaseSpec {
  std::string name;
  double from_s = 0;
  double to_s = 0;
};

struct Scenario {
  std::string name;
  std::string finding;  // the BRIEF finding and target it tests
  uint64_t seed = 1;
  double duration_s = 60;     // arrivals stop here
  uint64_t max_requests = 0;  // 0: no limit
  double drain_s = 600;       // after duration: unfinished work is cut here
  EngineSpec engine;
  DirectRouting direct_routing = DirectRouting::kLeastLoaded;
  std::vector<std::string> policies = {"direct", "fifo", "priority", "hybrid"};
  // Gateway replicas in front of the same engines, each with its own
  // scheduler and prefix index; a client sticks to one (its supersede key or
  // chat session picks it). Each replica allows max_concurrency per engine.
  uint32_t gateways = 1;
  std::vector<PoolGroup> pools;  // empty: one pool of every engine
  LoraSpec lora;
  // The gateway's scheduler section (yaml/setting_keys.hpp), its defaults;
  // `policy` is not used: the run's policies are.
  sched::SchedulerTunables scheduler;
  // Staged degradation (docs/overload.md): run by hybrid and its variants
  // but hybrid-no-degradation, as the gateway's config does (`enabled`, on
  // by default); the gateway's defaults unless the scenario's
  // `degradation:` sets them. The fifo and priority baselines never degrade.
  overload::DegradationConfig degradation;
  std::vector<TenantSpec> tenants;
  std::vector<ClassSpec> classes;
  std::vector<PhaseSpec> phases;  // reported apart as well; none by default
};

}  // namespace arbiter::bench
