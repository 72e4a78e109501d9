#include "http/tee_sink.hpp"

namespace arbiter {

void TeeSink::finish(bool complete) {
  if (ended_) return;
  ended_ = true;
  copy_.end(complete);
}

Task<bool> TeeSink::send(http::response<http::string_body>& res) {
  const auto type = res[http::field::content_type];
  copy_.head(res.result_int(), std::string_view(type.data(), type.size()));
  copy_.body(res.body());
  const bool sent = co_await primary_.send(res);
  finish(sent);
  co_return sent;
}

Task<bool> TeeSink::send(const ResponseHead& head, std::string_view body) {
  copy_.head(head.status, head.content_type);
  copy_.body(body);
  const bool sent = co_await primary_.send(head, body);
  finish(sent);
  co_return sent;
}

Task<bool> TeeSink::start_stream(const ResponseHead& head) {
  copy_.head(head.status, head.content_type);
  const bool sent = co_await primary_.start_stream(head);
  if (!sent) finish(false);
  co_return sent;
}

Task<bool> TeeSink::send_chunk(std::span<const std::string_view> parts) {
  for (const std::string_view part : parts) copy_.body(part);
  const bool sent = co_await primary_.send_chunk(parts);
  if (!sent) finish(false);
  co_return sent;
}

Task<bool> TeeSink::end_stream() {
  const bool sent = co_await primary_.end_stream();
  finish(sent);
  co_return sent;
}

Task<bool> TeeSink::write_stream(const ResponseHead* head, std::span<const std::string_view> parts, bool last) {
  if (head) copy_.head(head->status, head->content_type);
  for (const std::string_view part : parts) copy_.body(part);
  const bool sent = co_await primary_.write_stream(head, parts, last);
  if (last || !sent) finish(sent);
  co_return sent;
}

}  // namespace arbiter
