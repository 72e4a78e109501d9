#include "gateway/relay/upstream_exchange.hpp"

#include <array>

#include "http/http_head.hpp"
#include "http/write_now.hpp"

namespace arbiter {

bool UpstreamExchange::is_stale_connection_error(const beast::error_code& ec) {
  return ec == net::error::eof || ec == http::error::end_of_stream || ec == net::error::connection_reset ||
         ec == net::error::broken_pipe || ec == http::error::partial_message || ec == ssl::error::stream_truncated;
}

Task<void> UpstreamExchange::run(UpstreamExchange self) {
  // One retry, only when a reused keep-alive connection failed before any
  // response byte arrived: the engine never saw the request. (The steps
  // between the awaits are plain functions: a coroutine each would cost a
  // frame per request.)
  for (int attempt = 0; attempt < 2; ++attempt) {
    // An idle connection when there is one (not on the retry after a
    // stale one), else a new one.
    PooledConnection conn;
    if (attempt == 0) conn = self.r_.pool.take_idle();
    if (!conn) {
      auto connected = co_await self.r_.pool.connect(self.deadline_, self.r_.timeouts.upstream_connect);
      if (self.r_.sink.client_gone()) co_return self.cancelled();
      if (!connected) co_return self.fail_connect(connected.error());
      conn = std::move(*connected);
    }
    if (self.r_.sink.client_gone()) co_return self.cancelled();
    Stream& socket = conn->stream;
    const AbortHookGuard guard = self.arm_abort(socket);
    if (self.r_.interrupt.requested) co_return self.interrupted();
    const RequestBuffers request = self.request_buffers(*conn);  // sent_at_ from here
    WriteResult written;
    if (const std::size_t n = write_at_once(socket, request, written.ec);
        !written.ec && n < net::buffer_size(request)) {
      written = co_await write_rest(socket, request, n, self.deadline_, self.r_.timeouts.upstream_first_byte);
    }
    Step step = self.after_write(*conn, attempt, written);
    UpstreamResponseParser parser;
    if (step == Step::kGoOn) {
      self.drained_ = true;
      const auto deadline = self.sent_at_ + self.r_.timeouts.upstream_first_byte;
      Read head{};
      while (head && !parser.is_header_done())
        head = co_await self.read_more(socket, conn->buffer, parser, deadline - Clock::now());
      step = self.after_head(*conn, parser, attempt, head);
    }
    if (step == Step::kStaleConnection) {
      self.outcome_.retried = true;
      continue;
    }
    if (step == Step::kDone) co_return;
    // The answer by its mode (the relay_*.cpp files). if/else, not ?:
    // around co_await (GCC 12, see docs/architecture.md).
    const bool sse = parser.status() == 200 && parser.content_type().starts_with("text/event-stream");
    bool reusable = false;
    if (sse && self.r_.resume && self.r_.resume->aggregate) {
      reusable = co_await self.relay_aggregate(socket, conn->buffer, parser);
    } else if (sse) {
      reusable = co_await self.relay_stream(socket, conn->buffer, parser);
    } else if (self.r_.resume && self.r_.resume->client_stream_started) {
      if (!self.keep_stream_open(parser)) co_await self.refuse_continuation(parser.status());
    } else {
      reusable = co_await self.relay_whole(socket, conn->buffer, parser);
    }
    if (self.typing_ && self.typing_->handed) co_return co_await self.hand_over(std::move(conn), std::move(parser));
    co_return self.keep_if_reusable(conn, reusable);
  }
  co_return self.fail("reset", upstream_failed("the backend closed the connection"));
}

void UpstreamExchange::cancelled() {
  const bool sent = sent_at_ != Clock::time_point{};
  if (r_.gaps && r_.first_token_bound.count() > 0 && sent && outcome_.status != 499) r_.gaps->count_abandoned();
  outcome_.status = 499;
}

UpstreamExchange::ReadEnd UpstreamExchange::halted() {
  if (r_.sink.client_gone()) {
    cancelled();
    return ReadEnd::kClientGone;
  }
  if (r_.interrupt.requested) {
    interrupted();
    return ReadEnd::kStopped;
  }
  return ReadEnd::kData;
}

UpstreamExchange::RequestBuffers UpstreamExchange::request_buffers(UpstreamConnection& conn) {
  const UpstreamRequest& up = r_.upstream_request;
  write_request_head(up, conn.head);
  sent_at_ = Clock::now();
  return {net::buffer(conn.head), net::buffer(up.body.substr(0, up.insert_at)), net::buffer(up.body_insert),
          net::buffer(up.body.substr(up.insert_at))};
}

UpstreamExchange::Step UpstreamExchange::after_write(const UpstreamConnection& conn, int attempt,
                                                     const WriteResult& written) {
  if (halted() != ReadEnd::kData) return Step::kDone;
  if (written.timed_out) {
    fail("timeout", upstream_timeout("the backend did not take the request in time"));
    return Step::kDone;
  }
  if (const auto ec = written.ec; ec) {
    if (conn.reused && attempt == 0 && is_stale_connection_error(ec)) return Step::kStaleConnection;
    fail("reset", upstream_failed("sending to the backend failed: " + ec.message()));
    return Step::kDone;
  }
  return Step::kGoOn;
}

UpstreamExchange::Step UpstreamExchange::after_head(const UpstreamConnection& conn,
                                                    const UpstreamResponseParser& parser, int attempt,
                                                    const Read& head) {
  if (halted() != ReadEnd::kData) return Step::kDone;
  if (!head && !head.error()) {
    fail("timeout", upstream_timeout("the backend did not answer within " +
                                     std::to_string(r_.timeouts.upstream_first_byte.count()) + " ms"));
    return Step::kDone;
  }
  if (!head) {
    const beast::error_code ec = *head.error();
    if (conn.reused && attempt == 0 && is_stale_connection_error(ec)) return Step::kStaleConnection;
    fail_header(ec);
    return Step::kDone;
  }
  outcome_.upstream_ms = std::chrono::duration<double, std::milli>(Clock::now() - sent_at_).count();
  note_status(parser);
  return Step::kGoOn;
}

UpstreamExchange::AbortHookGuard UpstreamExchange::arm_abort(Stream& socket) {
  auto close_socket = [&socket] { socket.close(); };
  r_.sink.set_abort_hook(close_socket);
  r_.interrupt.hook = close_socket;
  return AbortHookGuard{r_.sink, r_.interrupt};
}

bool UpstreamExchange::keep_stream_open(const UpstreamResponseParser& parser) {
  if (!r_.hold_failures || !is_server_failure(parser.status())) return false;
  // A later run's 429 or 5xx: the client's stream stays open, another
  // backend may continue it.
  outcome_.status = 200;
  outcome_.stream_open = true;
  fail("status", upstream_failed("the backend refused to continue the stream: HTTP " + std::to_string(parser.status())));
  return true;
}

void UpstreamExchange::keep_if_reusable(PooledConnection& conn, bool reusable) {
  // Bytes after the end of the response would be read as the next
  // request's answer: such a connection is not reused.
  if (reusable && conn->buffer.size() == 0) {
    r_.sink.set_abort_hook(nullptr);
    r_.interrupt.hook = nullptr;
    r_.pool.release(std::move(conn));
  }
}

void UpstreamExchange::interrupted() {
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

void UpstreamExchange::note_status(const UpstreamResponseParser& parser) {
  outcome_.upstream_status = parser.status();
  if (parser.status() != 429 && parser.status() != 503) return;
  std::string_view seconds, millis;
  for (const auto& [name, value] : parser.forwarded()) {
    if (name == "retry-after") seconds = value;
    if (name == "retry-after-ms") millis = value;
  }
  outcome_.upstream_retry_after = parse_retry_after(seconds, millis);
}

void UpstreamExchange::fail_connect(const ConnectError& e) {
  if (e.kind == ConnectFailure::kTimeout) {
    return fail("timeout", upstream_timeout("connecting to the backend timed out"));
  }
  if (e.kind == ConnectFailure::kTls) {
    // Never a plaintext fallback: the request does not go out.
    return fail("tls", upstream_failed("TLS handshake with the backend failed: " + e.detail));
  }
  return fail("connect", upstream_failed("cannot connect to the backend"));
}

void UpstreamExchange::fail_header(const beast::error_code& ec) {
  return fail(is_stale_connection_error(ec) ? "reset" : "protocol",
              upstream_failed("the backend closed the connection or sent a bad response: " + ec.message()));
}

void UpstreamExchange::fail_body(const std::optional<beast::error_code>& ec) {
  if (!ec) {
    fail("timeout",
         upstream_timeout("the backend sent nothing for " + std::to_string(r_.timeouts.stream_idle.count()) + " ms"));
  } else {
    fail("reset", upstream_failed("the backend response broke off: " + ec->message()));
  }
}

Task<UpstreamExchange::Read> UpstreamExchange::read_more(Stream& socket, beast::flat_buffer& buffer,
                                                         UpstreamResponseParser& parser, Clock::duration limit,
                                                         bool offered) {
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

UpstreamExchange::ReadEnd UpstreamExchange::after_read(const Read& read) {
  if (const ReadEnd end = halted(); end != ReadEnd::kData) return end;
  if (!read) {
    fail_body(read.error());
    return ReadEnd::kStopped;
  }
  return ReadEnd::kData;
}

void UpstreamExchange::first_event() {
  if (first_event_seen_) return;
  first_event_seen_ = true;
  if (r_.on_first_event) r_.on_first_event();
}

void UpstreamExchange::count_gaps(std::size_t events) {
  if (!r_.gaps || events == 0) return;
  const auto now = Clock::now();
  if (last_events_at_) {
    r_.gaps->count(static_cast<uint32_t>(events), now - *last_events_at_);
  } else if (r_.first_token_bound.count() > 0) {
    r_.gaps->count_first(now - sent_at_ > r_.first_token_bound);
  }
  last_events_at_ = now;
}

Task<void> UpstreamExchange::end_stream_with_error(const ApiError& err) {
  co_await arbiter::end_stream_with_error(r_.sink, err);
  if (r_.sink.client_gone()) outcome_.status = 499;
}

}  // namespace arbiter
