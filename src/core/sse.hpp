// Finds where Server-Sent Events end in a byte stream that arrives in
// pieces (one read of an engine's answer each), in place: an event that
// lies whole in a piece is handed out as a view into that piece, so the
// relay writes the bytes it read, unchanged and uncopied. Only the start of
// an event that a read cut off is copied, and the event it begins is handed
// out from the framer's own storage once its end arrives.
#pragma once

#include <cstddef>
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace arbiter {

class SseFramer {
 public:
  // Calls on_event(event) for each event that `piece` completes, in order;
  // each view includes its terminating blank line ("\n\n", "\r\n\r\n" or a
  // mix). Views into `piece` are valid as long as the piece; an event that
  // began in an earlier piece lies in the framer's storage, valid until
  // release(). The bytes after the last complete event wait for the next
  // piece (pending()).
  template <class OnEvent>
  void feed(std::string_view piece, OnEvent&& on_event);

  // The views of completed events held by the framer may now be reused
  // (call after their bytes were written).
  void release() { held_used_ = 0; }

  // Bytes received that do not yet form a whole event.
  std::string_view pending() const { return tail_; }

  // True once an event `data: [DONE]` has been seen.
  bool saw_done() const { return saw_done_; }
  std::size_t events() const { return events_; }

 private:
  // One past the blank line that ends the event starting at `from`, or
  // npos when `bytes` holds no end of it.
  static std::size_t find_end(std::string_view bytes, std::size_t from);
  // The event `tail_` began, completed by the first `n` bytes of a piece,
  // copied into held storage.
  std::string_view complete_tail(std::string_view piece, std::size_t n);
  void note(std::string_view event);

  std::string tail_;  // an event begun, not yet ended
  // Completed events that were split across pieces, each string on the
  // heap of its own so that it never moves while views into it are out.
  // Empty until a read cuts an event (a std::deque would allocate ~0.6 KB
  // per open stream up front).
  std::vector<std::unique_ptr<std::string>> held_;
  std::size_t held_used_ = 0;
  std::size_t events_ = 0;
  bool saw_done_ = false;
};

// True when an event's data is the OpenAI end-of-stream marker.
bool is_done_event(std::string_view event);

// The payload of an event's first `data:` line, without the optional space
// after the colon and a trailing CR; empty when it has none. vLLM, SGLang and
// llama.cpp send one data line per event.
std::string_view event_data(std::string_view event);
// The same for its first `event:` line: the event's type (OpenAI's
// Responses API names every event, response.output_text.delta, ...); empty
// when it has none (chat and completion streams).
std::string_view event_name(std::string_view event);

template <class OnEvent>
void SseFramer::feed(std::string_view piece, OnEvent&& on_event) {
  std::size_t start = 0;  // where the next event begins in `piece`
  if (!tail_.empty()) {
    // A terminator may begin in the last two bytes of the tail.
    const std::size_t keep = std::min<std::size_t>(tail_.size(), 2);
    char joint[4] = {};
    std::memcpy(joint, tail_.data() + tail_.size() - keep, keep);
    const std::size_t from_piece = std::min<std::size_t>(piece.size(), 4 - keep);
    std::memcpy(joint + keep, piece.data(), from_piece);
    // The tail holds no terminator of its own, so one found here ends
    // inside the piece.
    std::size_t end = find_end(std::string_view(joint, keep + from_piece), 0);
    if (end != std::string_view::npos) {
      end -= keep;
    } else {
      end = find_end(piece, 0);
    }
    if (end == std::string_view::npos) {
      tail_.append(piece);
      return;
    }
    const std::string_view event = complete_tail(piece, end);
    note(event);
    on_event(event);
    start = end;
  }
  for (;;) {
    const std::size_t end = find_end(piece, start);
    if (end == std::string_view::npos) break;
    const std::string_view event = piece.substr(start, end - start);
    note(event);
    on_event(event);
    start = end;
  }
  tail_.assign(piece.substr(start));
}

}  // namespace arbiter
