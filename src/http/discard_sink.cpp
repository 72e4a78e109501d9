#include "http/discard_sink.hpp"

namespace arbiter {

Task<bool> DiscardSink::send(http::response<http::string_body>& res) {
  status_ = res.result_int();
  bytes_ += res.body().size();
  ended_ = true;
  co_return !gone_;
}

Task<bool> DiscardSink::send(const ResponseHead& head, std::string_view body) {
  status_ = head.status;
  bytes_ += body.size();
  ended_ = true;
  co_return !gone_;
}

Task<bool> DiscardSink::start_stream(const ResponseHead& head) {
  status_ = head.status;
  co_return !gone_;
}

Task<bool> DiscardSink::send_chunk(std::span<const std::string_view> parts) {
  for (const std::string_view part : parts) bytes_ += part.size();
  co_return !gone_;
}

Task<bool> DiscardSink::end_stream() {
  ended_ = true;
  co_return !gone_;
}

void DiscardSink::abandon() {
  gone_ = true;
  if (auto hook = std::move(hook_)) hook();
}

}  // namespace arbiter
