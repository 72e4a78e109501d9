#include "gateway/relay/upstream_relay.hpp"

#include "core/stream_usage.hpp"
#include "core/usage.hpp"

#include <array>
#include <charconv>
#include <cstring>
#include <forward_list>

#include "core/sse.hpp"
#include "core/upstream_error.hpp"
#include "http/http_head.hpp"
#include "http/upstream_response.hpp"
#include "http/write_now.hpp"

namespace arbiter {

namespace {

using Clock = std::chrono::steady_clock;

// Upstream read size: a whole ~1 KB answer (or a burst of SSE events) per
// recv. The buffer is the pooled connection's; on plain TCP it is held only
// while bytes are in flight (read_more), and an idle connection holds none
// (UpstreamPool::release).
constexpr std::size_t kUpstreamReadBytes = 16 * 1024;

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

bool is_stale_connection_error(const beast::error_code& ec) {
  return ec == net::error::eof || ec == http::error::end_of_stream ||
         ec == net::error::connection_reset || ec == net::error::broken_pipe ||
         ec == http::error::partial_message || ec == ssl::error::stream_truncated;
}

ApiError upstream_failed(std::string message) {
  return ApiError{ErrorCode::kUpstreamFailed, std::move(message), {}, {}};
}
ApiError upstream_timeout(std::string message) {
  return ApiError{ErrorCode::kUpstreamTimeout, std::move(message), {}, {}};
}


class Exchange {
 public:
  // Writes into `outcome`, reset first: the caller's own (a copy per
  // coroutine frame would cost each open stream ~0.3 KB a frame).
  Exchange(const RelayRequest& r, RelayOutcome& outcome) : r_(r), deadline_(r.deadline), outcome_(outcome) {
    outcome_ = RelayOutcome{};
    if (r_.typing) typing_ = std::make_unique<Typing>();
  }

