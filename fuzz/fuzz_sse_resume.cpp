// An engine's event stream as the relay reads it: the SSE framer
// (core/sse) over reads of sizes the fuzzer picks, each event into the
// checkpoint of a resumable request (core/resume: track_event) over several
// runs, and the response assembled for a client that did not stream.
// Properties:
// - the split does not depend on how the bytes were cut into reads, and the
//   events and what is pending are the input, byte for byte, in order;
// - every event ends with its blank line, and a rewritten event is one
//   `data:` line of JSON;
// - the assembled response is JSON.
// Input: one byte of choices (route, where a new run starts), one byte per
// read size (a zero byte ends the list), then the stream.
#include <boost/json.hpp>

#include <string>
#include <vector>

#include "core/resume.hpp"
#include "core/sse.hpp"
#include "fuzz_check.hpp"

namespace arbiter {
namespace {
namespace json = boost::json;

// Each read is a piece of its own (a copy, as a read buffer is reused), and
// the events it completed are taken before the next: a view that outlived
// its read would show the next read's bytes.
std::vector<std::string> split(const std::vector<std::size_t>& reads, std::string_view stream, SseFramer& s) {
  std::vector<std::string> events;
  std::size_t at = 0;
  std::string read;
  for (std::size_t i = 0; at < stream.size(); ++i) {
    const std::size_t n = std::min(i < reads.size() ? reads[i] : stream.size(), stream.size() - at);
    read.assign(stream.substr(at, n));
    std::vector<std::string_view> views;
    s.feed(read, [&views](std::string_view e) { views.push_back(e); });
    for (const std::string_view e : views) events.emplace_back(e);
    read.assign(read.size(), '\xff');
    s.release();
    at += n;
  }
  return events;
}

void check_stream(uint8_t choices, const std::vector<std::size_t>& reads, std::string_view stream) {
  SseFramer pieces;
  const std::vector<std::string> events = split(reads, stream, pieces);
  SseFramer whole;
  std::vector<std::string> at_once;
  whole.feed(stream, [&at_once](std::string_view e) { at_once.emplace_back(e); });
  FUZZ_CHECK(events == at_once);
  FUZZ_CHECK(pieces.pending() == whole.pending());
  FUZZ_CHECK(pieces.events() == events.size());
  FUZZ_CHECK(pieces.saw_done() == whole.saw_done());
  std::string joined;
  for (const std::string& e : events) {
    FUZZ_CHECK(e.ends_with("\n\n") || e.ends_with("\n\r\n"));
    joined += e;
  }
  joined += pieces.pending();
  FUZZ_CHECK(joined == stream);

  const Route route = (choices & 1) ? Route::kCompletions : Route::kChatCompletions;
  Checkpoint checkpoint;
  checkpoint.begin_run();
  for (std::size_t i = 0; i < events.size(); ++i) {
    // A preemption before this event: the next run starts.
    if (choices & (2u << (i % 7))) checkpoint.begin_run();
    const std::string_view data = event_data(events[i]);
    FUZZ_CHECK(data.find('\n') == std::string_view::npos);
    const EventResult r = track_event(events[i], route, checkpoint);
    if (r.fate == EventFate::kRewritten) {
      FUZZ_CHECK(r.rewritten.starts_with("data: ") && r.rewritten.ends_with("\n\n"));
      const std::string_view payload(r.rewritten.data() + 6, r.rewritten.size() - 8);
      FUZZ_CHECK(payload.find('\n') == std::string_view::npos);
      boost::system::error_code ec;
      const json::value v = json::parse(payload, ec);
      FUZZ_CHECK(!ec && v.is_object());
    }
  }
  FUZZ_CHECK(checkpoint.tokens >= checkpoint.tokens_before_run);
  boost::system::error_code ec;
  const json::value response = json::parse(aggregate_response(route, checkpoint), ec);
  FUZZ_CHECK(!ec && response.is_object());
}

}  // namespace
}  // namespace arbiter

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  arbiter::fuzz::Input in(data, size);
  const uint8_t choices = in.byte();
  std::vector<std::size_t> reads;
  for (uint8_t b = in.byte(); b != 0 && reads.size() < 16; b = in.byte()) reads.push_back(b);
  arbiter::check_stream(choices, reads, in.rest());
  return 0;
}
