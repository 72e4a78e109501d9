// One request of live mode over its own HTTP/1.1 connection: connect, write
// the request, read the answer (an SSE stream on 200), and note what the
// client saw: when the first content token and each later one arrived, and
// how it ended. Runs on a single-threaded io_context; stop() ends it early
// (client abort, supersede, end of the run) by closing the socket, which a
// gateway or vLLM takes as the client leaving.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "bench/results.hpp"
#include "core/sse.hpp"
#include "http/asio.hpp"

namespace arbiter::bench {

using LiveClock = std::chrono::steady_clock;

// What the client saw of one request.
struct ExchangeResult {
  Outcome outcome = Outcome::kDropped;
  double first_token = -1;  // seconds from the run's start; -1: none
  double last_token = -1;   // seconds from the run's start; -1: none
  double ended = -1;        // seconds from the run's start: when the exchange ended
  uint32_t tokens = 0;      // content events received
  unsigned status = 0;      // HTTP status; 0: no response header
  std::string backend;      // the gateway's x-arbiter-backend header, if any
  std::string note;         // an answer the scenario does not expect (e.g. "HTTP 400")
};

class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  // `on_gap` gets each gap between two tokens, in seconds.
  Exchange(net::any_io_executor executor, LiveClock::time_point run_start,
           std::function<void(double)> on_gap);

  // Whether a content token has arrived (for the in-flight samples).
  bool streaming() const { return result_.first_token >= 0; }
  // The start of the text received so far (up to kKeptText bytes), for a
  // keystroke that types along it (bench/type_along.hpp).
  static constexpr std::size_t kKeptText = 256;
  std::string_view received_text() const { return text_; }

  // Ends the exchange now with `outcome` (closes the socket); no-op once it ended.
  void stop(Outcome outcome);
  // The client gives up at `at` unless the exchange ended by then.
  void abort_at(LiveClock::time_point at);

  Task<ExchangeResult> run(tcp::endpoint target, std::string request);

 private:
  double now() const;
  Task<void> read_stream(beast::flat_buffer& buffer,
                         boost::beast::http::response_parser<http::string_body>& parser);
  void on_event(std::string_view event);

  tcp::socket socket_;
  net::steady_timer abort_timer_;
  LiveClock::time_point run_start_;
  std::function<void(double)> on_gap_;
  SseFramer sse_;
  ExchangeResult result_;
  std::string text_;  // received_text()
  std::optional<Outcome> stopped_;  // set by stop()
  std::optional<Outcome> ended_;    // from the stream itself: an error event
  bool done_ = false;               // `data: [DONE]` seen
  bool over_ = false;               // run() has returned
};

// Maps a refusal's status to its outcome: 429 rejected, 503 dropped, 409 superseded.
Outcome outcome_of_status(unsigned status);

}  // namespace arbiter::bench
