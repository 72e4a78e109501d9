// The gateway's and the simulator's own log lines (start-up, health changes,
// breakers, failures; not the access log): one JSON object per line on
// stderr, {"level":"warn","event":"model_breaker","model":"m1",...}. Every
// string value is escaped (json_escape.hpp), so a value that reached it from
// a client, an engine or an exception cannot forge a field or a line. Each
// event kind writes at most kEventLinesPerSecond lines a second; the lines
// held back are counted and the next line of that kind says how many
// ("suppressed"), so a failure repeated per request cannot flood the log.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace arbiter {

enum class EventLevel : uint8_t { kInfo, kWarn, kError };

inline constexpr uint32_t kEventLinesPerSecond = 10;

// One field of a line: a key (the caller's literal) and a string, a whole
// number, a real number or a flag.
class EventField {
 public:
  EventField(std::string_view key, std::string_view text) : key_(key), kind_(Kind::kText), text_(text) {}
  EventField(std::string_view key, const char* text) : EventField(key, std::string_view(text)) {}
  EventField(std::string_view key, const std::string& text) : EventField(key, std::string_view(text)) {}
  EventField(std::string_view key, bool flag) : key_(key), kind_(Kind::kFlag), flag_(flag) {}
  EventField(std::string_view key, double real) : key_(key), kind_(Kind::kReal), real_(real) {}
  template <class Int>
    requires(std::is_integral_v<Int> && !std::is_same_v<Int, bool>)
  EventField(std::string_view key, Int whole)
      : key_(key),
        kind_(std::is_signed_v<Int> ? Kind::kSigned : Kind::kUnsigned),
        whole_(static_cast<uint64_t>(whole)) {}

  // `,"key":value` appended to `line`.
  void append_to(std::string& line) const;

 private:
  enum class Kind : uint8_t { kText, kFlag, kReal, kSigned, kUnsigned };
  std::string_view key_;
  Kind kind_;
  std::string_view text_;
  bool flag_ = false;
  double real_ = 0;
  uint64_t whole_ = 0;  // a signed number's two's complement when kind_ is kSigned
};

// The line (with its newline) for an event; `suppressed` > 0 adds that
// field: lines of this kind held back since the last one written.
std::string event_line(EventLevel level, std::string_view event, std::initializer_list<EventField> fields,
                       uint64_t suppressed = 0);

// The rate rule of log_event, with the second passed in: at most
// kEventLinesPerSecond lines per event kind and second. Not thread-safe.
class EventRateLimit {
 public:
  // Whether a line of `kind` may be written in `second`; when it may,
  // `held_back` is set to the lines of that kind refused since the last one.
  bool admit(std::string_view kind, int64_t second, uint64_t& held_back);

 private:
  struct KindRate {
    int64_t second = 0;
    uint32_t written = 0;
    uint64_t held_back = 0;
  };
  std::unordered_map<std::string, KindRate> kinds_;
};

// Writes the event's line to stderr, within its kind's rate; thread-safe.
void log_event(EventLevel level, std::string_view event, std::initializer_list<EventField> fields = {});

// Events that are decisions worth keeping (a breaker's transition, an
// ejection, a stage, a reload: the audit trail, docs/audit.md) go to the
// tap as well, every one (before the rate limit): the event's kind and its
// fields as JSON members (`"model":"m1","to":"open"`). Set before traffic
// and cleared (nullptr) before the tap's owner goes; not thread-safe
// against log_event.
struct EventTap {
  std::vector<std::string_view> kinds;
  std::function<void(std::string_view event, std::string_view fields)> take;
};
void set_event_tap(const EventTap* tap);

}  // namespace arbiter
