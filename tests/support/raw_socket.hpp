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

}  // namespace arbiter::test
