#include "core/engine_metrics.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace arbiter {

namespace {

// The figure a metric family feeds.
enum class Figure : uint8_t {
  kNone,
  kWaiting,
  kRunning,
  kKvUsage,
  kKvUsageOld,
  kCacheConfig,
  kPrefixQueries,  // counter: prompt tokens looked up in the prefix cache
  kPrefixHits,     // counter: of them, found
  kCacheHitRate,   // gauge 0..1 (SGLang)
};

struct KnownFamily {
  std::string_view name;  // full metric name
  Figure figure;          // what it feeds
};

// Families per engine, matched exactly (so _bucket/_sum/_count and
// look-alike families never match).
constexpr KnownFamily kVllmFamilies[] = {
    {"vllm:num_requests_waiting", Figure::kWaiting},
    {"vllm:num_requests_running", Figure::kRunning},
    {"vllm:kv_cache_usage_perc", Figure::kKvUsage},
    {"vllm:cache_config_info", Figure::kCacheConfig},
    {"vllm:gpu_cache_usage_perc", Figure::kKvUsageOld},
    {"vllm:prefix_cache_queries_total", Figure::kPrefixQueries},
    {"vllm:prefix_cache_hits_total", Figure::kPrefixHits},
};
constexpr KnownFamily kSglangFamilies[] = {
    {"sglang:num_queue_reqs", Figure::kWaiting},
    {"sglang:num_running_reqs", Figure::kRunning},
    {"sglang:token_usage", Figure::kKvUsage},
    {"sglang:cache_hit_rate", Figure::kCacheHitRate},
};
constexpr KnownFamily kLlamaCppFamilies[] = {
    {"llamacpp:requests_deferred", Figure::kWaiting},
    {"llamacpp:requests_processing", Figure::kRunning},
    {"llamacpp:kv_cache_usage_ratio", Figure::kKvUsage},
};

bool is_blank(char c) { return c == ' ' || c == '\t'; }

template <std::size_t N>
Figure lookup(const KnownFamily (&families)[N], std::string_view name) {
  for (const auto& f : families) {
    if (f.name == name) return f.figure;
  }
  return Figure::kNone;
}

// Sorts a sample name into an engine and a figure; kUnknown for anything
// that is not an engine metric (the common case: one or two byte compares).
std::pair<EngineFlavour, Figure> classify(std::string_view name) {
  switch (name.empty() ? '\0' : name.front()) {
    case 'v':
      if (name.starts_with("vllm:")) return {EngineFlavour::kVllm, lookup(kVllmFamilies, name)};
      break;
    case 's':
      if (name.starts_with("sglang:")) return {EngineFlavour::kSglang, lookup(kSglangFamilies, name)};
      break;
    case 'l':
      if (name.starts_with("llamacpp:")) {
        return {EngineFlavour::kLlamaCpp, lookup(kLlamaCppFamilies, name)};
      }
      break;
    default:
      break;
  }
  return {EngineFlavour::kUnknown, Figure::kNone};
}

// Index just past the label set that opens at line[i] == '{', honouring
// quoted values with escapes; npos when the set is not closed.
std::size_t skip_labels(std::string_view line, std::size_t i) {
  bool quoted = false;
  for (++i; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '\\') ++i;  // the escaped byte cannot close the string
      else if (c == '"') quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == '}') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// The value of label `name` in a label set ({a="1",b="2"}) as an unsigned
// integer; nullopt when absent or not a whole number.
std::optional<uint64_t> label_number(std::string_view set, std::string_view name) {
  for (std::size_t at = set.find(name); at != std::string_view::npos; at = set.find(name, at + 1)) {
    const bool starts = at > 0 && (set[at - 1] == '{' || set[at - 1] == ',' || set[at - 1] == ' ');
    const std::size_t eq = at + name.size();
    if (!starts || set.substr(eq, 2) != "=\"") continue;
    const std::size_t begin = eq + 2, end = set.find('"', begin);
    if (end == std::string_view::npos) return std::nullopt;
    uint64_t value = 0;
    const auto [ptr, ec] = std::from_chars(set.data() + begin, set.data() + end, value);
    if (ec != std::errc{} || ptr != set.data() + end) return std::nullopt;
    return value;
  }
  return std::nullopt;
}

// Parses a sample value: a float, NaN, +Inf or -Inf (from_chars takes no '+').
std::optional<double> parse_value(std::string_view token) {
  if (!token.empty() && token.front() == '+') token.remove_prefix(1);
  double value = 0;
  const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (ec != std::errc{} || end != token.data() + token.size()) return std::nullopt;
  return value;
}

// Running totals over the series of each figure.
struct Accumulator {
  std::optional<double> waiting;
  std::optional<double> running;
  std::optional<double> kv_usage;
  std::optional<double> kv_usage_old;
  std::optional<double> prefix_queries;
  std::optional<double> prefix_hits;
  std::optional<double> cache_hit_rate;