  Task<void> run() {
    // One retry, only when a reused keep-alive connection failed before any
    // response byte arrived: the engine never saw the request.
    for (int attempt = 0; attempt < 2; ++attempt) {
      // An idle connection when there is one (not on the retry after a
      // stale one), else a new one.
      PooledConnection conn;
      if (attempt == 0) conn = r_.pool.take_idle();
      if (!conn) {
        auto connected = co_await r_.pool.connect(deadline_, r_.timeouts.upstream_connect);
        if (r_.sink.client_gone()) co_return cancelled();
        if (!connected) co_return fail_connect(connected.error());
        conn = std::move(*connected);
      }
      if (r_.sink.client_gone()) co_return cancelled();
      Stream& socket = conn->stream;
      const UpstreamRequest& up = r_.upstream_request;
      write_request_head(up, conn->head);
      const std::array<net::const_buffer, 4> request{net::buffer(conn->head),
                                                     net::buffer(up.body.substr(0, up.insert_at)),
                                                     net::buffer(up.body_insert),
                                                     net::buffer(up.body.substr(up.insert_at))};
      auto close_socket = [&socket] { socket.close(); };
      r_.sink.set_abort_hook(close_socket);
      r_.interrupt.hook = close_socket;
      AbortHookGuard guard{r_.sink, r_.interrupt};
      if (r_.interrupt.requested) co_return interrupted();
      sent_at_ = Clock::now();
      const auto deadline = sent_at_ + r_.timeouts.upstream_first_byte;

      WriteResult written;
      if (const std::size_t n = write_at_once(socket, request, written.ec); !written.ec && n < net::buffer_size(request)) {
        written = co_await write_rest(socket, request, n, deadline_, r_.timeouts.upstream_first_byte);
      }
      if (r_.sink.client_gone()) co_return cancelled();
      if (r_.interrupt.requested) co_return interrupted();
      if (written.timed_out) {
        co_return fail("timeout", upstream_timeout("the backend did not take the request in time"));
      }
      if (auto ec = written.ec; ec) {
        if (conn->reused && attempt == 0 && is_stale_connection_error(ec)) {
          outcome_.retried = true;
          continue;
        }
        co_return fail("reset", upstream_failed("sending to the backend failed: " + ec.message()));
      }

      beast::flat_buffer& buffer = conn->buffer;
      drained_ = true;
      UpstreamResponseParser parser;
      Read header{};
      while (header && !parser.is_header_done()) {
        header = co_await read_more(socket, buffer, parser, deadline - Clock::now());
      }
      if (r_.sink.client_gone()) co_return cancelled();
      if (r_.interrupt.requested) co_return interrupted();
      if (!header && !header.error()) {
        co_return fail(
            "timeout", upstream_timeout("the backend did not answer within " +
                                        std::to_string(r_.timeouts.upstream_first_byte.count()) + " ms"));
      }
      if (!header) {
        const beast::error_code ec = *header.error();
        if (conn->reused && attempt == 0 && is_stale_connection_error(ec)) {
          outcome_.retried = true;
          continue;
        }
        co_return fail_header(ec);
      }
      outcome_.upstream_ms =
          std::chrono::duration<double, std::milli>(Clock::now() - sent_at_).count();
      note_status(parser);

      const bool sse = parser.status() == 200 && parser.content_type().starts_with("text/event-stream");
      // if/else, not ?: around co_await (GCC 12, see docs/architecture.md).
      bool reusable = false;
      if (sse && r_.resume && r_.resume->aggregate) {
        reusable = co_await relay_aggregate(socket, buffer, parser);
      } else if (sse) {
        reusable = co_await relay_stream(socket, buffer, parser);
      } else if (r_.resume && r_.resume->client_stream_started) {
        if (r_.hold_failures && is_server_failure(parser.status())) {
          // The stream stays open: another backend may continue it.
          outcome_.status = 200;
          outcome_.stream_open = true;
          fail("status", upstream_failed("the backend refused to continue the stream: HTTP " +
                                         std::to_string(parser.status())));
          co_return;
        }
        co_await refuse_continuation(parser.status());
      } else {
        reusable = co_await relay_whole(socket, buffer, parser);
      }
      if (typing_ && typing_->handed) {
        co_await hand_over(std::move(conn), std::move(parser));
        co_return;
      }
      // Bytes after the end of the response would be read as the next
      // request's answer: such a connection is not reused.
      if (reusable && buffer.size() == 0) {
        r_.sink.set_abort_hook(nullptr);
        r_.interrupt.hook = nullptr;
        r_.pool.release(std::move(conn));
      }
      co_return;
    }
    co_return fail("reset", upstream_failed("the backend closed the connection"));
  }

  // The heir's side of typing through: the rest of a stream another
  // request's relay handed over, on this thread's reactor.
  Task<void> run_handed(HandedStream handed) {
    PooledConnection conn = std::move(handed.conn);
    if (!conn) {
      const auto executor = co_await net::this_coro::executor;
      conn.reset(new UpstreamConnection{.stream = Stream(handed.released.adopt(executor)),
                                        .buffer = std::move(handed.buffer),
                                        .head = {},
                                        .reused = false});
    }
    Stream& socket = conn->stream;
    auto close_socket = [&socket] { socket.close(); };
    r_.sink.set_abort_hook(close_socket);
    r_.interrupt.hook = close_socket;
    AbortHookGuard guard{r_.sink, r_.interrupt};
    UpstreamResponseParser parser(std::move(handed.parser));
    outcome_.upstream_status = parser.status();
    drained_ = handed.drained;
    if (!typing_) typing_ = std::make_unique<Typing>();
    text_checkpoint() = std::move(handed.checkpoint);  // a whole answer's resume (run_inherited), or the typed text
    typing_->inherited.emplace(Inherited{.framer = std::move(handed.framer),
                                         .preamble = std::move(handed.preamble),
                                         .last = handed.last});
    if (r_.sink.client_gone()) co_return cancelled();
    if (r_.interrupt.requested) co_return interrupted();
    // if/else, not ?: around co_await (GCC 12, see docs/architecture.md).
    bool reusable = false;
    if (r_.resume && r_.resume->aggregate) {
      reusable = co_await relay_aggregate(socket, conn->buffer, parser);
    } else {
      reusable = co_await relay_stream(socket, conn->buffer, parser);
    }
    if (typing_->handed) {
      co_await hand_over(std::move(conn), std::move(parser));
      co_return;
    }
    if (reusable && conn->buffer.size() == 0) {
      r_.sink.set_abort_hook(nullptr);
      r_.interrupt.hook = nullptr;
      r_.pool.release(std::move(conn));
    }
  }

