// Typing through: the stream handed to a heir, and taken up by one
// (upstream_exchange.hpp).
#include "gateway/relay/upstream_exchange.hpp"

namespace arbiter {

Task<void> UpstreamExchange::run_handed(UpstreamExchange self, HandedStream handed) {
  PooledConnection conn = std::move(handed.conn);
  if (!conn) {
    const auto executor = co_await net::this_coro::executor;
    conn.reset(new UpstreamConnection{.stream = Stream(handed.released.adopt(executor)),
                                      .buffer = std::move(handed.buffer),
                                      .head = {},
                                      .reused = false});
  }
  Stream& socket = conn->stream;
  const AbortHookGuard guard = self.arm_abort(socket);
  UpstreamResponseParser parser(std::move(handed.parser));
  self.outcome_.upstream_status = parser.status();
  self.drained_ = handed.drained;
  if (!self.typing_) self.typing_ = std::make_unique<Typing>();
  self.text_checkpoint() = std::move(handed.checkpoint);  // a whole answer's resume (run_inherited), or the typed text
  self.typing_->inherited.emplace(
      Inherited{.framer = std::move(handed.framer), .preamble = std::move(handed.preamble), .last = handed.last});
  if (self.r_.sink.client_gone()) co_return self.cancelled();
  if (self.r_.interrupt.requested) co_return self.interrupted();
  // if/else, not ?: around co_await (GCC 12, see docs/architecture.md).
  bool reusable = false;
  if (self.r_.resume && self.r_.resume->aggregate) {
    reusable = co_await self.relay_aggregate(socket, conn->buffer, parser);
  } else {
    reusable = co_await self.relay_stream(socket, conn->buffer, parser);
  }
  if (self.typing_->handed) co_return co_await self.hand_over(std::move(conn), std::move(parser));
  self.keep_if_reusable(conn, reusable);
}

void UpstreamExchange::keep_for_heir(std::size_t skip, std::size_t sent_text, SseFramer& framer, bool last) {
  const Checkpoint& own = text_checkpoint();
  const std::size_t from = std::min(skip, sent_text);
  std::string preamble;
  if (sent_text > from)
    preamble = completion_text_event(own, std::string_view(own.text).substr(from, sent_text - from));
  for (const std::string_view part : parts_) preamble.append(part);
  Checkpoint heir = own;
  heir.text.erase(0, std::min(skip, heir.text.size()));
  heir.runs = 1;
  heir.tokens_before_run = 0;
  heir.usage.reset();
  typing_->handed = Inherited{.framer = std::move(framer), .preamble = std::move(preamble), .last = last};
  typing_->heir_checkpoint = std::move(heir);
}

Task<void> UpstreamExchange::hand_over(PooledConnection conn, UpstreamResponseParser parser) {
  r_.sink.set_abort_hook(nullptr);
  r_.interrupt.hook = nullptr;
  HandedStream stream{.conn = nullptr,
                      .released = {},
                      .buffer = {},
                      .parser = std::move(parser),
                      .framer = std::move(typing_->handed->framer),
                      .checkpoint = std::move(typing_->heir_checkpoint),
                      .preamble = std::move(typing_->handed->preamble),
                      .last = typing_->handed->last,
                      .drained = drained_};
  typing_->handed.reset();
  tcp::socket& socket = conn->stream.socket();
  if (r_.typing->heir_on(context_of(socket.get_executor()))) {
    stream.conn = std::move(conn);
  } else {
    // Plain TCP (the claim refuses TLS across threads): the descriptor
    // leaves this thread's reactor for the heir's.
    beast::error_code ec;
    const bool ipv6 = socket.local_endpoint(ec).address().is_v6();
    stream.released = ReleasedSocket(socket.release(ec), ipv6);
    stream.buffer = std::move(conn->buffer);
    conn.reset();
  }
  r_.typing->hand(std::move(stream));
  outcome_.interrupted = true;
  outcome_.error = superseded_error();
  // A client that gets its answer whole has got nothing yet: the caller
  // answers it as any superseded request.
  if (!r_.resume || !r_.resume->aggregate) co_await end_stream_with_error(*outcome_.error);
}

}  // namespace arbiter
