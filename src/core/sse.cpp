#include "core/sse.hpp"

#include <algorithm>

namespace arbiter {

bool is_done_event(std::string_view event) {
  return event.starts_with("data: [DONE]") || event.starts_with("data:[DONE]");
}

namespace {

// The value of the event's first `field:` line: without the optional space
// after the colon and a trailing CR.
std::string_view first_field(std::string_view event, std::string_view field) {
  std::size_t pos = 0;
  while (pos < event.size()) {
    const std::size_t end = std::min(event.find('\n', pos), event.size());
    std::string_view line = event.substr(pos, end - pos);
    if (line.starts_with(field)) {
      line.remove_prefix(field.size());
      if (line.starts_with(' ')) line.remove_prefix(1);
      if (line.ends_with('\r')) line.remove_suffix(1);
      return line;
    }
    pos = end + 1;
  }
  return {};
}

}  // namespace

std::string_view event_data(std::string_view event) { return first_field(event, "data:"); }

std::string_view event_name(std::string_view event) { return first_field(event, "event:"); }

std::size_t SseFramer::find_end(std::string_view bytes, std::size_t from) {
  // An event ends at a blank line: "\n\n", "\n\r\n" (so "\r\n\r\n" too).
  // Only line ends are looked at, a memchr apart.
  const char* const begin = bytes.data();
  const char* const end = begin + bytes.size();
  for (const char* p = begin + from; p < end;) {
    const auto* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
    if (nl == nullptr) break;
    const char* q = nl + 1;
    if (q < end && *q == '\r') ++q;
    if (q < end && *q == '\n') return static_cast<std::size_t>(q + 1 - begin);
    p = nl + 1;
  }
  return std::string_view::npos;
}

std::string_view SseFramer::complete_tail(std::string_view piece, std::size_t n) {
  if (held_used_ == held_.size()) held_.push_back(std::make_unique<std::string>());
  std::string& event = *held_[held_used_++];
  event.assign(tail_);
  event.append(piece.substr(0, n));
  tail_.clear();
  return event;
}

void SseFramer::note(std::string_view event) {
  ++events_;
  if (is_done_event(event)) saw_done_ = true;
}

}  // namespace arbiter
