#include "gateway/error_response.hpp"

namespace arbiter {

namespace {

// The SSE event that ends a broken stream: the OpenAI SDKs raise it as an
// APIError instead of waiting for [DONE].
std::string error_event(const ApiError& e) { return "data: " + error_body(e) + "\n\n"; }

}  // namespace

Task<bool> send_error(ResponseSink& sink, const ApiError& error,
                      const std::vector<std::pair<std::string, std::string>>& headers) {
  http::response<http::string_body> res{static_cast<http::status>(error.status()), 11};
  res.set(http::field::content_type, "application/json");
  for (const auto& [name, value] : headers) res.set(name, value);
  if (auto wait = error.effective_retry_after()) {
    res.set(http::field::retry_after, retry_after_seconds(*wait));
    res.set("retry-after-ms", std::to_string(wait->count()));
  }
  // A superseded request must not come back: the OpenAI SDKs retry 409 unless told not to.
  if (error.code == ErrorCode::kSuperseded) res.set("x-should-retry", "false");
  res.body() = error_body(error);
  co_return co_await sink.send(res);
}

Task<void> end_stream_with_error(ResponseSink& sink, const ApiError& error) {
  // An unfinished event is dropped: half a JSON object helps nobody.
  const std::string event = error_event(error);
  const std::string_view piece = event;
  sink.set_keep_alive(false);
  co_await sink.write_stream(nullptr, std::span(&piece, 1), true);
}

}  // namespace arbiter
