#include "http/write_now.hpp"

namespace arbiter {

std::size_t write_at_once(tcp::socket& socket, std::span<const net::const_buffer> buffers, beast::error_code& ec) {
  const std::size_t written = socket.write_some(buffers, ec);
  if (ec == net::error::would_block || ec == net::error::try_again) {
    ec = {};
    return 0;
  }
  return ec ? 0 : written;
}

Task<WriteResult> write_rest(tcp::socket& socket, std::span<const net::const_buffer> buffers, std::size_t written,
                             Deadline& deadline, Deadline::Clock::duration limit) {
  beast::buffers_suffix<std::span<const net::const_buffer>> rest(buffers);
  rest.consume(written);
  deadline.arm(socket, limit);
  auto [ec, n] = co_await net::async_write(socket, rest, kAsTuple);
  WriteResult result;
  result.timed_out = deadline.disarm();
  result.ec = ec;
  co_return result;
}

}  // namespace arbiter
