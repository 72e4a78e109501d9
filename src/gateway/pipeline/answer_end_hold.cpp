#include "gateway/pipeline/answer_end_hold.hpp"

namespace arbiter {

AnswerEndHold::OwnedHead::OwnedHead(const ResponseHead& head)
    : status(head.status),
      content_type(head.content_type),
      cache_control(head.cache_control),
      upstream(head.upstream.begin(), head.upstream.end()),
      gateway(head.gateway.begin(), head.gateway.end()) {}

ResponseHead AnswerEndHold::OwnedHead::view() const {
  return {.status = status, .content_type = content_type, .cache_control = cache_control, .upstream = upstream,
          .gateway = gateway};
}

// The coroutines below return once, at their end, with no local declared
// after an earlier co_return: a first version that did crashed under GCC 12
// (locals it never built destroyed at the coroutine's end).

Task<bool> AnswerEndHold::send(http::response<http::string_body>& res) {
  bool ok = true;
  if (held_) ok = co_await release();
  if (ok && inner_.client_gone()) {
    ok = co_await inner_.send(res);  // no client to hold it for: as the connection answers
  } else if (ok) {
    held_ = std::make_unique<Held>(Held{.kind = Held::Kind::kResponse, .response = res, .head = {}, .body = {}});
  }
  co_return ok;
}

Task<bool> AnswerEndHold::send(const ResponseHead& head, std::string_view body) {
  bool ok = true;
  if (held_) ok = co_await release();
  if (ok && inner_.client_gone()) {
    ok = co_await inner_.send(head, body);
  } else if (ok) {
    held_ = std::make_unique<Held>(
        Held{.kind = Held::Kind::kWhole, .response = {}, .head = OwnedHead(head), .body = std::string(body)});
  }
  co_return ok;
}

Task<bool> AnswerEndHold::start_stream(const ResponseHead& head) {
  bool ok = true;
  if (held_) ok = co_await release();
  if (ok) ok = co_await inner_.start_stream(head);
  co_return ok;
}

Task<bool> AnswerEndHold::send_chunk(std::span<const std::string_view> parts) {
  bool ok = true;
  if (held_) ok = co_await release();
  if (ok) ok = co_await inner_.send_chunk(parts);
  co_return ok;
}

Task<bool> AnswerEndHold::end_stream() {
  bool ok = true;
  if (held_) ok = co_await release();
  if (ok && inner_.client_gone()) {
    ok = co_await inner_.end_stream();
  } else if (ok) {
    hold_stream_end(nullptr, {});
  }
  co_return ok;
}

Task<bool> AnswerEndHold::write_stream(const ResponseHead* head, std::span<const std::string_view> parts, bool last) {
  bool ok = true;
  if (held_) ok = co_await release();
  if (ok && (!last || inner_.client_gone())) {
    ok = co_await inner_.write_stream(head, parts, last);
  } else if (ok) {
    hold_stream_end(head, parts);
  }
  co_return ok;
}

void AnswerEndHold::hold_stream_end(const ResponseHead* head, std::span<const std::string_view> parts) {
  held_ = std::make_unique<Held>(Held{.kind = Held::Kind::kStreamEnd, .response = {}, .head = {}, .body = {}});
  if (head) held_->head.emplace(*head);
  for (const std::string_view part : parts) held_->body.append(part);
}

Task<bool> AnswerEndHold::release() {
  const std::unique_ptr<Held> held = std::move(held_);
  std::optional<ResponseHead> head;
  if (held && held->head) head = held->head->view();
  const ResponseHead* head_ptr = head ? &*head : nullptr;
  const std::string_view body = held ? std::string_view(held->body) : std::string_view();
  const std::size_t count = body.empty() ? 0 : 1;
  const std::span<const std::string_view> parts(&body, count);
  bool delivered = true;
  if (!held) {
    // nothing held
  } else if (held->kind == Held::Kind::kResponse) {
    delivered = co_await inner_.send(*held->response);
  } else if (held->kind == Held::Kind::kWhole) {
    delivered = co_await inner_.send(*head_ptr, body);
  } else {
    delivered = co_await inner_.write_stream(head_ptr, parts, true);
  }
  co_return delivered;
}

}  // namespace arbiter
