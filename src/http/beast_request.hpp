// Beast's request parser as the server drives it over a connection's read
// buffer, for the requests the strict scan (http/head_scan) declines, with
// two corrections Beast (Boost 1.81) does not make itself:
// - The head limit is exact. Beast's header_limit bounds the bytes one
//   put() is given, not the head: fields consumed by an earlier put no
//   longer count, so a head sent in pieces (the server reads 8 KiB at a
//   time) passed the limit several times over. The head's bytes are counted
//   here across puts; one byte over the limit is header_limit, however the
//   head was split.
// - Trailer fields are not header fields (RFC 9110 6.5). Beast adds a
//   chunked body's trailer to the message's fields, next to header fields of
//   the same name; a field sent there must never authenticate, classify,
//   route or reach the engine. The head's fields are copied when the last
//   chunk begins, before its trailer is parsed, and the request is built
//   from that copy: trailers are read and dropped.
// No I/O: the caller reads into the buffer and calls again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/asio.hpp"
#include "http/server_request.hpp"

namespace arbiter {

class BeastRequest {
 public:
  using Parser = http::request_parser<http::string_body>;

  BeastRequest(std::size_t header_limit, std::size_t body_limit);
  // The parser holds a reference to the chunk callback inside this object.
  BeastRequest(const BeastRequest&) = delete;
  BeastRequest& operator=(const BeastRequest&) = delete;

  // Parses what `buffer` holds, consuming it, until the head is complete
  // (or, with `whole`, the message); need_more is not an error. The head
  // is parsed without eagerness, so a put stops where it ends and its
  // bytes are counted exactly; the body eagerly.
  beast::error_code parse(beast::flat_buffer& buffer, bool whole);
  // The client closed the connection: completes a message that ends at close,
  // else end_of_stream (nothing received) or partial_message.
  beast::error_code finish_at_eof();

  bool header_done() const { return parser_.is_header_done(); }
  bool done() const { return parser_.is_done(); }
  // The parsed head (valid once header_done()).
  const Parser& parser() const { return parser_; }
  Parser& parser() { return parser_; }
  // Bytes of the head consumed so far (all of it once header_done()).
  std::size_t head_bytes() const { return head_bytes_; }

  // The request, with the head's fields only (done() first).
  ServerRequest release();

 private:
  // Beast's chunk-header callback: at the last chunk (size 0) the head's
  // fields are copied, before the trailer's are parsed into the message.
  struct LastChunk {
    BeastRequest* self;
    void operator()(std::uint64_t size, std::string_view extensions, beast::error_code& ec);
  };

  beast::error_code parse_head(beast::flat_buffer& buffer);

  std::size_t header_limit_;
  Parser parser_;
  LastChunk last_chunk_{this};
  std::size_t head_bytes_ = 0;
  std::optional<std::vector<std::pair<std::string, std::string>>> head_fields_;
};

}  // namespace arbiter
