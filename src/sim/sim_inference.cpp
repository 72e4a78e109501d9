// The OpenAI routes of SimEndpoint: faults, then the engine, then the answer
// streamed token by token as the engine's steps end (or whole at the end).
#include <chrono>
#include <limits>

#include "engine/generated_text.hpp"
#include "sim/sim_endpoint.hpp"
#include "sim/sim_text.hpp"

namespace arbiter::sim {

namespace {

std::string_view injected_message(int status) {
  switch (status) {
    case 429: return "rate limit exceeded (injected fault)";
    case 500: return "internal server error (injected fault)";
    default: return "service unavailable (injected fault)";
  }
}

std::int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string_view finish_reason(const SimRequest& r) { return r.finish_length ? "length" : "stop"; }

}  // namespace

Task<void> SimEndpoint::inference(Route route, HttpRequest& req, ClientConnection& conn) {
  const std::uint64_t n = requests_.fetch_add(1, std::memory_order_relaxed);
  metrics_.count_request();
  if (starting()) {
    metrics_.count_fault(InjectedFault::kSlowStart);
    SimError err{503, "the engine is starting (slow_start fault)", {}};
    co_await send_error(conn, err);
    co_return;
  }
  auto parsed = parse_sim_request(route, req.body(), limits_);
  if (!parsed) {
    co_await send_error(conn, parsed.error());
    co_return;
  }
  SimRequest& request = *parsed;
  const Faults faults = this->faults();
  const engine::RequestId id = driver_.next_id();
  const std::uint32_t crash_after =
      faults.crash_after_tokens > 0 && fault_hits(faults.crash_rate, seed_, index_, FaultKind::kCrash, n)
          ? faults.crash_after_tokens
          : 0;
  const net::any_io_executor executor = co_await net::this_coro::executor;
  const auto delivery = std::make_shared<Delivery>(executor, request.stream || crash_after > 0);
  delivery->finish_length = request.finish_length;
  // On the connection's strand, the moment the client goes: wake the
  // request and take it out of the engine at once.
  conn.set_abort_hook([this, id, d = delivery] {
    d->timer.cancel();
    driver_.abort(id);
  });

  if (faults.added_latency_ms > 0) {
    delivery->timer.expires_after(std::chrono::milliseconds(faults.added_latency_ms));
    co_await delivery->timer.async_wait(kAsTuple);
    if (conn.client_gone()) co_return;
  }
  if (fault_hits(faults.error_rate, seed_, index_, FaultKind::kError, n)) {
    metrics_.count_fault(InjectedFault::kError);
    SimError err{faults.error_status, std::string(injected_message(faults.error_status)), {}};
    co_await send_error(conn, err);
    co_return;
  }
  if (fault_hits(faults.hang_rate, seed_, index_, FaultKind::kHang, n)) {
    metrics_.count_fault(InjectedFault::kHang);
    driver_.park(id, delivery);
    while (!conn.client_gone() && !delivery->stopped.load()) co_await wait_for_wake(*delivery);
    conn.set_keep_alive(false);
    driver_.abort(id);
    co_return;
  }

  engine::SubmitRequest submit{.id = id,
                               .prompt_tokens = request.prompt_tokens,
                               .block_hashes = std::move(request.block_hashes),
                               .output_tokens = request.output_tokens,
                               .priority = request.priority};
  driver_.submit(std::move(submit), delivery);
  const std::uint64_t response_n = (std::uint64_t{index_} << 40) + id;
  bool answered = false;
  if (request.stream) {
    answered = co_await stream_answer(conn, request, *delivery, crash_after, response_n);
  } else {
    answered = co_await whole_answer(conn, request, *delivery, crash_after, response_n);
  }
  if (!answered) {
    conn.set_keep_alive(false);  // unanswered or cut: the connection goes too
    driver_.abort(id);
  }
}

Task<bool> SimEndpoint::stream_answer(ClientConnection& conn, const SimRequest& request, Delivery& delivery,
                                      std::uint32_t crash_after, std::uint64_t response_n) {
  http::response<http::empty_body> head{http::status::ok, 11};
  head.set(http::field::content_type, "text/event-stream");
  head.set(http::field::cache_control, "no-cache");
  if (!co_await conn.start_stream(head)) co_return false;

  const std::string id = response_id(request.route, seed_, response_n);
  const ChunkFormatter format(request.route, id, model_, unix_seconds(), request.include_usage);
  const std::uint32_t limit = crash_after > 0 ? crash_after : std::numeric_limits<std::uint32_t>::max();
  std::string events;               // the SSE events of one write, reused
  std::vector<std::size_t> ends;    // where each event ends in `events`
  std::vector<std::string_view> pieces;
  std::uint32_t sent = 0;
  for (;;) {
    take_wake(delivery);
    if (conn.client_gone() || delivery.stopped.load()) co_return false;
    const bool finished = delivery.finished.load(std::memory_order_acquire);
    const std::uint32_t ready = std::min(delivery.tokens.load(std::memory_order_relaxed), limit);
    if (finished && ready == 0) co_return false;  // the engine refused it: cut the stream
    if (ready > sent) {
      events.clear();
      ends.clear();
      if (sent == 0 && request.route == Route::kChatCompletions) {
        format.append_role_event(events);
        ends.push_back(events.size());
      }
      for (std::uint32_t i = sent; i < ready; ++i) {
        const bool last = i + 1 == request.output_tokens;
        format.append_token_event(events, engine::token_word(request.text_seed, request.text_offset + i),
                                  last ? finish_reason(request) : std::string_view{});
        ends.push_back(events.size());
      }
      const bool done = ready == request.output_tokens;
      if (done && request.include_usage) {
        format.append_usage_event(events, Usage{request.prompt_tokens, request.output_tokens});
        ends.push_back(events.size());
      }
      if (done) {
        events += ChunkFormatter::kDoneEvent;
        ends.push_back(events.size());
      }
      pieces.clear();
      std::size_t begin = 0;
      for (const std::size_t end : ends) {
        pieces.emplace_back(events.data() + begin, end - begin);
        begin = end;
      }
      if (!co_await conn.send_chunks(pieces)) co_return false;
      sent = ready;
      if (done) {
        co_await conn.end_stream();
        co_return true;
      }
      continue;
    }
    if (sent >= limit) {
      metrics_.count_fault(InjectedFault::kCrash);
      co_return false;  // the caller drops the connection: no final chunk, no [DONE]
    }
    co_await wait_for_wake(delivery);
  }
}

Task<bool> SimEndpoint::whole_answer(ClientConnection& conn, const SimRequest& request, Delivery& delivery,
                                     std::uint32_t crash_after, std::uint64_t response_n) {
  for (;;) {
    take_wake(delivery);
    if (conn.client_gone() || delivery.stopped.load()) co_return false;
    if (delivery.finished.load(std::memory_order_acquire)) break;
    if (crash_after > 0 && delivery.tokens.load(std::memory_order_relaxed) >= crash_after) {
      metrics_.count_fault(InjectedFault::kCrash);
      co_return false;  // the caller drops the connection unanswered
    }
    co_await wait_for_wake(delivery);
  }
  if (delivery.tokens.load(std::memory_order_relaxed) == 0) {
    SimError err{500, "the engine refused the request", {}};
    co_await send_error(conn, err);
    co_return true;
  }
  std::string text;
  text.reserve(std::size_t{request.output_tokens} * 4);
  for (std::uint32_t i = 0; i < request.output_tokens; ++i) {
    text += engine::token_word(request.text_seed, request.text_offset + i);
  }
  const std::string id = response_id(request.route, seed_, response_n);
  const ChunkFormatter format(request.route, id, model_, unix_seconds(), false);
  std::string body = format.whole_response(text, finish_reason(request),
                                           Usage{request.prompt_tokens, request.output_tokens});
  co_await send_body(conn, http::status::ok, std::move(body), "application/json");
  co_return true;
}

}  // namespace arbiter::sim
