// Writes a whole message to a non-blocking socket, at once when the kernel
// takes it all (the usual case: heads, requests and events are far smaller
// than the socket buffer), and with an async write under a deadline only for
// what is left. An async write that completes at once still posts its
// completion, one more trip through the event loop per write.
#pragma once

#include <span>

#include "http/asio.hpp"
#include "http/deadline.hpp"

namespace arbiter {

struct WriteResult {
  beast::error_code ec;
  bool timed_out = false;  // `limit` passed (the deadline closed the socket)
  explicit operator bool() const { return !ec && !timed_out; }
};

// `socket` must be in non-blocking mode (socket.non_blocking(true)).
Task<WriteResult> write_now(tcp::socket& socket, std::span<const net::const_buffer> buffers,
                            Deadline& deadline, Deadline::Clock::duration limit);

}  // namespace arbiter
