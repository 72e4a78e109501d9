#include "http/server.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <utility>


#include "core/error.hpp"
#include "http/beast_request.hpp"
#include "http/head_scan.hpp"
#include "observability/event_log.hpp"

namespace arbiter {

namespace {
// RFC 9112 3.2: an HTTP/1.1 request without Host is answered 400.
const char* host_defect(unsigned version, bool has_host) {
  return version >= 11 && !has_host ? "HTTP/1.1 request without a Host header" : nullptr;
}
void log_handler_failure(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& e) {
    log_event(EventLevel::kError, "handler_exception", {{"what", e.what()}});
  } catch (...) {
    log_event(EventLevel::kError, "handler_exception");
  }
}
BodyLimits body_limits(const ServerOptions& opt) {
  return {.bytes = opt.max_body_bytes, .large_prefix = opt.large_body_prefix, .large_bytes = opt.large_body_bytes};
}
std::string body_too_large_message(const ServerOptions& opt, std::string_view target) {
  return "request body exceeds " + std::to_string(body_limits(opt).for_target(target)) + " bytes";
}
// accept() out of file descriptors: how long until the next try.
constexpr std::chrono::milliseconds kAcceptBackoff{100};
// accept() out of file descriptors, an idle connection closed to make
// room: the next try comes sooner.
constexpr std::chrono::milliseconds kAcceptAfterEviction{5};
// An episode of accept failures ends once none failed for this long.
constexpr std::chrono::milliseconds kEpisodeQuiet{1'000};
// After a refusal that leaves the client's request unread (413, 431, a
// malformed head), what it still sends is read and dropped for at most this
// long before the connection closes (nginx's lingering close): closed at
// once, the unread bytes make the kernel send a reset, which can destroy
// the answer before the client reads it.
constexpr std::chrono::milliseconds kLingerTime{2'000};
// What a refused connection's client already sent is read up to this much
// (closing with bytes unread sends a reset instead of the 503).
constexpr std::size_t kRefusedReadMax = 64 * 1024;

// A head whose framing another hop could read differently (request
// smuggling) or that RFC 9112 says to refuse: answered 400 and the
// connection closed, since where its body ends is not known. Beast itself
// refuses Transfer-Encoding: chunked with Content-Length, and a repeated
// chunked; it takes any other Transfer-Encoding as "no body".
const char* head_defect(const BeastRequest::Parser& parser) {
  const auto& head = parser.get();
  if (head.find(http::field::transfer_encoding) != head.end()) {
    // RFC 9112 6.1: with both, Transfer-Encoding would win; refused instead.
    if (head.find(http::field::content_length) != head.end()) {
      return "Transfer-Encoding together with Content-Length";
    }
    if (head.version() < 11) return "Transfer-Encoding in an HTTP/1.0 request";
    // RFC 9112 6.3: the body's length cannot be determined.
    if (!parser.chunked()) return "Transfer-Encoding whose final coding is not chunked";
  }
  return host_defect(head.version(), head.find(http::field::host) != head.end());
}
}  // namespace

class HttpServer::Session : public std::enable_shared_from_this<HttpServer::Session> {
 public:
  // `tls`: the listener's TLS context for this connection, or null.
  Session(HttpServer& server, tcp::socket socket, TlsContext tls)
      : server_(server),
        tls_(std::move(tls)),
        stream_(tls_ ? Stream(std::move(socket), *tls_) : Stream(std::move(socket))),
        conn_(stream_, buffer_, deadline_, server.options_.write_timeout, server.draining_) {
    beast::error_code ignored;
    stream_.socket().non_blocking(true, ignored);  // writes are tried at once (ClientConnection)
  }

  Task<void> run();

  // Runs on the session's strand.
  void close(bool idle_only) {
    if (idle_only && !idle_) return;
    stream_.close();
  }
  net::any_io_executor executor() { return stream_.get_executor(); }
  Deadline& deadline() { return deadline_; }
  // Any thread: waiting for a request's first bytes, since when (steady
  // clock ticks); an idle connection may be closed to make room for a new one.
  bool idle() const { return idle_.load(std::memory_order_relaxed); }
  int64_t idle_since() const { return idle_since_.load(std::memory_order_relaxed); }
  // The accept loop chose it to close: not chosen again. Under the
  // server's sessions_mu_.
  void mark_evicted() { evicted_ = true; }
  bool evicted() const { return evicted_; }

 private:
  // Answers an error the server found itself (the handler never ran), tells
  // on_refusal, and then lingers: the connection ends after it.
  Task<void> refuse_request(ErrorCode code, std::string_view reason, std::string message,
                            const BeastRequest* parsed);
  Task<void> reply_error(ErrorCode code, std::string message);
  // Reads and drops what the client still sends, within kLingerTime.
  Task<void> linger();
  void set_idle(bool idle) {
    if (idle) idle_since_.store(Deadline::Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
    idle_.store(idle, std::memory_order_relaxed);
  }
  // Reads and parses until the header (or, with `whole`, the message) is
  // complete (http/beast_request: the head's limit exact, trailers dropped).
  Task<beast::error_code> parse_request(BeastRequest& parser, bool whole);
  // The rest of a request whose first bytes came (or `header_ec`, why
  // none did) into `req`: scanned, or parsed by Beast, errors answered.
  // False: the connection ends. Its own coroutine, so that the parser and
  // the error paths take no room in run()'s frame while the request is
  // served (a stream holds that frame for minutes).
  Task<bool> read_request(HttpRequest& req, beast::error_code header_ec);
  // Takes the request at the front of the buffer into `req` when the strict
  // scan (http/head_scan) accepts it whole, reading the rest of a body that
  // has not all arrived straight into the buffer first; false leaves it to
  // Beast (or the connection ends: `ec`).
  Task<bool> take_scanned_request(HttpRequest& req, beast::error_code& ec);
  // The TLS handshake, within header_timeout; false: the connection ends.
  Task<bool> handshake();

  HttpServer& server_;
  TlsContext tls_;  // kept while the connection lives (a reload replaces the listener's)
  Stream stream_;
  beast::flat_buffer buffer_;
  Deadline deadline_;
  ClientConnection conn_;
  std::atomic<bool> idle_{true};  // waiting for a request header (safe to close on drain or at the cap)
  std::atomic<int64_t> idle_since_{Deadline::Clock::now().time_since_epoch().count()};
  bool evicted_ = false;  // guarded by the server's sessions_mu_
};

Task<void> HttpServer::Session::refuse_request(ErrorCode code, std::string_view reason, std::string message,
                                               const BeastRequest* parsed) {
  if (const auto& notify = server_.options_.on_refusal) {
    HttpRefusal refusal{.status = map_error(code).status, .reason = reason};
    if (parsed && parsed->header_done()) refusal.target = parsed->parser().get().target();
    notify(refusal);
  }
  co_await reply_error(code, std::move(message));
  co_await linger();
}

Task<void> HttpServer::Session::linger() {
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  deadline_.arm(stream_.socket(), kLingerTime);
  for (;;) {
    buffer_.consume(buffer_.size());
    const beast::error_code ec = co_await conn_.wait_for_bytes();
    if (ec) break;  // the client closed, or kLingerTime passed (the deadline closed the socket)
  }
  deadline_.disarm();
  buffer_.consume(buffer_.size());
}

Task<void> HttpServer::Session::reply_error(ErrorCode code, std::string message) {
  const ApiError err{code, std::move(message), {}, {}};
  http::response<http::string_body> res{static_cast<http::status>(err.status()), 11};
  res.set(http::field::content_type, "application/json");
  res.body() = error_body(err);
  conn_.set_keep_alive(false);
  co_await conn_.send(res);
}

Task<beast::error_code> HttpServer::Session::parse_request(BeastRequest& parser, bool whole) {
  for (;;) {
    const beast::error_code ec = parser.parse(buffer_, whole);
    if (ec || parser.done() || (!whole && parser.header_done())) co_return ec;
    if (const beast::error_code read_ec = co_await conn_.wait_for_bytes(); read_ec) {
      if (read_ec != net::error::eof) co_return read_ec;
      co_return parser.finish_at_eof();
    }
  }
}

Task<bool> HttpServer::Session::take_scanned_request(HttpRequest& req, beast::error_code& ec) {
  const ServerOptions& opt = server_.options_;
  ScannedRequest scanned;
  for (;;) {
    const auto data = buffer_.data();
    const std::string_view bytes(static_cast<const char*>(data.data()), data.size());
    if (scan_request(bytes, opt.max_header_bytes, body_limits(opt), scanned)) break;
    if (scanned.awaiting == 0) co_return false;
    // The head is taken: the body's rest, whatever its size, in as few
    // reads as the kernel allows, within client_body_ms.
    set_idle(false);
    if (deadline_.disarm()) {  // the header's deadline passed: the connection is closed
      ec = net::error::operation_aborted;
      co_return false;
    }
    deadline_.arm(stream_.socket(), opt.body_timeout);
    while (buffer_.size() < scanned.awaiting) {
      ec = co_await conn_.wait_for_bytes(scanned.awaiting - buffer_.size());
      if (ec) co_return false;
    }
  }
  req = HttpRequest(scanned);
  buffer_.consume(scanned.size);
  co_return true;
}

Task<bool> HttpServer::Session::handshake() {
  TlsStream& tls = *stream_.tls();
  deadline_.arm(stream_.socket(), server_.options_.header_timeout);
  auto [ec] = co_await tls.async_handshake(ssl::stream_base::server, kAsTuple);
  if (deadline_.disarm() || ec) co_return false;
  conn_.set_peer_names(verified_peer_names(tls));
  co_return true;
}

Task<void> HttpServer::Session::run() {
  const ServerOptions& opt = server_.options_;
  conn_.start(weak_from_this());
  bool first = true;
  if (stream_.tls()) {
    const bool secured = co_await handshake();
    if (!secured) {
      stream_.close();
      co_return;
    }
  }
  while (!server_.draining()) {
    set_idle(true);
    deadline_.arm(stream_.socket(), first ? opt.header_timeout : opt.keepalive_idle);
    beast::error_code header_ec;
    if (buffer_.size() == 0) {
      // Idle between requests: no read buffer is held (ClientConnection
      // reads into one sized when the next request's bytes arrive).
      buffer_.shrink_to_fit();
      header_ec = co_await conn_.wait_for_bytes();
      if (header_ec == net::error::eof) header_ec = http::error::end_of_stream;  // nothing came
    }
    HttpRequest req;
    if (!co_await read_request(req, header_ec)) break;

    conn_.begin_request(req.keep_alive(), /*chunked=*/!req.http10());
    ++server_.active_requests_;
    // The handler must not throw; if it does (a bug), the connection is
    // closed.
    std::exception_ptr failure;
    try {
      co_await server_.handler_(req, conn_);
    } catch (...) {
      failure = std::current_exception();
    }
    conn_.end_request();
    --server_.active_requests_;
    if (failure) {
      log_handler_failure(failure);
      break;
    }
    if (!conn_.keep_alive()) break;
    first = false;
  }
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  stream_.close();
}

Task<bool> HttpServer::Session::read_request(HttpRequest& req, beast::error_code header_ec) {
  const ServerOptions& opt = server_.options_;
  // The common request (whatever its body's size) is taken by the scan;
  // anything else is parsed by Beast from the same bytes.
  std::optional<BeastRequest> parser;
  if (!header_ec && !co_await take_scanned_request(req, header_ec) && !header_ec) {
    const BodyLimits limits = body_limits(opt);
    parser.emplace(opt.max_header_bytes, std::max(limits.bytes, limits.large_bytes));
    header_ec = co_await parse_request(*parser, /*whole=*/false);
    if (!header_ec && parser->header_done()) {
      // The head names the target: its own limit from here on.
      auto& p = parser->parser();
      const std::size_t limit = limits.for_target(p.get().target());
      if (p.content_length() && *p.content_length() > limit) header_ec = http::error::body_limit;
      p.body_limit(limit);
    }
  }
  set_idle(false);
  if (deadline_.disarm()) co_return false;  // idle or slow header: connection closed
  const BeastRequest* parsed = parser ? &*parser : nullptr;
  if (auto ec = header_ec; ec) {
    if (ec == http::error::header_limit) {
      std::string message = "request header exceeds " + std::to_string(opt.max_header_bytes) + " bytes";
      co_await refuse_request(ErrorCode::kHeadersTooLarge, "header_too_large", std::move(message), parsed);
    } else if (ec == http::error::body_limit) {
      co_await refuse_request(ErrorCode::kPayloadTooLarge, "body_too_large", body_too_large_message(opt, parsed ? std::string_view(parsed->parser().get().target()) : std::string_view()),
                                parsed);
    } else if (ec != http::error::end_of_stream && ec != net::error::eof &&
               ec != net::error::connection_reset && ec != net::error::operation_aborted &&
               ec != net::error::bad_descriptor) {
      std::string message = "malformed HTTP request: " + ec.message();
      co_await refuse_request(ErrorCode::kInvalidRequest, "malformed", std::move(message), parsed);
    }
    co_return false;
  }
  if (const char* defect = parser ? head_defect(parser->parser()) : host_defect(11, req.field("host").has_value())) {
    co_await refuse_request(ErrorCode::kInvalidRequest, "malformed", std::string("malformed HTTP request: ") + defect,
                            parsed);
    co_return false;
  }
  if (parser && !parser->done()) {
    if (parser->parser().get()[http::field::expect] == "100-continue") {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      deadline_.arm(stream_.socket(), opt.write_timeout);
      auto [ec, n] = co_await net::async_write(stream_, net::buffer(kContinue), kAsTuple);
      if (deadline_.disarm() || ec) co_return false;
    }
    deadline_.arm(stream_.socket(), opt.body_timeout);
    const beast::error_code body_ec = co_await parse_request(*parser, /*whole=*/true);
    if (deadline_.disarm()) co_return false;
    if (auto ec = body_ec; ec) {
      if (ec == http::error::body_limit) {
        co_await refuse_request(ErrorCode::kPayloadTooLarge, "body_too_large", body_too_large_message(opt, parsed ? std::string_view(parsed->parser().get().target()) : std::string_view()),
                                parsed);
      } else if (ec != http::error::partial_message && ec != net::error::eof && ec != net::error::connection_reset &&
                 ec != net::error::operation_aborted && ec != net::error::bad_descriptor) {
        std::string message = "malformed HTTP request body: " + ec.message();
        co_await refuse_request(ErrorCode::kInvalidRequest, "malformed", std::move(message), parsed);
      }
      co_return false;
    }
  }
  if (parser) req = parser->release();
  // The request is copied out: a stream that runs for minutes holds no
  // read buffer (nor a large body's) while it does.
  if (buffer_.size() == 0) buffer_.shrink_to_fit();
  co_return true;
}

HttpServer::HttpServer(net::io_context& ioc, ServerOptions options, RequestHandler handler,
                       IoPool* workers)
    : ioc_(ioc),
      workers_(workers),
      options_(std::move(options)),
      handler_(std::move(handler)),
      acceptor_(ioc),
      sweep_timer_(net::make_strand(ioc)) {}

HttpServer::~HttpServer() = default;

std::expected<uint16_t, std::string> HttpServer::listen() {
  beast::error_code ec;
  const auto address = net::ip::make_address(options_.address, ec);
  if (ec) return std::unexpected("invalid listen address '" + options_.address + "'");
  const tcp::endpoint endpoint(address, options_.port);
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return std::unexpected("cannot listen on " + options_.address + ":" +
                           std::to_string(options_.port) + ": " + ec.message());
  }
  return acceptor_.local_endpoint().port();
}

void HttpServer::start() {
  net::co_spawn(acceptor_.get_executor(), accept_loop(), net::detached);
  net::co_spawn(sweep_timer_.get_executor(), sweep_loop(), net::detached);
}

void HttpServer::reload_tls() {
  const std::optional<std::string> reloaded = options_.tls->reload_if_changed();
  if (!reloaded) return;
  if (reloaded->empty()) {
    log_event(EventLevel::kInfo, "tls_reloaded", {{"cert_file", options_.tls->cert_file()}});
  } else {
    log_event(EventLevel::kError, "tls_reload_failed",
              {{"what", *reloaded}, {"note", "the previous certificate stays in use"}});
  }
}

Task<void> HttpServer::sweep_loop() {
  auto next_tls_check = Deadline::Clock::now() + ServerTls::kCheckEvery;
  while (!stopped_) {
    sweep_timer_.expires_after(kDeadlineTick);
    co_await sweep_timer_.async_wait(kAsTuple);
    const auto now = Deadline::Clock::now();
    if (options_.tls && now >= next_tls_check) {
      next_tls_check = now + ServerTls::kCheckEvery;
      reload_tls();
    }
    std::lock_guard lock(sessions_mu_);
    for (const auto& s : sessions_) {
      if (s->deadline().due(now)) {
        net::post(s->executor(), [s, now] { s->deadline().expire(now); });
      }
    }
  }
}

void HttpServer::refuse(tcp::socket socket) {
  const ApiError err{ErrorCode::kTooManyConnections, "too many open connections; retry shortly", {}, {}};
  const std::string body = error_body(err);
  const std::string response = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                               "Retry-After: " + retry_after_seconds(*err.effective_retry_after()) +
                               "\r\nConnection: close\r\nContent-Length: " + std::to_string(body.size()) +
                               "\r\n\r\n" + body;
  beast::error_code ec;
  socket.non_blocking(true, ec);
  // A new socket's send buffer takes the few hundred bytes at once.
  if (!ec) net::write(socket, net::buffer(response), ec);
  beast::error_code ignored;
  socket.shutdown(tcp::socket::shutdown_send, ignored);
  std::array<char, 4096> sink;
  for (std::size_t read = 0; !ec && read < kRefusedReadMax;) {
    read += socket.read_some(net::buffer(sink), ec);
  }
  socket.close(ignored);
  if (options_.on_refusal) {
    options_.on_refusal(HttpRefusal{.status = err.status(), .reason = "too_many_connections"});
  }
}

bool HttpServer::evict_idle() {
  std::shared_ptr<Session> oldest;
  {
    std::lock_guard lock(sessions_mu_);
    for (const auto& s : sessions_) {
      if (s->idle() && !s->evicted() && (!oldest || s->idle_since() < oldest->idle_since())) oldest = s;
    }
    if (!oldest) return false;
    oldest->mark_evicted();
  }
  net::post(oldest->executor(), [oldest] { oldest->close(/*idle_only=*/true); });
  return true;
}

Task<void> HttpServer::accept_loop() {
  // Accept is failing for want of descriptors: logged once an episode. While
  // idle connections are closed to make room, accepts succeed between the
  // failures; the episode ends only once none has failed for kEpisodeQuiet.
  bool starved = false;
  Deadline::Clock::time_point last_starved{};
  net::steady_timer backoff(acceptor_.get_executor());
  std::size_t evictions = 0;  // idle connections closed at the cap, for the log line
  while (!draining()) {
    net::any_io_executor home = net::make_strand(ioc_);
    if (workers_) home = workers_->next().get_executor();
    auto [ec, socket] = co_await acceptor_.async_accept(home, kAsTuple);
    if (ec) {
      if (ec == net::error::operation_aborted || !acceptor_.is_open()) break;
      if (ec == net::error::no_descriptors || ec.value() == ENFILE || ec == net::error::no_buffer_space ||
          ec == net::error::no_memory) {
        // Keep serving the connections we have; try again later, not at once.
        if (!starved) {
          log_event(EventLevel::kError, "accept_failed",
                    {{"error", ec.message()},
                     {"open_connections", open_connections()},
                     {"retry_ms", kAcceptBackoff.count()}});
          starved = true;
        }
        last_starved = Deadline::Clock::now();
        // An idle connection gives its descriptor up; else wait for one.
        backoff.expires_after(evict_idle() ? kAcceptAfterEviction : kAcceptBackoff);
        co_await backoff.async_wait(kAsTuple);
      }
      continue;
    }
    if (starved && Deadline::Clock::now() - last_starved >= kEpisodeQuiet) {
      log_event(EventLevel::kInfo, "accept_recovered", {{"open_connections", open_connections()}});
      starved = false;
    }
    beast::error_code ignored;
    if (options_.max_connections > 0 && open_connections() >= options_.max_connections) {
      // The new client is served in the place of the one idle the longest.
      if (!evict_idle()) {
        refuse(std::move(socket));
        continue;
      }
      if (evictions++ == 0) {
        log_event(EventLevel::kWarn, "connection_cap_reached",
                  {{"max_connections", options_.max_connections},
                   {"note", "idle connections are closed to make room (logged once)"}});
      }
    }
    socket.set_option(tcp::no_delay(true), ignored);
    TlsContext tls;
    if (options_.tls) tls = options_.tls->current();
    auto session = std::make_shared<Session>(*this, std::move(socket), std::move(tls));
    {
      std::lock_guard lock(sessions_mu_);
      sessions_.insert(session);
    }
    net::co_spawn(session->executor(), session->run(), [this, session](std::exception_ptr) {
      std::lock_guard lock(sessions_mu_);
      sessions_.erase(session);
    });
  }
}

std::size_t HttpServer::open_connections() const {
  std::lock_guard lock(sessions_mu_);
  return sessions_.size();
}

void HttpServer::close_all(bool idle_only) {
  std::lock_guard lock(sessions_mu_);
  for (const auto& s : sessions_) {
    net::post(s->executor(), [s, idle_only] { s->close(idle_only); });
  }
}

Task<void> HttpServer::drain(std::chrono::milliseconds deadline, std::function<void()> stop_running) {
  draining_ = true;
  net::post(acceptor_.get_executor(), [this] {
    beast::error_code ignored;
    acceptor_.close(ignored);
  });
  const auto start = std::chrono::steady_clock::now();
  const auto until = start + deadline;
  // Time left at the end for requests told to stop to say so.
  const auto stop_at = until - std::min<std::chrono::milliseconds>(deadline / 4, std::chrono::milliseconds(500));
  net::steady_timer timer(co_await net::this_coro::executor);
  // Idle keep-alive connections stay open while requests are in flight, so
  // a load balancer probing /readyz on one sees the 503 (answered with
  // Connection: close); once nothing is in flight they are closed. Repeated:
  // a connection may turn idle after its last response while we wait.
  while (open_connections() > 0 && std::chrono::steady_clock::now() < until) {
    if (active_requests() == 0) close_all(/*idle_only=*/true);
    if (stop_running && active_requests() > 0 && std::chrono::steady_clock::now() >= stop_at) {
      std::exchange(stop_running, nullptr)();
    }
    timer.expires_after(std::chrono::milliseconds(20));
    co_await timer.async_wait(kAsTuple);
  }
  // Terminal cancel: whatever is left is cut.
  for (int i = 0; i < 50 && open_connections() > 0; ++i) {
    close_all(/*idle_only=*/false);
    timer.expires_after(std::chrono::milliseconds(20));
    co_await timer.async_wait(kAsTuple);
  }
  net::post(sweep_timer_.get_executor(), [this] {
    stopped_ = true;
    sweep_timer_.cancel();
  });
}

}  // namespace arbiter
