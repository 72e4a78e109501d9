// A whole answer relayed (upstream_exchange.hpp).
#include "core/upstream_error.hpp"
#include "core/usage.hpp"
#include "gateway/relay/upstream_exchange.hpp"

namespace arbiter {

Task<void> UpstreamExchange::refuse_continuation(unsigned status) {
  outcome_.status = 200;  // what the client got, in the first run
  fail("protocol",
       upstream_failed("the backend refused to continue a preempted request: HTTP " + std::to_string(status)));
  co_await end_stream_with_error(*outcome_.error);
}

Task<bool> UpstreamExchange::relay_whole(Stream& socket, beast::flat_buffer& buffer, UpstreamResponseParser& parser) {
  const std::optional<uint64_t> len = parser.content_length();
  if (len && *len > r_.limits.max_upstream_response_bytes) {
    fail_too_large();
    co_return false;
  }
  std::string body;        // the pieces, when the body came in more than one read
  std::string_view whole;  // what is sent: one read's piece as it lies in the buffer, or `body`
  for (;;) {
    const std::vector<std::string_view>& pieces = parser.body_pieces();
    if (body.empty() && parser.is_done() && pieces.size() <= 1) {
      if (!pieces.empty()) whole = pieces.front();  // valid until the next read on this connection
      break;
    }
    if (body.empty() && len) body.reserve(*len);
    for (const std::string_view piece : pieces) body.append(piece);
    if (body.size() > r_.limits.max_upstream_response_bytes) break;
    if (parser.is_done()) {
      whole = body;
      break;
    }
    const Read read = co_await read_more(socket, buffer, parser, r_.timeouts.stream_idle);
    if (after_read(read) != ReadEnd::kData) co_return false;
  }
  if (whole.size() > r_.limits.max_upstream_response_bytes || body.size() > r_.limits.max_upstream_response_bytes) {
    fail_too_large();
    co_return false;
  }
  std::string error_body;
  const std::string_view content_type = as_openai_error(parser, whole, error_body);
  if (r_.hold_failures && is_server_failure(parser.status())) {
    outcome_.held = HeldResponse{.status = parser.status(),
                                 .content_type = std::string(content_type),
                                 .body = std::string(whole),
                                 .headers = parser.forwarded()};
    co_return parser.keep_alive();
  }
  const ResponseHead head{.status = parser.status(),
                          .content_type = content_type,
                          .cache_control = {},
                          .upstream = parser.forwarded(),
                          .gateway = r_.response_headers};
  outcome_.status = static_cast<int>(parser.status());
  if (parser.status() == 200) outcome_.usage = find_usage(whole);
  if (!co_await r_.sink.send(head, whole)) {
    outcome_.status = 499;
    co_return false;
  }
  co_return parser.keep_alive();
}

std::string_view UpstreamExchange::as_openai_error(const UpstreamResponseParser& parser, std::string_view& whole,
                                                   std::string& error_body) {
  // An engine's error answer, whatever its shape, reaches the client as an
  // OpenAI error object (core/upstream_error.hpp), streamed request or not.
  if (parser.status() >= 200 && parser.status() < 300) return parser.content_type();
  if (auto wrapped = openai_error_body(parser.status(), whole)) {
    error_body = std::move(*wrapped);
    whole = error_body;
  }
  return "application/json";
}

}  // namespace arbiter
