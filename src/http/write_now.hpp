// Writes a whole message to a non-blocking socket, at once when the kernel
// takes it all (the usual case: heads, requests and events are far smaller
// than the socket buffer), and with an async write under a deadline only for
// what is left. An async write that completes at once still posts its
// completion, one more trip through the event loop per write.
//
// Two calls, so that the usual case costs no coroutine: callers try
// write_at_once in line and co_await write_rest only when it left bytes.
// A TLS stream is always written by write_rest: OpenSSL takes the bytes into
// its record layer whole, so there is no partial write to resume in line.
#pragma once

#include <span>

#include "http/asio.hpp"
#include "http/deadline.hpp"
#include "http/stream.hpp"

namespace arbiter {

struct WriteResult {
  beast::error_code ec;
  bool timed_out = false;  // `limit` passed (the deadline closed the socket)
  explicit operator bool() const { return !ec && !timed_out; }
};

// Writes what the kernel takes now; returns the bytes written (0 for TLS).
// `ec` is a failure, never would_block. The socket must be non-blocking
// (socket.non_blocking(true)).
std::size_t write_at_once(Stream& stream, std::span<const net::const_buffer> buffers, beast::error_code& ec);

// Writes `buffers` from byte `written` on (what write_at_once left), within
// `limit`.
Task<WriteResult> write_rest(Stream& stream, std::span<const net::const_buffer> buffers, std::size_t written,
                             Deadline& deadline, Deadline::Clock::duration limit);

}  // namespace arbiter
