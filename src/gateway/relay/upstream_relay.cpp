#include "gateway/relay/upstream_relay.hpp"

#include <charconv>

#include "gateway/relay/upstream_exchange.hpp"

namespace arbiter {

std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view seconds, std::string_view millis) {
  const auto number = [](std::string_view text) -> std::optional<double> {
    double v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || !(v >= 0) || v > 1e9) return std::nullopt;
    return v;
  };
  if (const auto ms = number(millis)) return std::chrono::milliseconds(static_cast<int64_t>(*ms));
  if (const auto s = number(seconds)) return std::chrono::milliseconds(static_cast<int64_t>(*s * 1000));
  return std::nullopt;
}

std::string_view billed_from_name(RelayOutcome::Billed::From from) {
  switch (from) {
    case RelayOutcome::Billed::From::kEngine: return "engine";
    case RelayOutcome::Billed::From::kEvents: return "events";
    case RelayOutcome::Billed::From::kEstimate: return "estimate";
  }
  return "engine";
}

Task<void> relay(const RelayRequest& r, RelayOutcome& outcome) {
  return UpstreamExchange::run(UpstreamExchange(r, outcome));
}

Task<void> relay_handed_over(const RelayRequest& r, HandedStream stream, RelayOutcome& outcome) {
  return UpstreamExchange::run_handed(UpstreamExchange(r, outcome), std::move(stream));
}

}  // namespace arbiter