 private:
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
  void keep_for_heir(std::size_t skip, std::size_t sent_text, SseFramer& framer, bool last) {
    const Checkpoint& own = text_checkpoint();
    const std::size_t from = std::min(skip, sent_text);
    std::string preamble;
    if (sent_text > from) preamble = completion_text_event(own, std::string_view(own.text).substr(from, sent_text - from));
    for (const std::string_view part : parts_) preamble.append(part);
    Checkpoint heir = own;
    heir.text.erase(0, std::min(skip, heir.text.size()));
    heir.runs = 1;
    heir.tokens_before_run = 0;
    heir.usage.reset();
    typing_->handed = Inherited{.framer = std::move(framer), .preamble = std::move(preamble), .last = last};
    typing_->heir_checkpoint = std::move(heir);
  }

  // Gives the upstream connection, mid-response, to the heir (re-homed on
  // its thread when it runs on another) and ends this client's stream as a
  // superseded one's ends.
  Task<void> hand_over(PooledConnection conn, UpstreamResponseParser parser) {
    r_.sink.set_abort_hook(nullptr);
    r_.interrupt.hook = nullptr;
    HandedStream stream{.conn = nullptr,
                        .released = {},
                        .buffer = {},
                        .parser = std::move(parser),
                        .framer = std::move(typing_->handed->framer),
                        .checkpoint = std::move(typing_->heir_checkpoint),
                        .preamble = std::move(typing_->handed->preamble),
                        .last = typing_->handed->last,
                        .drained = drained_};
    typing_->handed.reset();
    tcp::socket& socket = conn->stream.socket();
    if (r_.typing->heir_on(context_of(socket.get_executor()))) {
      stream.conn = std::move(conn);
    } else {
      // Plain TCP (the claim refuses TLS across threads): the descriptor
      // leaves this thread's reactor for the heir's.
      beast::error_code ec;
      const bool ipv6 = socket.local_endpoint(ec).address().is_v6();
      stream.released = ReleasedSocket(socket.release(ec), ipv6);
      stream.buffer = std::move(conn->buffer);
      conn.reset();
    }
    r_.typing->hand(std::move(stream));
    outcome_.interrupted = true;
    outcome_.error = superseded_error();
    // A client that gets its answer whole has got nothing yet: the caller
    // answers it as any superseded request.
    if (!r_.resume || !r_.resume->aggregate) co_await end_stream_with_error(*outcome_.error);
  }

  static net::execution_context* context_of(const tcp::socket::executor_type& executor) {
    return &net::query(executor, net::execution::context);
  }

  void cancelled() { outcome_.status = 499; }
  // Preempted: the caller requeues and runs again. Superseded (or stopped
  // by the drain deadline) before any answer: the caller answers 409 (503).
  void interrupted() {
    if (r_.interrupt.preemption) {
      outcome_.preempted = true;
      return;
    }
    outcome_.interrupted = true;
    if (r_.interrupt.error) {
      outcome_.error = *r_.interrupt.error;
    } else {
      outcome_.error = superseded_error();
    }
  }

