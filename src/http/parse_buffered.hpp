// Driving a Beast parser by hand over a connection's read buffer, shared by
// the server's request reads and the relay's upstream response reads (both
// skip Beast's composed read operations; see docs/architecture.md).
#pragma once

#include "http/asio.hpp"

namespace arbiter {

// Parses what `buffer` holds, consuming it, until the message is done or
// more bytes are needed (need_more is not an error).
template <bool isRequest>
beast::error_code parse_buffered(http::basic_parser<isRequest>& parser, beast::flat_buffer& buffer) {
  beast::error_code ec;
  while (buffer.size() > 0 && !parser.is_done()) {
    const std::size_t used = parser.put(buffer.data(), ec);
    buffer.consume(used);
    if (ec == http::error::need_more) return {};
    if (ec) return ec;
    if (used == 0) break;
  }
  return ec;
}

// The peer closed the connection: completes a message that ends at close,
// else end_of_stream (nothing received) or partial_message.
template <bool isRequest>
beast::error_code finish_at_eof(http::basic_parser<isRequest>& parser) {
  if (!parser.got_some()) return http::error::end_of_stream;
  beast::error_code ec;
  parser.put_eof(ec);
  if (!ec && !parser.is_done()) ec = http::error::partial_message;
  return ec;
}

}  // namespace arbiter
