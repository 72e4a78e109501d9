// The relay's machinery (relay/upstream_relay.hpp): one exchange with a
// backend for one run of a request (connect or reuse, send, read the head),
// then the answer relayed by its mode, each mode in a file of its own:
//   upstream_exchange.cpp  the exchange, its reads, its failures
//   relay_stream.cpp       an SSE stream, event by event, byte-exact (a resumable
//                          one's events taken into its checkpoint)
//   relay_aggregate.cpp    a stream the client gets whole at its end
//   relay_whole.cpp        a whole answer (an engine's error as OpenAI's), or a
//                          continuation the backend refused
//   relay_handed.cpp       typing through: a stream handed to a heir, and taken up
// Only the relay's own files include it.
#pragma once

#include <array>
#include <chrono>
#include <expected>
#include <forward_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/sse.hpp"
#include "gateway/relay/upstream_relay.hpp"
#include "http/upstream_response.hpp"
#include "http/write_now.hpp"

namespace arbiter {

class UpstreamExchange {
 public:
  // Writes into `outcome`, reset first: the caller's own (a copy per
  // coroutine frame would cost each open stream ~0.3 KB a frame).
  UpstreamExchange(const RelayRequest& r, RelayOutcome& outcome) : r_(r), deadline_(r.deadline), outcome_(outcome) {
    outcome_ = RelayOutcome{};
    if (r_.typing) typing_ = std::make_unique<Typing>();
  }

  // The exchange, `self` in the coroutine's own frame: one frame for a
  // relay() call, not one for relay() and one for a member coroutine.
  static Task<void> run(UpstreamExchange self);

  // The heir's side of typing through: the rest of a stream another
  // request's relay handed over, on this thread's reactor.
  static Task<void> run_handed(UpstreamExchange self, HandedStream handed);

 private:
  using Clock = std::chrono::steady_clock;
  // Upstream read size: a whole ~1 KB answer (or a burst of SSE events) per
  // recv. The buffer is the pooled connection's; on plain TCP it is held only
  // while bytes are in flight (read_more), and an idle connection holds none
  // (UpstreamPool::release).
  static constexpr std::size_t kUpstreamReadBytes = 16 * 1024;
  // What one read from the backend did (read_more).
  using Read = std::expected<void, std::optional<beast::error_code>>;

  // Clears the client's abort hook when the exchange ends, before the socket
  // it points to goes away.
  struct AbortHookGuard {
    ResponseSink& sink;
    Interrupt& interrupt;
    ~AbortHookGuard() {
      sink.set_abort_hook(nullptr);
      interrupt.hook = nullptr;
    }
  };

  // What a stream handed over starts with (run_handed).
  struct Inherited {
    SseFramer framer;
    std::string preamble;
    bool last = false;
  };

  // The stream handed to this request (run_handed), if any.
  Inherited* inherited_stream() { return typing_ && typing_->inherited ? &*typing_->inherited : nullptr; }

  // The text this request's client has been sent: the resume checkpoint's,
  // or the one kept for typing through (typing_ exists).
  const Checkpoint& text_checkpoint() const { return r_.resume ? r_.resume->checkpoint : typing_->typed; }
  Checkpoint& text_checkpoint() { return r_.resume ? r_.resume->checkpoint : typing_->typed; }

  // A heir claimed the generation at this event boundary: what it gets
  // besides the connection, kept for hand_over. `sent_text`: bytes of text
  // this client has; parts_ hold the events of this read, not sent to it.
  void keep_for_heir(std::size_t skip, std::size_t sent_text, SseFramer& framer, bool last);

  // Gives the upstream connection, mid-response, to the heir (re-homed on
  // its thread when it runs on another) and ends this client's stream as a
  // superseded one's ends.
  Task<void> hand_over(PooledConnection conn, UpstreamResponseParser parser);

  static net::execution_context* context_of(const tcp::socket::executor_type& executor) {
    return &net::query(executor, net::execution::context);
  }

