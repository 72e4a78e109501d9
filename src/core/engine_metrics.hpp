// An inference engine's load, read from its Prometheus /metrics text, and
// the verdict the scheduler acts on. Pure: no I/O, clock passed in. The
// network side (gateway/backend_monitor) scrapes, records each scrape here
// and reports the verdict when it changes. See docs/engine-signals.md.
//
// Figures read (every other family, histograms included, is skipped):
//   engine     waiting                     running                       kv_usage (0..1)
//   vLLM       vllm:num_requests_waiting   vllm:num_requests_running     vllm:kv_cache_usage_perc
//                                                                        (old: vllm:gpu_cache_usage_perc)
//   SGLang     sglang:num_queue_reqs       sglang:num_running_reqs       sglang:token_usage
//   llama.cpp  llamacpp:requests_deferred  llamacpp:requests_processing  llamacpp:kv_cache_usage_ratio
//                                                                        (older servers only)
// and, for the load coefficient's cache term (core/overload/load_coefficient.hpp),
// the prefix cache: vLLM's counters vllm:prefix_cache_queries_total and
// vllm:prefix_cache_hits_total (tokens; summed over series), SGLang's gauge
// sglang:cache_hit_rate (the lowest series). llama.cpp reports none.
// Several series of one family (model_name, engine or dp-rank labels) are
// summed for waiting and running; kv_usage takes the fullest series, since a
// fraction cannot be summed and the fullest engine is the one that preempts
// first. NaN and infinite samples are ignored.
//
// Verdict rules (judge()):
//   down       the last `failures_before_down` scrapes in a row got no answer,
//              and one of them was refused (connect refused, reset, malformed
//              HTTP, 502/503/504) or the engine has answered nothing for
//              `silence_before_down`: the backend is skipped until one scrape
//              is answered again. Deadlines alone (kSilent) take that long
//              because an engine under load can be slow to render /metrics
//              (seconds, reported of SGLang) while it serves well; calling it
//              down then would turn a busy fleet into "every backend is down".
//   stale      the last scrape with engine figures is older than
//              `stale_after`: the scheduler ignores `saturated` and falls back
//              to the concurrency limit alone (never a random pick). The
//              monitor's start counts as a fresh, empty scrape, so a backend
//              is neither stale nor saturated for its first `stale_after`.
//   saturated  (only while not stale) the engine already queues requests
//              (waiting > max_waiting, default 0) or its KV cache is fuller
//              than kv_threshold (default 0.9): it takes no new dispatch.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/scheduler_types.hpp"

namespace arbiter {

// Which engine wrote the exposition, from its metric name prefix.
enum class EngineFlavour : uint8_t {
  kUnknown,   // no vllm:, sglang: or llamacpp: sample seen
  kVllm,      // vllm:*
  kSglang,    // sglang:*
  kLlamaCpp,  // llamacpp:*
};

// "vllm" | "sglang" | "llamacpp" | "unknown" (metrics label, logs).
std::string_view flavour_name(EngineFlavour flavour);

// Cumulative prefix-cache lookups of an engine (vLLM's counters, tokens):
// the hit rate over a window is the ratio of two scrapes' differences.
struct PrefixCacheCounts {
  double queries = 0;
  double hits = 0;
  friend bool operator==(const PrefixCacheCounts&, const PrefixCacheCounts&) = default;
};

// One scrape's figures; a figure the body does not carry stays empty.
struct EngineLoad {
  std::optional<double> waiting;   // requests queued inside the engine (sum over series)
  std::optional<double> running;   // requests being processed (sum over series)
  std::optional<double> kv_usage;  // KV cache use, 0..1 (fullest series)
  // Tokens the engine's KV cache holds (vLLM's cache_config_info labels:
  // num_gpu_blocks x block_size): what prefix-affinity routing sizes its
  // index of the backend by. Not a load figure.
  std::optional<uint64_t> kv_cache_tokens;
  std::optional<PrefixCacheCounts> prefix_cache;  // vLLM: both counters seen
  std::optional<double> cache_hit_rate;           // SGLang: the engine's own rate, 0..1
  EngineFlavour flavour = EngineFlavour::kUnknown;  // prefix of the first engine sample seen

  // True when at least one figure was found (the scrape is usable).
  bool has_figures() const { return waiting || running || kv_usage; }
  friend bool operator==(const EngineLoad&, const EngineLoad&) = default;
};

// Parses a Prometheus (or OpenMetrics) text exposition: comments, HELP/TYPE
// lines, labels with escaped quotes, timestamps, exemplars, CRLF line ends.
// One pass, no allocation; malformed lines are skipped.
EngineLoad parse_engine_load(std::string_view body);

// How one scrape went, for the verdict.
enum class ScrapeOutcome : uint8_t {
  kOk,        // 200 with engine figures: refreshes the load
  kUnusable,  // answered without figures (404, 501, 200 with other metrics): alive, not fresh
  kFailed,    // refused: connect refused, reset, malformed, or 502/503/504: counts towards down
  kSilent,    // the scrape's deadline passed without an answer: slow or hung
};

// The outcome of a scrape that got an HTTP answer.
ScrapeOutcome classify_answer(unsigned status, const EngineLoad& load);

// Tunables of judge(); defaults from the issue (see docs/engine-signals.md).
struct SignalRules {
  double kv_threshold = 0.9;  // saturated when kv_usage is above this
  double max_waiting = 0;     // saturated when waiting is above this (0: any queued request)
  sched::Duration stale_after = std::chrono::seconds(2);  // last figures older than this: stale
  uint32_t failures_before_down = 3;  // unanswered scrapes in a row before down (0 reads as 1)
  // Without a refusal among them, down also needs this long without any answer.
  sched::Duration silence_before_down = std::chrono::seconds(10);
};

// What the monitor remembers about one backend between scrapes.
struct MonitorState {
  sched::TimePoint last_success{};    // last kOk scrape (the monitor's start before the first)
  sched::TimePoint last_answer{};     // last kOk or kUnusable scrape (likewise)
  uint32_t consecutive_failures = 0;  // kFailed and kSilent scrapes since the last answered one
  uint32_t consecutive_silent = 0;    // kSilent scrapes in a row (the next deadline grows with them)
  bool refused = false;               // a kFailed among the consecutive failures
  EngineLoad load;                    // figures of the last kOk scrape
};

// Folds one scrape into the state: kOk refreshes figures and time, any answer
// clears the failure run, kFailed and kSilent extend it.
void record_scrape(MonitorState& state, ScrapeOutcome outcome, const EngineLoad& load,
                   sched::TimePoint now);

// The verdict at `now` (rules in the header comment).
sched::BackendSignal judge(const MonitorState& state, sched::TimePoint now, const SignalRules& rules);

}  // namespace arbiter