  static bool is_server_failure(unsigned status) { return status == 429 || status >= 500; }

  void note_status(const UpstreamResponseParser& parser) {
    outcome_.upstream_status = parser.status();
    if (parser.status() != 429 && parser.status() != 503) return;
    std::string_view seconds, millis;
    for (const auto& [name, value] : parser.forwarded()) {
      if (name == "retry-after") seconds = value;
      if (name == "retry-after-ms") millis = value;
    }
    outcome_.upstream_retry_after = parse_retry_after(seconds, millis);
  }

  // Records a failure. Before anything reached the client, the caller
  // answers with the error (status stays 0 until then); mid-stream it ends
  // the stream with it. Kept out of coroutine expressions on purpose: GCC 12
  // destroys temporaries in `?:` inside co_await/co_return twice.
  void fail(std::string_view kind, ApiError error) {
    outcome_.upstream_error = kind;
    outcome_.error = std::move(error);
  }
  void fail_connect(const ConnectError& e) {
    if (e.kind == ConnectFailure::kTimeout) {
      return fail("timeout", upstream_timeout("connecting to the backend timed out"));
    }
    if (e.kind == ConnectFailure::kTls) {
      // Never a plaintext fallback: the request does not go out.
      return fail("tls", upstream_failed("TLS handshake with the backend failed: " + e.detail));
    }
    return fail("connect", upstream_failed("cannot connect to the backend"));
  }
  void fail_header(const beast::error_code& ec) {
    return fail(is_stale_connection_error(ec) ? "reset" : "protocol",
                upstream_failed("the backend closed the connection or sent a bad response: " +
                                ec.message()));
  }
  // A body over limits.max_upstream_response_bytes.
  void fail_too_large() { fail("too_large", upstream_failed("the backend's response is too large")); }
  // `ec` empty: the stream_idle deadline passed.
  void fail_body(const std::optional<beast::error_code>& ec) {
    if (!ec) {
      fail("timeout", upstream_timeout("the backend sent nothing for " +
                                       std::to_string(r_.timeouts.stream_idle.count()) + " ms"));
    } else {
      fail("reset", upstream_failed("the backend response broke off: " + ec->message()));
    }
  }

  // One read from the backend, parsed: the parser's body_pieces() hold the
  // body bytes that came with it. The error is the failure, or none when
  // `limit` passed first. `offered`: a stream offered for typing through,
  // between events: a heir's claim (TypingOffer::wake_running) ends the
  // wait of a plain TCP one with nothing read, and one already made skips
  // it, so the caller hands the stream over without waiting for the
  // engine's next token (a TLS read is not cut: the claim waits for it).
  using Read = std::expected<void, std::optional<beast::error_code>>;
  Task<Read> read_more(Stream& socket, beast::flat_buffer& buffer, UpstreamResponseParser& parser,
                       Clock::duration limit, bool offered = false) {
    deadline_.arm(socket.socket(), limit);
    beast::error_code ec;
    std::size_t n = 0;
    const bool wakeable = offered && r_.typing && !socket.tls();
    if (wakeable) r_.typing->set_waiting(&socket.socket());
    if (wakeable && r_.typing->claimed()) {
      // Claimed since the last boundary: nothing to wait for.
    } else if (drained_ && !socket.tls()) {
      // The request just went out, or the last read took all there was: a
      // read now (Asio tries one at once) would only hear EAGAIN. Wait until
      // the socket is readable, without a read buffer (an open stream
      // between events, a backend still thinking), then read into one.
      for (;;) {
        // What is left is at most a cut chunk header (Beast keeps a chunk's
        // CRLF for the next one): a few bytes, moved to a buffer their size.
        buffer.shrink_to_fit();
        auto [wait_ec] = co_await socket.socket().async_wait(tcp::socket::wait_read, kAsTuple);
        if (wait_ec) {
          ec = wait_ec;
          break;
        }
        n = socket.socket().read_some(buffer.prepare(kUpstreamReadBytes), ec);  // non-blocking (UpstreamPool)
        if (ec != net::error::would_block && ec != net::error::try_again) break;
        n = 0;  // readiness that went away: wait again
      }
    } else {
      // TLS reads at once: OpenSSL may hold decrypted bytes that the
      // socket's readiness does not show.
      auto [read_ec, read_n] = co_await socket.async_read_some(buffer.prepare(kUpstreamReadBytes), kAsTuple);
      ec = read_ec;
      n = read_n;
    }
    if (wakeable) {
      r_.typing->set_waiting(nullptr);
      if (ec == net::error::operation_aborted && r_.typing->claimed()) ec = {};  // woken by the claim
    }
    drained_ = n < kUpstreamReadBytes;
    if (deadline_.disarm()) co_return std::unexpected(std::nullopt);
    buffer.commit(n);
    beast::error_code parsed;
    // A TLS backend that closes without close_notify ends a close-delimited
    // body as EOF would; Beast still tells a cut body from a complete one.
    if (ec && (ec == net::error::eof || ec == ssl::error::stream_truncated)) {
      parsed = parser.parse_eof();
    } else if (ec) {
      co_return std::unexpected(ec);
    } else {
      parsed = parser.parse(buffer);
    }
    if (parsed) co_return std::unexpected(parsed);
    co_return Read{};
  }