  // The client left: 499; a run the engine had (sent, not ended) counts
  // for adaptive capacity as one its client gave up on.
  void cancelled();
  // Preempted: the caller requeues and runs again. Superseded (or stopped
  // by the drain deadline) before any answer: the caller answers 409 (503).
  void interrupted();

  // How an operation on the backend ended, the outcome already recorded:
  // go on (data to relay), the client gone (499), or stopped (superseded,
  // preempted, or the upstream failed: outcome_.error says which).
  enum class ReadEnd { kData, kClientGone, kStopped };
  // The client left, or the run was interrupted: kClientGone or kStopped,
  // the outcome recorded; else kData.
  ReadEnd halted();

  // Where a run stands after sending and after reading the head.
  enum class Step : uint8_t {
    kGoOn,             // on to the next part
    kDone,             // ended: the outcome says how (client gone, interrupted, failed)
    kStaleConnection,  // a reused connection the backend had closed: the engine never saw the request
  };
  // The request's head written into `conn`, and its bytes as sent: head,
  // body (with the usage ask spliced in). Sets sent_at_.
  using RequestBuffers = std::array<net::const_buffer, 4>;
  RequestBuffers request_buffers(UpstreamConnection& conn);
  // After the request was written (or not).
  Step after_write(const UpstreamConnection& conn, int attempt, const WriteResult& written);
  // After the answer's head was read into `parser` (or not): its status noted.
  Step after_head(const UpstreamConnection& conn, const UpstreamResponseParser& parser, int attempt, const Read& head);
  // Points the client's abort hook and the interrupt at closing `socket`,
  // until the guard goes.
  AbortHookGuard arm_abort(Stream& socket);
  // A later run of a stream the client has got a whole answer: true when it
  // is a 429 or 5xx to hold (the stream left open for another backend).
  bool keep_stream_open(const UpstreamResponseParser& parser);
  // Back to the pool when `reusable` and nothing follows the answer.
  void keep_if_reusable(PooledConnection& conn, bool reusable);

  static bool is_server_failure(unsigned status) { return status == 429 || status >= 500; }
  static bool is_stale_connection_error(const beast::error_code& ec);
  static ApiError upstream_failed(std::string message) {
    return ApiError{ErrorCode::kUpstreamFailed, std::move(message), {}, {}};
  }
  static ApiError upstream_timeout(std::string message) {
    return ApiError{ErrorCode::kUpstreamTimeout, std::move(message), {}, {}};
  }

  void note_status(const UpstreamResponseParser& parser);

  // Records a failure. Before anything reached the client, the caller
  // answers with the error (status stays 0 until then); mid-stream it ends
  // the stream with it. Kept out of coroutine expressions on purpose: GCC 12
  // destroys temporaries in `?:` inside co_await/co_return twice.
  void fail(std::string_view kind, ApiError error) {
    outcome_.upstream_error = kind;
    outcome_.error = std::move(error);
  }
  void fail_connect(const ConnectError& e);
  void fail_header(const beast::error_code& ec);
  // A body over limits.max_upstream_response_bytes.
  void fail_too_large() { fail("too_large", upstream_failed("the backend's response is too large")); }
  // `ec` empty: the stream_idle deadline passed.
  void fail_body(const std::optional<beast::error_code>& ec);

  // One read from the backend, parsed: the parser's body_pieces() hold the
  // body bytes that came with it. The error is the failure, or none when
  // `limit` passed first. `offered`: a stream offered for typing through,
  // between events: a heir's claim (TypingOffer::wake_running) ends the
  // wait of a plain TCP one with nothing read, and one already made skips
  // it, so the caller hands the stream over without waiting for the
  // engine's next token (a TLS read is not cut: the claim waits for it).
  Task<Read> read_more(Stream& socket, beast::flat_buffer& buffer, UpstreamResponseParser& parser,
                       Clock::duration limit, bool offered = false);

  // How a read of the upstream body ended (ReadEnd), the outcome recorded.
  ReadEnd after_read(const Read& read);

