#include "gateway/stages/rollout/copy_sink.hpp"

namespace arbiter {

void CopySink::copy(std::string_view bytes) {
  if (cut_) return;
  if (body_.size() + bytes.size() > kMaxCopy) {
    cut_ = true;
    body_.clear();
    body_.shrink_to_fit();
    return;
  }
  body_.append(bytes);
}

Task<bool> CopySink::send(http::response<http::string_body>& res) {
  status_ = res.result_int();
  copy(res.body());
  co_return co_await client_.send(res);
}

Task<bool> CopySink::send(const ResponseHead& head, std::string_view body) {
  status_ = head.status;
  copy(body);
  co_return co_await client_.send(head, body);
}

Task<bool> CopySink::start_stream(const ResponseHead& head) {
  status_ = head.status;
  co_return co_await client_.start_stream(head);
}

Task<bool> CopySink::send_chunk(std::span<const std::string_view> parts) {
  for (const std::string_view p : parts) copy(p);
  co_return co_await client_.send_chunk(parts);
}

Task<bool> CopySink::end_stream() { co_return co_await client_.end_stream(); }

Task<bool> CopySink::write_stream(const ResponseHead* head, std::span<const std::string_view> parts, bool last) {
  if (head) status_ = head->status;
  for (const std::string_view p : parts) copy(p);
  co_return co_await client_.write_stream(head, parts, last);
}

}  // namespace arbiter
