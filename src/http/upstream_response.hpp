// Parses a backend's HTTP/1.1 response as it arrives in the connection's read
// buffer. It keeps what the relay passes on (status, content type, the
// headers clients pace retries by) and hands out body bytes as views into
// that buffer: no per-field allocation and no copy into a body buffer.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/asio.hpp"

namespace arbiter {

class UpstreamResponseParser final : public http::basic_parser<false> {
 public:
  UpstreamResponseParser();

  // Parses what `buffer` holds and consumes it. Body bytes parsed by this
  // call are in body_pieces() until the next call (views into the buffer:
  // use them before reading into it again). need_more is not an error.
  beast::error_code parse(beast::flat_buffer& buffer);
  // The backend closed the connection: completes a body that ends at close,
  // else end_of_stream (nothing received) or partial_message.
  beast::error_code parse_eof();

  unsigned status() const { return status_; }
  std::string_view content_type() const { return content_type_; }
  // Upstream headers passed on to the client besides the content type.
  const std::vector<std::pair<std::string, std::string>>& forwarded() const { return forwarded_; }
  const std::vector<std::string_view>& body_pieces() const { return pieces_; }

 private:
  void on_request_impl(http::verb, beast::string_view, beast::string_view, int, beast::error_code&) override {}
  void on_response_impl(int code, beast::string_view reason, int version, beast::error_code& ec) override;
  void on_field_impl(http::field name, beast::string_view name_string, beast::string_view value,
                     beast::error_code& ec) override;
  void on_header_impl(beast::error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>&, beast::error_code&) override {}
  std::size_t on_body_impl(beast::string_view body, beast::error_code& ec) override;
  void on_chunk_header_impl(std::uint64_t, beast::string_view, beast::error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, beast::string_view body, beast::error_code& ec) override;
  void on_finish_impl(beast::error_code&) override {}

  unsigned status_ = 0;
  std::string content_type_;
  std::vector<std::pair<std::string, std::string>> forwarded_;
  std::vector<std::string_view> pieces_;
};

}  // namespace arbiter
