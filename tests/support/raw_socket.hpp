// A blocking loopback TCP client for tests that need the bytes themselves:
// hand-built requests the HTTP client would not send, answers read raw
// (HEAD, pipelined responses), half-closes and floods of connections. Every
// read is bounded by a timeout.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "support/test_clock.hpp"

namespace arbiter::test {

class RawSocket {
 public:
  // Throws std::runtime_error when the connection cannot be made.
  explicit RawSocket(uint16_t port);
  ~RawSocket();
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;

  int fd() const { return fd_; }
  // Writes every byte (throws on failure).
  void send(std::string_view bytes);
  // Half-close: the peer sees EOF, this side can still read.
  void shutdown_write();
  // Reads until the peer closes or `timeout` passes; everything read.
  std::string read_until_close(Millis timeout);
  // Reads until `needle` appears or `timeout` passes; everything read.
  std::string read_until(std::string_view needle, Millis timeout);
  // True once the peer closed (a read returned 0 or failed).
  bool closed() const { return closed_; }

 private:
  int fd_ = -1;
  bool closed_ = false;
};

// A loopback port where nothing listens (or nothing answers), held for the object's lifetime:
// a socket bound to an ephemeral port (without SO_REUSEADDR) and never
// listening, so a connection to it is refused at once and no other
// process can be handed the port while the test runs. (A port bound and
// released again could go to another test's server running in parallel.)
class ClosedPort {
 public:
  // `listening`: the socket listens but never accepts, so a connection
  // completes (the kernel's backlog) and nothing is ever answered: an
  // engine that hangs (scrapes time out, silent) rather than refuses.
  explicit ClosedPort(bool listening = false);
  ~ClosedPort();
  ClosedPort(const ClosedPort&) = delete;
  ClosedPort& operator=(const ClosedPort&) = delete;
  uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

}  // namespace arbiter::test
