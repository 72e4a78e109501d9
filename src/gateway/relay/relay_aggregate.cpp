// A stream the client gets whole at its end (upstream_exchange.hpp).
#include "gateway/relay/upstream_exchange.hpp"

namespace arbiter {

Task<bool> UpstreamExchange::relay_aggregate(Stream& socket, beast::flat_buffer& buffer,
                                             UpstreamResponseParser& parser) {
  RelayResume& resume = *r_.resume;
  SseFramer framer;
  Inherited* const inherited = inherited_stream();
  if (inherited) framer = std::move(inherited->framer);
  for (bool handed = inherited != nullptr;; handed = false) {
    if (!handed) {
      const std::size_t before = framer.events();
      for (const std::string_view piece : parser.body_pieces()) {
        framer.feed(piece, [&resume](std::string_view event) { track_event(event, resume.route, resume.checkpoint); });
      }
      if (framer.events() > 0) first_event();
      count_gaps(framer.events() - before);
    }
    if (r_.typing) {
      // Nothing went to this client yet: the heir's text is all that was
      // generated after the bytes it typed.
      if (const auto skip = r_.typing->claimed()) {
        keep_for_heir(*skip, 0, framer, parser.is_done());
        co_return false;
      }
      publish(socket.tls() != nullptr);
    }
    framer.release();
    if (resume.checkpoint.text.size() > r_.limits.max_upstream_response_bytes) {
      fail_too_large();
      co_return false;
    }
    if (parser.is_done()) break;
    const Read read = co_await read_more(socket, buffer, parser, r_.timeouts.stream_idle, true);
    if (after_read(read) != ReadEnd::kData) co_return false;
  }
  const std::string body = aggregate_response(resume.route, resume.checkpoint);
  const ResponseHead head{.status = 200,
                          .content_type = "application/json",
                          .cache_control = {},
                          .upstream = {},
                          .gateway = r_.response_headers};
  outcome_.status = 200;
  if (!co_await r_.sink.send(head, body)) {
    outcome_.status = 499;
    co_return false;
  }
  co_return parser.keep_alive();
}

}  // namespace arbiter
