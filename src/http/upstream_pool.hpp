// Keep-alive connections to one backend. Idle connections are reused LIFO
// (the warmest first) and checked for a peer close before reuse; new ones are
// opened with a connect deadline (and, for an HTTPS backend, the TLS
// handshake within the same deadline). A connection is owned by exactly one
// request between acquire() and release().
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "http/asio.hpp"
#include "http/deadline.hpp"
#include "http/stream.hpp"
#include "http/tls_context.hpp"

namespace arbiter {

struct UpstreamConnection {
  Stream stream;
  beast::flat_buffer buffer;  // read buffer: allocated while a response is read, released in the idle list
  std::string head;           // the request head being written, reused
  bool reused = false;        // came from the idle list (may have been closed by the peer)
};

// Held by pointer: a request takes and returns it without moving the socket
// and its buffers.
using PooledConnection = std::unique_ptr<UpstreamConnection>;

enum class ConnectFailure { kRefused, kTimeout, kResolve, kTls };

struct ConnectError {
  ConnectFailure kind;
  std::string detail;  // kTls: why the handshake failed
};

class UpstreamPool {
 public:
  // `threads`: I/O threads of the IoPool (idle connections are kept per
  // thread: a connection is only used by the thread whose reactor owns it).
  // `tls`: the backend's TLS context (https://), or null for plain HTTP.
  UpstreamPool(std::string host, uint16_t port, std::size_t max_idle, std::size_t threads = 1,
               std::chrono::milliseconds idle_ttl = std::chrono::seconds(30), TlsContext tls = nullptr);

  // An idle connection of this thread that still looks open, or null. No
  // waiting: the usual case costs no coroutine.
  PooledConnection take_idle();
  // A new connection, opened within `connect_timeout` (guarded by the
  // caller's connection deadline).
  Task<std::expected<PooledConnection, ConnectError>> connect(Deadline& deadline,
                                                                std::chrono::milliseconds connect_timeout);

  // Returns a connection whose last response was fully read and allowed
  // keep-alive.
  void release(PooledConnection conn);

  const std::string& host() const { return host_; }
  uint16_t port() const { return port_; }
  // The Host header of requests to this backend: "host:port".
  const std::string& host_header() const { return host_header_; }

 private:
  struct Idle {
    PooledConnection conn;
    std::chrono::steady_clock::time_point since;
  };

  std::string host_;
  uint16_t port_;
  std::string host_header_;
  std::optional<tcp::endpoint> endpoint_;  // set when host is an IP literal
  std::size_t max_idle_;
  std::chrono::milliseconds idle_ttl_;
  TlsContext tls_;
  struct IdleList {
    mutable std::mutex mu;
    std::vector<Idle> idle;  // LIFO
  };
  IdleList& local();
  std::vector<IdleList> lists_;  // one per I/O thread
};

}  // namespace arbiter
