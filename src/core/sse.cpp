#include "core/sse.hpp"

#include <algorithm>

namespace arbiter {

bool is_done_event(std::string_view event) {
  return event.starts_with("data: [DONE]") || event.starts_with("data:[DONE]");
}

std::string_view event_data(std::string_view event) {
  std::size_t pos = 0;
  while (pos < event.size()) {
    const std::size_t end = std::min(event.find('\n', pos), event.size());
    std::string_view line = event.substr(pos, end - pos);
    if (line.starts_with("data:")) {
      line.remove_prefix(5);
      if (line.starts_with(' ')) line.remove_prefix(1);
      if (line.ends_with('\r')) line.remove_suffix(1);
      return line;
    }
    pos = end + 1;
  }
  return {};
}

const std::vector<std::string_view>& SseSplitter::feed(std::string_view bytes) {
  ready_.clear();
  // Drop what the previous call handed out before appending: the views it
  // returned are no longer in use.
  if (consumed_ > 0) {
    buffer_.erase(0, consumed_);
    scan_from_ -= consumed_;
    consumed_ = 0;
  }
  buffer_.append(bytes);
  std::size_t start = 0;
  // An event ends at a blank line: "\n\n", "\r\n\r\n" or mixed forms. Only
  // the terminator needs finding; field parsing is left to the consumer.
  for (std::size_t i = scan_from_; i < buffer_.size(); ++i) {
    if (buffer_[i] != '\n') continue;
    std::size_t j = i + 1;
    if (j < buffer_.size() && buffer_[j] == '\r') ++j;
    if (j < buffer_.size() && buffer_[j] == '\n') {
      std::string_view event(buffer_.data() + start, j + 1 - start);
      ready_.push_back(event);
      ++events_;
      if (is_done_event(event)) saw_done_ = true;
      start = j + 1;
      i = j;
    }
  }
  consumed_ = start;
  // Resume two bytes early so a terminator split across reads ("\n" | "\n",
  // "\n\r" | "\n") is still found.
  scan_from_ = buffer_.size() >= start + 2 ? buffer_.size() - 2 : start;
  return ready_;
}

std::string_view SseSplitter::pending() const {
  return std::string_view(buffer_).substr(consumed_);
}

}  // namespace arbiter