  // How a read of the upstream body ended, the outcome already recorded:
  // data to relay, the client gone (499), or stopped (superseded or the
  // upstream failed: outcome_.error says which).
  enum class ReadEnd { kData, kClientGone, kStopped };
  ReadEnd after_read(const Read& read) {
    if (r_.sink.client_gone()) {
      outcome_.status = 499;
      return ReadEnd::kClientGone;
    }
    if (r_.interrupt.requested) {
      interrupted();
      return ReadEnd::kStopped;
    }
    if (!read) {
      fail_body(read.error());
      return ReadEnd::kStopped;
    }
    return ReadEnd::kData;
  }

  // Returns true when the upstream connection may be reused. Body bytes that
  // came with the header are in the parser already; each loop relays what
  // the last read brought, then reads more.
  Task<bool> relay_stream(Stream& socket, beast::flat_buffer& buffer, UpstreamResponseParser& parser) {
    outcome_.stream = true;
    outcome_.status = 200;
    if (!r_.resume) outcome_.generated = 0;
    const ResponseHead head{.status = 200,
                            .content_type = parser.content_type(),
                            .cache_control = "no-cache",
                            .upstream = parser.forwarded(),
                            .gateway = r_.response_headers};
    // The client's stream starts with this run's first write, unless an
    // earlier run started it.
    const ResponseHead* unsent_head = r_.resume && r_.resume->client_stream_started ? nullptr : &head;
    // Every event one read completed goes out as one chunk, in one write:
    // the events as they lie in the read buffer (a run of them is one
    // part), an event a read cut off from the framer's storage, a resumed
    // run's rewritten event from rewritten_. The first write carries the
    // head too (with the events that came with it, if any: the head waits
    // for nothing), the last one the end of the stream, and with it the
    // bytes after the last blank line (byte-exact).
    // A stream handed over (typing through) starts with its preamble; the
    // parser's pieces were relayed by the request it came from.
    SseFramer framer;
    Inherited* const inherited = inherited_stream();
    if (inherited) framer = std::move(inherited->framer);
    for (bool handed = inherited != nullptr;; handed = false) {
      parts_.clear();
      const std::size_t sent_text = r_.typing ? text_checkpoint().text.size() : 0;
      bool last = false;
      if (handed) {
        if (!inherited->preamble.empty()) add_part(inherited->preamble);
        last = inherited->last;
      } else {
        const std::size_t before = framer.events();
        for (const std::string_view piece : parser.body_pieces()) {
          framer.feed(piece, [this](std::string_view event) { relay_event(event); });
        }
        if (framer.events() > 0) first_event();
        count_gaps(framer.events() - before);
        last = parser.is_done();
        if (last && !framer.pending().empty()) add_part(framer.pending());
      }
      if (r_.typing) {
        if (const auto skip = r_.typing->claimed()) {
          keep_for_heir(*skip, sent_text, framer, last);
          co_return false;
        }
      }
      if ((unsent_head || last || !parts_.empty()) && !co_await r_.sink.write_stream(unsent_head, parts_, last)) {
        outcome_.status = 499;
        co_return false;
      }
      if (r_.typing) publish(socket.tls() != nullptr);
      if (unsent_head && r_.resume) r_.resume->client_stream_started = true;
      if (unsent_head && r_.on_stream_started) r_.on_stream_started();
      unsent_head = nullptr;
      framer.release();
      rewritten_.clear();
      if (last) break;
      const Read read = co_await read_more(socket, buffer, parser, r_.timeouts.stream_idle, true);
      if (const ReadEnd end = after_read(read); end != ReadEnd::kData) {
        // A preempted run leaves the stream open: the next run continues it;
        // so does a broken resumable one that the caller may fail over.
        if (end == ReadEnd::kStopped && !outcome_.preempted && !outcome_.interrupted && r_.resume &&
            r_.hold_failures) {
          outcome_.stream_open = true;
        } else if (end == ReadEnd::kStopped && !outcome_.preempted) {
          co_await end_stream_with_error(*outcome_.error);
        }
        co_return false;
      }
    }
    co_return parser.keep_alive();
  }

