#include "http/response_sink.hpp"

namespace arbiter {

Task<bool> ResponseSink::write_stream(const ResponseHead* head, std::span<const std::string_view> parts, bool last) {
  // One co_await per statement: GCC 12 built this with co_await inside &&
  // conditions into a SIGILL.
  bool sent = true;
  if (head) sent = co_await start_stream(*head);
  if (sent && !parts.empty()) sent = co_await send_chunk(parts);
  if (sent && last) sent = co_await end_stream();
  co_return sent;
}

}  // namespace arbiter
