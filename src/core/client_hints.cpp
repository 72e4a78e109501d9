#include "core/client_hints.hpp"

#include <algorithm>
#include <charconv>
#include <string>

namespace arbiter {

namespace {

// A decimal integer in [min, max], optional whitespace around it; nullopt
// for anything else (a sign on a positive number, a fraction, a unit).
std::optional<int64_t> read_integer(std::string_view text, int64_t min, int64_t max) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return std::nullopt;
  text = text.substr(first, text.find_last_not_of(" \t") - first + 1);
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max)
    return std::nullopt;
  return value;
}

ApiError invalid(std::string_view header, std::string what) {
  return ApiError{ErrorCode::kInvalidRequest,
                  "the " + std::string(header) + " header must be " + std::move(what),
                  std::string(header),
                  {}};
}

}  // namespace

std::expected<ClientHints, ApiError> parse_client_hints(std::optional<std::string_view> priority,
                                                        std::optional<std::string_view> ttft) {
  ClientHints hints;
  if (priority) {
    const auto value = read_integer(*priority, -kMaxPriorityHint, kMaxPriorityHint);
    if (!value) {
      return std::unexpected(
          invalid(kPriorityHeader, "an integer in [-1000000, 1000000] (lower runs first)"));
    }
    hints.priority = static_cast<int>(*value);
  }
  if (ttft) {
    const auto value = read_integer(*ttft, 1, kMaxTtftHintMs);
    if (!value) {
      return std::unexpected(invalid(kTtftHeader, "whole milliseconds in [1, 86400000]"));
    }
    hints.ttft = std::chrono::milliseconds(*value);
  }
  return hints;
}

sched::Duration class_ttft_target(const sched::ClassPolicy& cls) {
  return cls.ttft_slo > sched::Duration::zero() ? cls.ttft_slo : cls.max_queue_wait;
}

BoundHints bound_client_hints(const ClientHints& hints, const sched::ClassPolicy& cls,
                              const TenantConfig* tenant) {
  BoundHints out;
  if (hints.priority) {
    // Anonymous clients get no raise: anyone can send a header.
    const int raise = tenant != nullptr ? tenant->max_priority_raise : 0;
    const int highest = cls.engine_priority - raise;  // lower runs first
    out.priority_clamped = *hints.priority < highest;
    out.priority = std::max(*hints.priority, highest);
  }
  if (hints.ttft) {
    const sched::Duration target = class_ttft_target(cls);
    sched::Duration floor = target;
    if (tenant != nullptr && tenant->min_ttft_hint > sched::Duration::zero()) {
      floor = std::min(floor, std::chrono::duration_cast<sched::Duration>(tenant->min_ttft_hint));
    }
    const auto asked = std::chrono::duration_cast<sched::Duration>(*hints.ttft);
    out.ttft_clamped = asked < floor;
    out.ttft = std::max(asked, floor);
  }
  return out;
}

}  // namespace arbiter