  // Tells the typing offer what this client now has.
  void publish(bool tls) {
    const std::string& text = text_checkpoint().text;
    r_.typing->publish(std::string_view(text).substr(std::min(typing_->published, text.size())), tls);
    typing_->published = text.size();
  }

  void first_event() {
    if (first_event_seen_) return;
    first_event_seen_ = true;
    if (r_.on_first_event) r_.on_first_event();
  }

  // Adaptive capacity (r_.gaps): the events one read brought, and the gap
  // since this run's previous ones. One clock read per read, not per event.
  void count_gaps(std::size_t events) {
    if (!r_.gaps || events == 0) return;
    const auto now = Clock::now();
    if (last_events_at_) {
      r_.gaps->count(static_cast<uint32_t>(events), now - *last_events_at_);
    } else if (r_.first_token_bound.count() > 0) {
      r_.gaps->count_first(now - sent_at_ > r_.first_token_bound);
    }
    last_events_at_ = now;
  }

  Task<void> end_stream_with_error(const ApiError& err) {
    co_await arbiter::end_stream_with_error(r_.sink, err);
    if (r_.sink.client_gone()) outcome_.status = 499;
  }

  // One event of a stream: counted (a plain stream) or taken into the
  // checkpoint (a resumable one), and added to the chunk being built.
  void relay_event(std::string_view event) {
    if (!r_.resume) {
      if (count(event) && r_.hide_usage_chunk && is_usage_chunk(event_data(event))) return;
      if (r_.typing) track_event(event, Route::kCompletions, typing_->typed);
      add_part(event);
      return;
    }
    // Resumed runs are rewritten to look like the first (one id, usage
    // over all runs).
    EventResult result = track_event(event, r_.resume->route, r_.resume->checkpoint);
    if (r_.hide_usage_chunk && is_usage_chunk(event_data(event))) return;  // taken into the checkpoint
    if (result.fate == EventFate::kForward) {
      add_part(event);
    } else if (result.fate == EventFate::kRewritten) {
      add_part(rewritten_.emplace_front(std::move(result.rewritten)));
    }
  }

