// One write of a chunked stream, framed by hand: the response head when the
// stream starts with this write, one chunk holding `parts` back to back
// ("<hex size>\r\n<parts>\r\n"; none when the parts hold no bytes: an empty
// chunk would end the body), and the last chunk "0\r\n\r\n" when the stream
// ends with it. Up to kMaxGathered parts are gathered where they lie; more
// parts, or `flat` (TLS, which makes a record of each buffer), are copied
// into one buffer: that costs less than the kernel's walk over a long iovec
// array, or a record per buffer.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "http/asio.hpp"

namespace arbiter {

struct ChunkWrite {
  static constexpr std::size_t kMaxGathered = 16;
  std::array<net::const_buffer, kMaxGathered + 4> buffers;  // head, size line, parts, CRLF, last chunk
  std::size_t count = 0;
  std::size_t body_bytes = 0;  // the parts' bytes
  std::array<char, 20> size_line;

  std::span<const net::const_buffer> span() const { return {buffers.data(), count}; }
};

// Fills `out` (its buffers point into `out`, `head`, `parts` and `copy`:
// all must stay put until the write is done). `copy` is reused across writes.
// `chunked` false: the parts go unframed (a body that ends with the
// connection, for an HTTP/1.0 client), and `last` adds nothing.
void frame_chunk_write(std::string_view head, std::span<const std::string_view> parts, bool last, bool flat,
                       std::string& copy, ChunkWrite& out, bool chunked = true);

}  // namespace arbiter
