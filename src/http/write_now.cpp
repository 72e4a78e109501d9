#include "http/write_now.hpp"

namespace arbiter {

Task<WriteResult> write_now(tcp::socket& socket, std::span<const net::const_buffer> buffers,
                            Deadline& deadline, Deadline::Clock::duration limit) {
  WriteResult result;
  const std::size_t written = socket.write_some(buffers, result.ec);
  if (!result.ec && written == net::buffer_size(buffers)) co_return result;
  if (result.ec && result.ec != net::error::would_block && result.ec != net::error::try_again) {
    co_return result;
  }
  beast::buffers_suffix<std::span<const net::const_buffer>> rest(buffers);
  rest.consume(written);
  deadline.arm(socket, limit);
  auto [ec, n] = co_await net::async_write(socket, rest, kAsTuple);
  result.timed_out = deadline.disarm();
  result.ec = ec;
  co_return result;
}

}  // namespace arbiter
