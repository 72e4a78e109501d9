#include "gateway/batch/line_client.hpp"

#include <charconv>

#include "http/head_scan.hpp"

namespace arbiter::batch {

namespace {

std::optional<std::chrono::seconds> seconds_of(std::string_view value) {
  int64_t s = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), s);
  if (ec != std::errc{} || end != value.data() + value.size() || s < 0) return std::nullopt;
  return std::chrono::seconds(s);
}

}  // namespace

void LineClient::take_head(unsigned status, HeaderPairs upstream, HeaderPairs gateway) {
  status_ = status;
  body_.clear();
  for (const HeaderPairs pairs : {upstream, gateway}) {
    for (const auto& [name, value] : pairs) {
      if (lower_equals(name, "x-request-id")) request_id_ = value;
      if (lower_equals(name, "retry-after")) retry_after_ = seconds_of(value);
    }
  }
}

void LineClient::take_body(std::string_view part) {
  if (!part.empty() && !first_byte_) first_byte_ = std::chrono::steady_clock::now();
  body_.append(part);
}

Task<bool> LineClient::send(http::response<http::string_body>& res) {
  status_ = res.result_int();
  body_.clear();
  if (auto id = res.find("x-request-id"); id != res.end()) request_id_ = std::string(id->value());
  if (auto retry = res.find(http::field::retry_after); retry != res.end()) retry_after_ = seconds_of(retry->value());
  take_body(res.body());
  co_return !gone_;
}

Task<bool> LineClient::send(const ResponseHead& head, std::string_view body) {
  take_head(head.status, head.upstream, head.gateway);
  take_body(body);
  co_return !gone_;
}

Task<bool> LineClient::start_stream(const ResponseHead& head) {
  take_head(head.status, head.upstream, head.gateway);
  co_return !gone_;
}

Task<bool> LineClient::send_chunk(std::span<const std::string_view> parts) {
  for (const std::string_view part : parts) take_body(part);
  co_return !gone_;
}

Task<bool> LineClient::end_stream() { co_return !gone_; }

void LineClient::cancel() {
  if (gone_) return;
  gone_ = true;
  if (auto hook = std::move(hook_)) hook();
}

}  // namespace arbiter::batch
