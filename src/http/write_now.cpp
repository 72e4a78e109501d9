#include "http/write_now.hpp"

#include <string>

namespace arbiter {

std::size_t write_at_once(Stream& stream, std::span<const net::const_buffer> buffers, beast::error_code& ec) {
  if (stream.tls()) return 0;
  const std::size_t written = stream.socket().write_some(buffers, ec);
  if (ec == net::error::would_block || ec == net::error::try_again) {
    ec = {};
    return 0;
  }
  return ec ? 0 : written;
}

Task<WriteResult> write_rest(Stream& stream, std::span<const net::const_buffer> buffers, std::size_t written,
                             Deadline& deadline, Deadline::Clock::duration limit) {
  beast::buffers_suffix<std::span<const net::const_buffer>> rest(buffers);
  rest.consume(written);
  deadline.arm(stream.socket(), limit);
  beast::error_code ec;
  if (stream.tls() && buffers.size() > 1) {
    // Asio's TLS stream makes a record (and a send) of each buffer: a chunked
    // event is three. One buffer, one record.
    std::string flat(net::buffer_size(rest), '\0');
    net::buffer_copy(net::buffer(flat), rest);
    auto [write_ec, n] = co_await net::async_write(stream, net::buffer(flat), kAsTuple);
    ec = write_ec;
  } else {
    auto [write_ec, n] = co_await net::async_write(stream, rest, kAsTuple);
    ec = write_ec;
  }
  WriteResult result;
  result.timed_out = deadline.disarm();
  result.ec = ec;
  co_return result;
}

}  // namespace arbiter
