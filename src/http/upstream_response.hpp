// Parses a backend's HTTP/1.1 response as it arrives in the connection's read
// buffer. It keeps what the relay passes on (status, content type, the
// headers clients pace retries by) and hands out body bytes as views into
// that buffer: no per-field allocation and no copy into a body buffer.
//
// The common response (a Content-Length body; every non-streaming answer
// from vLLM, SGLang or llama.cpp) is read by the strict scan of
// http/head_scan; anything that scan declines (chunked streams, close-
// delimited bodies, odd heads) by Beast's parser, from the same bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/asio.hpp"

namespace arbiter {

class UpstreamResponseParser {
 public:
  UpstreamResponseParser();
  ~UpstreamResponseParser();
  UpstreamResponseParser(const UpstreamResponseParser&) = delete;
  UpstreamResponseParser& operator=(const UpstreamResponseParser&) = delete;
  // Moved with its connection when typing through hands a stream on; the
  // body pieces stay views into that connection's buffer.
  UpstreamResponseParser(UpstreamResponseParser&&) noexcept;

  // Parses what `buffer` holds and consumes it. Body bytes parsed by this
  // call are in body_pieces() until the next call (views into the buffer:
  // use them before reading into it again). need_more is not an error.
  beast::error_code parse(beast::flat_buffer& buffer);
  // The backend closed the connection: completes a body that ends at close,
  // else end_of_stream (nothing received) or partial_message.
  beast::error_code parse_eof();

  bool is_header_done() const;
  bool is_done() const;
  // The backend keeps the connection open after this response.
  bool keep_alive() const;
  std::optional<uint64_t> content_length() const;

  unsigned status() const { return status_; }
  std::string_view content_type() const { return content_type_; }
  // Upstream headers passed on to the client besides the content type.
  const std::vector<std::pair<std::string, std::string>>& forwarded() const { return forwarded_; }
  const std::vector<std::string_view>& body_pieces() const { return pieces_; }

 private:
  class Fallback;  // Beast's parser, for what the scan declines
  void keep_field(std::string_view name, std::string_view value);
  void take_body(beast::flat_buffer& buffer);

  std::unique_ptr<Fallback> fallback_;
  // The scanned response (no fallback):
  bool header_done_ = false;
  bool keep_alive_ = true;
  uint64_t content_length_ = 0;
  uint64_t remaining_ = 0;  // body bytes still to come

  unsigned status_ = 0;
  std::string content_type_;
  std::vector<std::pair<std::string, std::string>> forwarded_;
  std::vector<std::string_view> pieces_;
};

}  // namespace arbiter