  // Returns true when the upstream connection may be reused. Body bytes that
  // came with the header are in the parser already; each loop relays what
  // the last read brought, then reads more.
  Task<bool> relay_stream(Stream& socket, beast::flat_buffer& buffer, UpstreamResponseParser& parser);

  // The events the last read completed, into parts_ (or, `handed`, the
  // preamble of a stream handed over); whether the stream ended.
  bool take_events(SseFramer& framer, UpstreamResponseParser& parser, const Inherited* handed);
  // A stream's read stopped (interrupted, preempted or failed): left open
  // for the next run, or ended with the error event.
  Task<void> stream_stopped();

  // Tells the typing offer what this client now has.
  void publish(bool tls);

  // This run's first event: on_first_event, once.
  void first_event();

  // Adaptive capacity (r_.gaps): the events one read brought, and the gap
  // since this run's previous ones. One clock read per read, not per event.
  void count_gaps(std::size_t events);

  Task<void> end_stream_with_error(const ApiError& err);

  // One event of a stream: counted (a plain stream) or taken into the
  // checkpoint (a resumable one), and added to the chunk being built.
  void relay_event(std::string_view event);

  // An event that follows the previous part in memory extends it: the
  // events of one read are one part.
  void add_part(std::string_view event);

  // A plain stream's cost, without parsing its events: the engine's usage
  // chunk when there is one, else one token per data event that is not
  // empty of content (the role chunk, an empty finish chunk and the usage
  // chunk are not tokens; an event of several tokens counts one).
  // RelayOutcome::billed bills it. True when the event carried a usage object.
  bool count(std::string_view event);

  // A later run of a request whose stream the client already has got a
  // plain (error) answer: there is no way to send it as a whole response
  // any more, so the stream ends with an error event.
  Task<void> refuse_continuation(unsigned status);

  // The client did not ask for a stream, but the upstream streams so that a
  // preempted run keeps its output (or a typed-through one its text so far):
  // every run goes into the checkpoint, and the client gets one whole
  // response when the last run ends. A stream handed over (typing through)
  // goes on from the framer it came with; the parser's pieces went into the
  // request it came from.
  Task<bool> relay_aggregate(Stream& socket, beast::flat_buffer& buffer, UpstreamResponseParser& parser);

  // A whole answer: read to its end (within max_upstream_response_bytes)
  // and sent in one write, or held (hold_failures) when it is a 429 or 5xx.
  Task<bool> relay_whole(Stream& socket, beast::flat_buffer& buffer, UpstreamResponseParser& parser);
  // A non-2xx answer's body as an OpenAI error object (`whole` then views
  // `error_body`, when the engine's was not one): the content type to send.
  static std::string_view as_openai_error(const UpstreamResponseParser& parser, std::string_view& whole,
                                          std::string& error_body);

  const RelayRequest& r_;
  bool first_event_seen_ = false;                    // on_first_event ran for this run
  std::optional<Clock::time_point> last_events_at_;  // count_gaps: this run's latest read with events
  Clock::time_point sent_at_{};                      // when this run's request went out
  // The upstream socket is probably empty (plain TCP): the request was just
  // written, or the last read did not fill the buffer.
  bool drained_ = true;
  Deadline& deadline_;                   // RelayRequest::deadline
  RelayOutcome& outcome_;                // the caller's
  std::vector<std::string_view> parts_;  // relay_stream: the chunk one read makes
  // relay_event: rewritten events in parts_ (nodes: they never move; an
  // empty list allocates nothing, unlike a std::deque)
  std::forward_list<std::string> rewritten_;
  // Typing through (r_.typing, or a stream handed to this request): on the
  // heap, so that the streams that do not type through (most) carry none
  // of its ~0.7 KB in their frame.
  struct Typing {
    Checkpoint typed;                    // the text of a plain stream
    std::size_t published = 0;           // what of it the offer has
    std::optional<Inherited> inherited;  // a stream handed to this request
    std::optional<Inherited> handed;     // set when a heir claimed the stream: run() hands it over
    Checkpoint heir_checkpoint;
  };
  std::unique_ptr<Typing> typing_;
};

}  // namespace arbiter