  // An event that follows the previous part in memory extends it: the
  // events of one read are one part.
  void add_part(std::string_view event) {
    if (!parts_.empty() && parts_.back().data() + parts_.back().size() == event.data()) {
      parts_.back() = std::string_view(parts_.back().data(), parts_.back().size() + event.size());
    } else {
      parts_.push_back(event);
    }
  }

  // A plain stream's cost, without parsing its events: the engine's usage
  // chunk when the client asked for one (stream_options.include_usage),
  // else one token per data event (a bound: the role and finish chunks count
  // too). Quotas and the scheduler's charges settle with it. True when the
  // event carried a usage object.
  bool count(std::string_view event) {
    static constexpr std::string_view kUsage = "\"usage\":{";
    const std::string_view data = event_data(event);
    if (data.empty() || data == "[DONE]") return false;
    ++outcome_.generated;
    if (memmem(data.data(), data.size(), kUsage.data(), kUsage.size()) == nullptr) return false;
    if (auto usage = find_usage(data)) outcome_.usage = usage;
    return true;
  }

  // A later run of a request whose stream the client already has got a
  // plain (error) answer: there is no way to send it as a whole response
  // any more, so the stream ends with an error event.
  Task<void> refuse_continuation(unsigned status) {
    outcome_.status = 200;  // what the client got, in the first run
    fail("protocol", upstream_failed("the backend refused to continue a preempted request: HTTP " +
                                     std::to_string(status)));
    co_await end_stream_with_error(*outcome_.error);
  }

  // The client did not ask for a stream, but the upstream streams so that a
  // preempted run keeps its output (or a typed-through one its text so far):
  // every run goes into the checkpoint, and the client gets one whole
  // response when the last run ends. A stream handed over (typing through)
  // goes on from the framer it came with; the parser's pieces went into the
  // request it came from.
  Task<bool> relay_aggregate(Stream& socket, beast::flat_buffer& buffer, UpstreamResponseParser& parser) {
    RelayResume& resume = *r_.resume;
    SseFramer framer;
    Inherited* const inherited = inherited_stream();
    if (inherited) framer = std::move(inherited->framer);
    for (bool handed = inherited != nullptr;; handed = false) {
      if (!handed) {
        const std::size_t before = framer.events();
        for (const std::string_view piece : parser.body_pieces()) {
          framer.feed(piece, [&resume](std::string_view event) { track_event(event, resume.route, resume.checkpoint); });
        }
        if (framer.events() > 0) first_event();
        count_gaps(framer.events() - before);
      }
      if (r_.typing) {
        // Nothing went to this client yet: the heir's text is all that was
        // generated after the bytes it typed.
        if (const auto skip = r_.typing->claimed()) {
          keep_for_heir(*skip, 0, framer, parser.is_done());
          co_return false;
        }
        publish(socket.tls() != nullptr);
      }
      framer.release();
      if (resume.checkpoint.text.size() > r_.limits.max_upstream_response_bytes) {
        fail_too_large();
        co_return false;
      }
      if (parser.is_done()) break;
      const Read read = co_await read_more(socket, buffer, parser, r_.timeouts.stream_idle, true);
      if (after_read(read) != ReadEnd::kData) co_return false;
    }
    const std::string body = aggregate_response(resume.route, resume.checkpoint);
    const ResponseHead head{.status = 200,
                            .content_type = "application/json",
                            .cache_control = {},
                            .upstream = {},
                            .gateway = r_.response_headers};
    outcome_.status = 200;
    if (!co_await r_.sink.send(head, body)) {
      outcome_.status = 499;
      co_return false;
    }
    co_return parser.keep_alive();
  }

