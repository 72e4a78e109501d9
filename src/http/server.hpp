// HTTP/1.1 server: an accept loop and one coroutine per connection, each on
// its own strand. Reads requests within header/body limits and deadlines,
// hands each to the handler, and drains gracefully on shutdown.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>

#include "http/asio.hpp"
#include "http/client_connection.hpp"
#include "http/deadline.hpp"
#include "http/io_pool.hpp"
#include "http/server_request.hpp"
#include "http/server_tls.hpp"

namespace arbiter {

// What the server refused without a handler: the status it answered, a
// stable reason (a metric label) and the request's target when it read one.
struct HttpRefusal {
  int status = 0;
  std::string_view reason;  // "malformed", "header_too_large", "body_too_large", "too_many_connections"
  std::string_view target;
};

struct ServerOptions {
  std::string address = "127.0.0.1";
  uint16_t port = 0;
  std::size_t max_header_bytes = 16 << 10;
  std::size_t max_body_bytes = 4 << 20;
  // Targets under this prefix may have bodies up to large_body_bytes
  // instead (the Batch API's file uploads); empty: none.
  std::string large_body_prefix;
  std::size_t large_body_bytes = 0;
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds body_timeout{30'000};
  std::chrono::milliseconds keepalive_idle{60'000};
  std::chrono::milliseconds write_timeout{30'000};
  // TLS on every connection (the handshake within header_timeout); null:
  // plain TCP.
  std::shared_ptr<ServerTls> tls;
  // Open connections at most (0: no limit; the gateway sets one from its
  // descriptors, http/connection_cap.hpp). At the cap a new connection
  // takes the place of the connection idle the longest (waiting for a
  // request), which is closed; with none idle it is answered 503 at once.
  std::size_t max_connections = 0;
  // Told of every request refused by the server itself (malformed or
  // smuggling framing, 413, 431) and of every connection refused at the
  // cap, on the connection's strand or the acceptor's; must not block.
  std::function<void(const HttpRefusal&)> on_refusal;
};

using HttpRequest = ServerRequest;
// Must write exactly one response through the connection (or find the client
// gone). Runs on the connection's strand.
using RequestHandler = std::function<Task<void>(HttpRequest&, ClientConnection&)>;

class HttpServer {
 public:
  // Connections run on `workers` when given (one context per thread, no
  // strands), else each on its own strand of `ioc`.
  HttpServer(net::io_context& ioc, ServerOptions options, RequestHandler handler,
             IoPool* workers = nullptr);
  ~HttpServer();

  // Binds and listens; returns the bound port (useful with port 0).
  std::expected<uint16_t, std::string> listen();
  void start();

  // Stops accepting; connections with a request in progress finish it
  // (answering with Connection: close); idle keep-alive connections may send
  // one more request (e.g. /readyz) until nothing is in flight, then are
  // closed. Shortly before `deadline` (a quarter of it, at most 500 ms)
  // `stop_running`, when given and requests are still in progress, tells
  // them to end (a stream with a final error event); at `deadline` whatever
  // is still open is closed. Completes when every connection is gone.
  Task<void> drain(std::chrono::milliseconds deadline, std::function<void()> stop_running = {});

  bool draining() const { return draining_.load(); }
  std::size_t open_connections() const;
  std::size_t active_requests() const { return active_requests_.load(); }

 private:
  class Session;
  // Accepts until draining. When accept fails for want of file descriptors
  // (or kernel memory) it waits kAcceptBackoff before trying again, logging
  // once per episode: retrying at once spins a core that also runs timers.
  Task<void> accept_loop();
  // A connection beyond max_connections with no idle one to close: 503
  // (too_many_connections) with Connection: close, written at once, what
  // the client already sent read, then closed. No lingering: a flood of
  // refused connections holds no descriptor.
  void refuse(tcp::socket socket);
  // Closes the connection idle the longest (waiting for a request's first
  // bytes); false when none is.
  bool evict_idle();
  // Closes sockets whose Deadline passed; ticks every kDeadlineTick. Also
  // reloads the TLS certificate when its files changed.
  Task<void> sweep_loop();
  void reload_tls();
  void close_all(bool idle_only);

  net::io_context& ioc_;
  IoPool* workers_;  // nullptr: strands on ioc_
  ServerOptions options_;
  RequestHandler handler_;
  tcp::acceptor acceptor_;
  net::steady_timer sweep_timer_;  // on its own strand
  bool stopped_ = false;           // sweeper strand only
  std::atomic<bool> draining_{false};
  std::atomic<std::size_t> active_requests_{0};
  mutable std::mutex sessions_mu_;
  std::unordered_set<std::shared_ptr<Session>> sessions_;  // open connections
};

}  // namespace arbiter
