#include "observability/event_log.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>

#include <fmt/format.h>

#include "observability/json_escape.hpp"

namespace arbiter {
namespace {

std::string_view level_name(EventLevel level) {
  switch (level) {
    case EventLevel::kInfo: return "info";
    case EventLevel::kWarn: return "warn";
    case EventLevel::kError: return "error";
  }
  return "error";
}

}  // namespace

void EventField::append_to(std::string& line) const {
  line += ',';
  append_json_string(line, key_);
  line += ':';
  switch (kind_) {
    case Kind::kText: append_json_string(line, text_); break;
    case Kind::kFlag: line += flag_ ? "true" : "false"; break;
    // JSON has no NaN or infinity: those are written as null.
    case Kind::kReal: line += std::isfinite(real_) ? fmt::format("{:.6g}", real_) : "null"; break;
    case Kind::kSigned: line += fmt::format("{}", static_cast<int64_t>(whole_)); break;
    case Kind::kUnsigned: line += fmt::format("{}", whole_); break;
  }
}

std::string event_line(EventLevel level, std::string_view event, std::initializer_list<EventField> fields,
                       uint64_t suppressed) {
  std::string line = "{\"level\":\"";
  line += level_name(level);
  line += "\",\"event\":";
  append_json_string(line, event);
  for (const EventField& field : fields) field.append_to(line);
  if (suppressed > 0) EventField("suppressed", suppressed).append_to(line);
  line += "}\n";
  return line;
}

bool EventRateLimit::admit(std::string_view kind, int64_t second, uint64_t& held_back) {
  KindRate& rate = kinds_.try_emplace(std::string(kind), KindRate{.second = second}).first->second;
  if (rate.second != second) {
    rate.second = second;
    rate.written = 0;
  }
  if (rate.written >= kEventLinesPerSecond) {
    ++rate.held_back;
    return false;
  }
  ++rate.written;
  held_back = rate.held_back;
  rate.held_back = 0;
  return true;
}

namespace {

std::atomic<const EventTap*> event_tap{nullptr};

}  // namespace

void set_event_tap(const EventTap* tap) { event_tap.store(tap, std::memory_order_release); }

void log_event(EventLevel level, std::string_view event, std::initializer_list<EventField> fields) {
  if (const EventTap* tap = event_tap.load(std::memory_order_acquire)) {
    if (std::find(tap->kinds.begin(), tap->kinds.end(), event) != tap->kinds.end()) {
      std::string members;
      for (const EventField& f : fields) f.append_to(members);
      tap->take(event, std::string_view(members).substr(members.empty() ? 0 : 1));  // without the leading comma
    }
  }
  static std::mutex mutex;
  static EventRateLimit limit;
  const int64_t second = std::chrono::duration_cast<std::chrono::seconds>(
                             std::chrono::steady_clock::now().time_since_epoch())
                             .count();
  uint64_t suppressed = 0;
  {
    const std::lock_guard lock(mutex);
    if (!limit.admit(event, second, suppressed)) return;
  }
  const std::string line = event_line(level, event, fields, suppressed);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace arbiter
