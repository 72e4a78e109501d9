// Client hints: a request's own priority and TTFT deadline, sent as headers
// in the convention of the peers (docs/configuration.md, "Client hints"),
// read once and bounded by what its tenant is allowed. Pure: the gateway's
// HintsStage parses, DispatchHandler bounds (the class is final only there:
// the traffic breaker may move a request to its degrade_class).
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <optional>
#include <string_view>

#include "core/config.hpp"
#include "core/error.hpp"

namespace arbiter {

// The engine priority a request asks for, on the class `priority` scale
// (vLLM's: lower runs first). NVIDIA NVCF's LLM gateway's header, also the
// llm-d batch gateway's.
inline constexpr std::string_view kPriorityHeader = "x-priority";
// The time to first token a request asks for, in milliseconds: the
// Gateway API Inference Extension's (llm-d inference scheduler) SLO header,
// which orders requests by deadline inside a priority band, as here.
inline constexpr std::string_view kTtftHeader = "x-slo-ttft-ms";

// Bounds of a hint's value; outside them the request gets 400. The class
// `priority` key's, and a day: a TTFT past that is no deadline.
inline constexpr int64_t kMaxPriorityHint = 1'000'000;
inline constexpr int64_t kMaxTtftHintMs = 86'400'000;

// What the headers said, as sent.
struct ClientHints {
  std::optional<int> priority;                    // x-priority
  std::optional<std::chrono::milliseconds> ttft;  // x-slo-ttft-ms, >= 1 ms
  bool any() const { return priority || ttft; }
};

// The two headers' values (nullopt: absent). A value that is not a decimal
// integer within its bounds is a 400 naming the header: a typo must not
// silently lose a request its urgency.
std::expected<ClientHints, ApiError> parse_client_hints(std::optional<std::string_view> priority,
                                                        std::optional<std::string_view> ttft);

// The hints a request of class `cls` and `tenant` (null: anonymous) gets.
// A request may lower its priority and loosen its deadline freely; it may
// raise its priority by at most the tenant's max_priority_raise above its
// class's and tighten its deadline down to the tenant's min_ttft_hint
// (never to less than both it and the class's own target). A claim beyond
// that is clamped to the bound, not refused: a client cannot know its
// tenant's allowance.
struct BoundHints {
  std::optional<int> priority;          // engine priority to send; nullopt: the class's
  std::optional<sched::Duration> ttft;  // TTFT target the scheduler orders by; nullopt: the class's
  bool priority_clamped = false;        // the priority hint was above the tenant's bound
  bool ttft_clamped = false;            // the TTFT hint was tighter than the tenant's floor
};
BoundHints bound_client_hints(const ClientHints& hints, const sched::ClassPolicy& cls,
                              const TenantConfig* tenant);

// A class's TTFT target: its ttft_slo, or its max_queue_wait when it has
// none (a request must start by then). A hint is judged against it.
sched::Duration class_ttft_target(const sched::ClassPolicy& cls);

}  // namespace arbiter