  void add(Figure figure, double value) {
    switch (figure) {
      case Figure::kWaiting:
        waiting = waiting.value_or(0) + value;
        break;
      case Figure::kRunning:
        running = running.value_or(0) + value;
        break;
      case Figure::kKvUsage:
        kv_usage = std::max(kv_usage.value_or(value), value);
        break;
      case Figure::kKvUsageOld:
        kv_usage_old = std::max(kv_usage_old.value_or(value), value);
        break;
      case Figure::kPrefixQueries:
        prefix_queries = prefix_queries.value_or(0) + value;
        break;
      case Figure::kPrefixHits:
        prefix_hits = prefix_hits.value_or(0) + value;
        break;
      case Figure::kCacheHitRate:  // the worst series, as for KV use
        cache_hit_rate = std::min(cache_hit_rate.value_or(value), value);
        break;
      case Figure::kNone:
      case Figure::kCacheConfig:  // labels, not a sample: read apart (the KV size)
        break;
    }
  }
};

}  // namespace

std::string_view flavour_name(EngineFlavour flavour) {
  switch (flavour) {
    case EngineFlavour::kVllm:
      return "vllm";
    case EngineFlavour::kSglang:
      return "sglang";
    case EngineFlavour::kLlamaCpp:
      return "llamacpp";
    case EngineFlavour::kUnknown:
      break;
  }
  return "unknown";
}

EngineLoad parse_engine_load(std::string_view body) {
  EngineLoad load;
  Accumulator acc;
  std::size_t pos = 0;
  while (pos < body.size()) {
    const char* start = body.data() + pos;
    const void* nl = std::memchr(start, '\n', body.size() - pos);
    const std::size_t len = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - start)
                               : body.size() - pos;
    std::string_view line(start, len);
    pos += len + 1;

    while (!line.empty() && is_blank(line.front())) line.remove_prefix(1);
    if (line.empty() || line.front() == '#') continue;
    if (line.back() == '\r') line.remove_suffix(1);

    std::size_t i = 0;
    while (i < line.size() && line[i] != '{' && !is_blank(line[i])) ++i;
    const auto [flavour, figure] = classify(line.substr(0, i));
    if (flavour == EngineFlavour::kUnknown) continue;
    if (load.flavour == EngineFlavour::kUnknown) load.flavour = flavour;
    if (figure == Figure::kNone) continue;

    if (i < line.size() && line[i] == '{') {
      const std::size_t labels = i;
      i = skip_labels(line, i);
      if (i == std::string_view::npos) continue;
      if (figure == Figure::kCacheConfig) {
        const std::string_view set = line.substr(labels, i - labels);
        const auto blocks = label_number(set, "num_gpu_blocks");
        const auto size = label_number(set, "block_size");
        // A product past 64 bits is no engine's cache (it would wrap, to 0 even): not read.
        if (blocks && size && *blocks > 0 && *size > 0 && *blocks <= UINT64_MAX / *size) {
          load.kv_cache_tokens = *blocks * *size;
        }
        continue;
      }
    }
    if (figure == Figure::kCacheConfig) continue;
    while (i < line.size() && is_blank(line[i])) ++i;
    std::size_t end = i;
    while (end < line.size() && !is_blank(line[end])) ++end;
    const auto value = parse_value(line.substr(i, end - i));
    if (!value || !std::isfinite(*value)) continue;
    acc.add(figure, *value);
  }
  load.waiting = acc.waiting;
  load.running = acc.running;
  // vLLM renamed the gauge; a server exporting both is read by the new name.
  load.kv_usage = acc.kv_usage ? acc.kv_usage : acc.kv_usage_old;
  if (acc.prefix_queries && acc.prefix_hits) load.prefix_cache = PrefixCacheCounts{*acc.prefix_queries, *acc.prefix_hits};
  if (acc.cache_hit_rate) load.cache_hit_rate = std::clamp(*acc.cache_hit_rate, 0.0, 1.0);
  return load;
}

ScrapeOutcome classify_answer(unsigned status, const EngineLoad& load) {
  // 502/503/504: a proxy without its engine, or an engine still loading.
  if (status == 502 || status == 503 || status == 504) return ScrapeOutcome::kFailed;
  if (status == 200 && load.has_figures()) return ScrapeOutcome::kOk;
  return ScrapeOutcome::kUnusable;
}

void record_scrape(MonitorState& state, ScrapeOutcome outcome, const EngineLoad& load,
                   sched::TimePoint now) {
  switch (outcome) {
    case ScrapeOutcome::kOk:
      state.last_success = now;
      state.load = load;
      [[fallthrough]];
    case ScrapeOutcome::kUnusable:
      state.last_answer = now;
      state.consecutive_failures = 0;
      state.consecutive_silent = 0;
      state.refused = false;
      break;
    case ScrapeOutcome::kFailed:
      ++state.consecutive_failures;
      state.consecutive_silent = 0;
      state.refused = true;
      break;
    case ScrapeOutcome::kSilent:
      ++state.consecutive_failures;
      ++state.consecutive_silent;
      break;
  }
}

sched::BackendSignal judge(const MonitorState& state, sched::TimePoint now, const SignalRules& rules) {
  sched::BackendSignal signal;
  signal.down = state.consecutive_failures >= std::max<uint32_t>(rules.failures_before_down, 1) &&
                (state.refused || now - state.last_answer >= rules.silence_before_down);
  signal.stale = now - state.last_success > rules.stale_after;
  if (!signal.stale) {
    const auto& load = state.load;
    signal.saturated = (load.waiting && *load.waiting > rules.max_waiting) ||
                       (load.kv_usage && *load.kv_usage > rules.kv_threshold);
    if (load.running && *load.running > 0) {
      signal.engine_running = static_cast<uint32_t>(std::min(*load.running, 1e9));
    }
  }
  return signal;
}

}  // namespace arbiter
