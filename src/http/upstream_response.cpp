#include "http/upstream_response.hpp"

#include <array>

#include "http/parse_buffered.hpp"

namespace arbiter {

namespace {
// Upstream response headers passed on to the client besides content-type:
// the ones clients use to pace retries.
constexpr std::array<std::string_view, 9> kForwardedHeaders = {
    "retry-after",
    "retry-after-ms",
    "x-should-retry",
    "x-ratelimit-limit-requests",
    "x-ratelimit-remaining-requests",
    "x-ratelimit-reset-requests",
    "x-ratelimit-limit-tokens",
    "x-ratelimit-remaining-tokens",
    "x-ratelimit-reset-tokens",
};

bool is_forwarded(std::string_view name) {
  // Every forwarded name starts with r or x: most fields (Server, Date,
  // Content-Length, Connection) are out after one comparison.
  if (name.empty() || ((name[0] | 0x20) != 'r' && (name[0] | 0x20) != 'x')) return false;
  for (const std::string_view f : kForwardedHeaders) {
    if (beast::iequals(name, f)) return true;
  }
  return false;
}
}  // namespace

UpstreamResponseParser::UpstreamResponseParser() {
  body_limit(boost::none);  // streams are unbounded; the relay bounds whole bodies
  eager(true);              // header and body in one pass over what arrived
}

beast::error_code UpstreamResponseParser::parse(beast::flat_buffer& buffer) {
  pieces_.clear();
  return parse_buffered(*this, buffer);
}

beast::error_code UpstreamResponseParser::parse_eof() {
  pieces_.clear();
  return finish_at_eof(*this);
}

void UpstreamResponseParser::on_response_impl(int code, beast::string_view, int, beast::error_code&) {
  status_ = static_cast<unsigned>(code);
}

void UpstreamResponseParser::on_field_impl(http::field name, beast::string_view name_string,
                                           beast::string_view value, beast::error_code&) {
  if (name == http::field::content_type) {
    content_type_.assign(value.data(), value.size());
  } else if (is_forwarded({name_string.data(), name_string.size()})) {
    forwarded_.emplace_back(std::string(name_string), std::string(value));
  }
}

std::size_t UpstreamResponseParser::on_body_impl(beast::string_view body, beast::error_code&) {
  pieces_.emplace_back(body.data(), body.size());
  return body.size();
}

std::size_t UpstreamResponseParser::on_chunk_body_impl(std::uint64_t, beast::string_view body,
                                                       beast::error_code&) {
  pieces_.emplace_back(body.data(), body.size());
  return body.size();
}

}  // namespace arbiter
