// Splits a byte stream of Server-Sent Events into whole events without
// copying them into new strings: the relay writes each event out as soon as
// its terminating blank line arrives, byte for byte as the engine sent it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace arbiter {

class SseSplitter {
 public:
  // Appends bytes and returns the whole events now complete (views into an
  // internal buffer, valid until the next call to feed()). Each view
  // includes its terminating blank line.
  const std::vector<std::string_view>& feed(std::string_view bytes);

  // Bytes received that do not yet form a whole event.
  std::string_view pending() const;

  // True once an event `data: [DONE]` has been seen.
  bool saw_done() const { return saw_done_; }
  std::size_t events() const { return events_; }

 private:
  std::string buffer_;       // unconsumed bytes, starting at consumed_
  std::size_t consumed_ = 0; // bytes of buffer_ already returned as events
  std::size_t scan_from_ = 0;// where the search for a blank line resumes
  std::vector<std::string_view> ready_;
  std::size_t events_ = 0;
  bool saw_done_ = false;
};

// True when an event's data is the OpenAI end-of-stream marker.
bool is_done_event(std::string_view event);

// The payload of an event's first `data:` line, without the optional space
// after the colon and a trailing CR; empty when it has none. vLLM, SGLang and
// llama.cpp send one data line per event.
std::string_view event_data(std::string_view event);

}  // namespace arbiter