  Task<bool> relay_whole(Stream& socket, beast::flat_buffer& buffer, UpstreamResponseParser& parser) {
    const std::optional<uint64_t> len = parser.content_length();
    if (len && *len > r_.limits.max_upstream_response_bytes) {
      fail_too_large();
      co_return false;
    }
    std::string body;     // the pieces, when the body came in more than one read
    std::string_view whole;  // what is sent: one read's piece as it lies in the buffer, or `body`
    for (;;) {
      const std::vector<std::string_view>& pieces = parser.body_pieces();
      if (body.empty() && parser.is_done() && pieces.size() <= 1) {
        if (!pieces.empty()) whole = pieces.front();  // valid until the next read on this connection
        if (whole.size() > r_.limits.max_upstream_response_bytes) {
          fail_too_large();
          co_return false;
        }
        break;
      }
      if (body.empty() && len) body.reserve(*len);
      for (const std::string_view piece : pieces) body.append(piece);
      if (body.size() > r_.limits.max_upstream_response_bytes) {
        fail_too_large();
        co_return false;
      }
      if (parser.is_done()) {
        whole = body;
        break;
      }
      const Read read = co_await read_more(socket, buffer, parser, r_.timeouts.stream_idle);
      if (after_read(read) != ReadEnd::kData) co_return false;
    }
    // An engine's error answer, whatever its shape, reaches the client as an
    // OpenAI error object (core/upstream_error.hpp), streamed request or not.
    std::string_view content_type = parser.content_type();
    std::string error_body;
    if (parser.status() < 200 || parser.status() >= 300) {
      if (auto wrapped = openai_error_body(parser.status(), whole)) {
        error_body = std::move(*wrapped);
        whole = error_body;
      }
      content_type = "application/json";
    }
    if (r_.hold_failures && is_server_failure(parser.status())) {
      outcome_.held = HeldResponse{.status = parser.status(),
                                   .content_type = std::string(content_type),
                                   .body = std::string(whole),
                                   .headers = parser.forwarded()};
      co_return parser.keep_alive();
    }
    const ResponseHead head{.status = parser.status(),
                            .content_type = content_type,
                            .cache_control = {},
                            .upstream = parser.forwarded(),
                            .gateway = r_.response_headers};
    outcome_.status = static_cast<int>(parser.status());
    if (parser.status() == 200) outcome_.usage = find_usage(whole);
    if (!co_await r_.sink.send(head, whole)) {
      outcome_.status = 499;
      co_return false;
    }
    co_return parser.keep_alive();
  }

  const RelayRequest& r_;
  bool first_event_seen_ = false;  // on_first_event ran for this run
  std::optional<Clock::time_point> last_events_at_;  // count_gaps: this run's latest read with events
  Clock::time_point sent_at_{};                      // when this run's request went out
  // The upstream socket is probably empty (plain TCP): the request was just
  // written, or the last read did not fill the buffer.
  bool drained_ = true;
  Deadline& deadline_;  // RelayRequest::deadline
  RelayOutcome& outcome_;  // the caller's
  std::vector<std::string_view> parts_;  // relay_stream: the chunk one read makes
  // relay_event: rewritten events in parts_ (nodes: they never move; an
  // empty list allocates nothing, unlike a std::deque)
  std::forward_list<std::string> rewritten_;
  // Typing through (r_.typing, or a stream handed to this request): on the
  // heap, so that the streams that do not type through (most) carry none
  // of its ~0.7 KB in their frame.
  struct Typing {
    Checkpoint typed;            // the text of a plain stream
    std::size_t published = 0;   // what of it the offer has
    std::optional<Inherited> inherited;  // a stream handed to this request
    std::optional<Inherited> handed;     // set when a heir claimed the stream: run() hands it over
    Checkpoint heir_checkpoint;
  };
  std::unique_ptr<Typing> typing_;
};

}  // namespace

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

Task<void> relay(const RelayRequest& r, RelayOutcome& outcome) {
  Exchange exchange(r, outcome);
  co_await exchange.run();
}

Task<void> relay_handed_over(const RelayRequest& r, HandedStream stream, RelayOutcome& outcome) {
  Exchange exchange(r, outcome);
  co_await exchange.run_handed(std::move(stream));
}

}  // namespace arbiter
