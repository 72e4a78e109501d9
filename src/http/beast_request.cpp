#include "http/beast_request.hpp"

#include "http/parse_buffered.hpp"

namespace arbiter {

BeastRequest::BeastRequest(std::size_t header_limit, std::size_t body_limit) : header_limit_(header_limit) {
  // Beast's own limit stays as a backstop: it refuses only heads longer than
  // the limit (the bytes of one put, all head, reach it), never a shorter one.
  parser_.header_limit(static_cast<std::uint32_t>(header_limit));
  parser_.body_limit(body_limit);
  parser_.on_chunk_header(last_chunk_);
}

void BeastRequest::LastChunk::operator()(std::uint64_t size, std::string_view, beast::error_code&) {
  if (size != 0 || self->head_fields_) return;
  auto& copy = self->head_fields_.emplace();
  for (const auto& f : self->parser_.get()) copy.emplace_back(f.name_string(), f.value());
}

beast::error_code BeastRequest::parse_head(beast::flat_buffer& buffer) {
  parser_.eager(false);
  beast::error_code ec;
  while (buffer.size() > 0 && !parser_.is_header_done()) {
    const std::size_t used = parser_.put(buffer.data(), ec);
    buffer.consume(used);
    head_bytes_ += used;
    if (ec == http::error::need_more) {
      ec = {};
      break;
    }
    if (ec || used == 0) break;
  }
  if (ec) return ec;
  // Not done: every byte still buffered belongs to the head too (its end
  // has not arrived), so the head is already at least that long.
  const std::size_t at_least = head_bytes_ + (parser_.is_header_done() ? 0 : buffer.size());
  if (at_least > header_limit_) return http::error::header_limit;
  return {};
}

beast::error_code BeastRequest::parse(beast::flat_buffer& buffer, bool whole) {
  if (!parser_.is_header_done()) {
    if (const beast::error_code ec = parse_head(buffer); ec || !parser_.is_header_done()) return ec;
  }
  if (!whole) return {};
  parser_.eager(true);
  return parse_buffered(parser_, buffer);
}

beast::error_code BeastRequest::finish_at_eof() { return arbiter::finish_at_eof(parser_); }

ServerRequest BeastRequest::release() {
  return ServerRequest(parser_.release(), head_fields_ ? &*head_fields_ : nullptr);
}

}  // namespace arbiter
