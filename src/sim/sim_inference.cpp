// The OpenAI routes of SimEndpoint: faults, then the engine, then the answer
// streamed token by token as the engine's steps end (or whole at the end).
#include <chrono>
#include <limits>
#include <optional>

#include "engine/generated_text.hpp"
#include "sim/sim_endpoint.hpp"
#include "sim/sim_responses.hpp"
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

std::string_view finish_reason(const SimAnswer& a) { return a.finish_length ? "length" : "stop"; }

// An answer ended with no token: the engine refused it (it can never fit).
bool refused(Delivery& d) {
  for (std::uint32_t a = 0; a < d.answers; ++a) {
    AnswerProgress& p = d.answer(a);
    if (p.finished.load(std::memory_order_acquire) && p.tokens.load(std::memory_order_relaxed) == 0) return true;
  }
  return false;
}

Usage usage_of(const SimRequest& r) {
  Usage u;
  for (const SimPrompt& p : r.prompts) u.prompt_tokens += p.tokens;  // once each, whatever n
  for (const SimAnswer& a : r.answers) u.completion_tokens += a.output_tokens;
  return u;
}

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
  const auto answers = static_cast<std::uint32_t>(request.answers.size());
  // One engine request per answer (vLLM's parallel sampling); the first's
  // id also names the response.
  std::vector<engine::RequestId> ids(answers);
  for (engine::RequestId& each : ids) each = driver_.next_id();
  const engine::RequestId id = ids.front();
  const std::uint32_t crash_after =
      faults.crash_after_tokens > 0 && fault_hits(faults.crash_rate, seed_, index_, FaultKind::kCrash, n)
          ? faults.crash_after_tokens
          : 0;
  const net::any_io_executor executor = co_await net::this_coro::executor;
  const auto delivery = std::make_shared<Delivery>(executor, request.stream || crash_after > 0, answers);
  for (std::uint32_t i = 0; i < answers; ++i) delivery->answer(i).finish_length = request.answers[i].finish_length;
  const auto abort_all = [this, ids] {
    for (const engine::RequestId each : ids) driver_.abort(each);
  };
  // On the connection's strand, the moment the client goes: wake the
  // request and take it out of the engine at once.
  conn.set_abort_hook([abort_all, d = delivery] {
    d->timer.cancel();
    abort_all();
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

  for (std::uint32_t i = 0; i < answers; ++i) {
    const std::uint32_t p = request.answers[i].prompt;
    // A prompt's last answer takes its hashes, the others a copy.
    const bool last = i + 1 == answers || request.answers[i + 1].prompt != p;
    SimPrompt& prompt = request.prompts[p];
    engine::SubmitRequest submit{.id = ids[i],
                                 .prompt_tokens = prompt.tokens,
                                 .block_hashes = last ? std::move(prompt.block_hashes) : prompt.block_hashes,
                                 .output_tokens = request.answers[i].output_tokens,
                                 .priority = request.priority,
                                 .adapter = request.adapter};
    driver_.submit(std::move(submit), delivery, i);
  }
  const std::uint64_t response_n = (std::uint64_t{index_} << 40) + id;
  bool answered = false;
  if (request.stream) {
    answered = co_await stream_answer(conn, request, *delivery, crash_after, response_n);
  } else {
    answered = co_await whole_answer(conn, request, *delivery, crash_after, response_n);
  }
  if (!answered) {
    conn.set_keep_alive(false);  // unanswered or cut: the connection goes too
    abort_all();
  } else if (answers > 1) {
    abort_all();  // a refused answer's siblings still run (the others have left: no-ops)
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
  // The Responses API's events (one answer): their own frame, the whole
  // text again at the end, no [DONE]. Made for such a stream only.
  std::optional<ResponsesFormatter> typed;
  if (request.route == Route::kResponses) typed.emplace(id, model_, unix_seconds());
  std::string text;
  const std::uint32_t limit = crash_after > 0 ? crash_after : std::numeric_limits<std::uint32_t>::max();
  const auto answers = static_cast<std::uint32_t>(request.answers.size());
  std::string events;               // the SSE events of one write, reused
  std::vector<std::size_t> ends;    // where each event ends in `events`
  std::vector<std::string_view> pieces;
  std::vector<std::uint32_t> sent(answers, 0);  // tokens written, per answer
  for (;;) {
    take_wake(delivery);
    if (conn.client_gone() || delivery.stopped.load()) co_return false;
    events.clear();
    ends.clear();
    bool done = true, crashed = false;
    // Each answer's new tokens, answer by answer (as vLLM interleaves them
    // by step, a client tells them apart by index).
    for (std::uint32_t a = 0; a < answers; ++a) {
      const SimAnswer& answer = request.answers[a];
      AnswerProgress& progress = delivery.answer(a);
      const bool finished = progress.finished.load(std::memory_order_acquire);
      const std::uint32_t ready = std::min(progress.tokens.load(std::memory_order_relaxed), limit);
      if (finished && ready == 0) co_return false;  // the engine refused it: cut the stream
      if (ready > sent[a]) {
        if (sent[a] == 0 && request.route == Route::kChatCompletions) {
          format.append_role_event(events, a);
          ends.push_back(events.size());
        } else if (sent[a] == 0 && typed) {
          typed->append_prelude(events);
          ends.push_back(events.size());
        }
        for (std::uint32_t i = sent[a]; i < ready; ++i) {
          const bool last = i + 1 == answer.output_tokens;
          const std::string_view word = engine::token_word(answer.text_seed, request.text_offset + i);
          if (typed) {
            typed->append_delta(events, word);
            text += word;
          } else {
            format.append_token_event(events, a, word, last ? finish_reason(answer) : std::string_view{});
          }
          ends.push_back(events.size());
        }
        sent[a] = ready;
      }
      done = done && sent[a] == answer.output_tokens;
      crashed = crashed || (sent[a] >= limit && sent[a] < answer.output_tokens);
    }
    if (done && typed) {
      typed->append_closing(events, text, finish_reason(request.answers[0]), usage_of(request));
      ends.push_back(events.size());
    } else if (done && request.include_usage) {
      format.append_usage_event(events, usage_of(request));
      ends.push_back(events.size());
    }
    if (done && !typed) {
      events += ChunkFormatter::kDoneEvent;
      ends.push_back(events.size());
    }
    if (!ends.empty()) {
      pieces.clear();
      std::size_t begin = 0;
      for (const std::size_t end : ends) {
        pieces.emplace_back(events.data() + begin, end - begin);
        begin = end;
      }
      if (!co_await conn.send_chunks(pieces)) co_return false;
      if (done) {
        co_await conn.end_stream();
        co_return true;
      }
    }
    if (crashed) {
      metrics_.count_fault(InjectedFault::kCrash);
      co_return false;  // the caller drops the connection: no final chunk, no [DONE]
    }
    if (ends.empty()) co_await wait_for_wake(delivery);
  }
}

Task<bool> SimEndpoint::whole_answer(ClientConnection& conn, const SimRequest& request, Delivery& delivery,
                                     std::uint32_t crash_after, std::uint64_t response_n) {
  const auto answers = static_cast<std::uint32_t>(request.answers.size());
  for (;;) {
    take_wake(delivery);
    if (conn.client_gone() || delivery.stopped.load()) co_return false;
    if (delivery.all_finished() || refused(delivery)) break;
    for (std::uint32_t a = 0; a < answers && crash_after > 0; ++a) {
      if (delivery.answer(a).tokens.load(std::memory_order_relaxed) >= crash_after) {
        metrics_.count_fault(InjectedFault::kCrash);
        co_return false;  // the caller drops the connection unanswered
      }
    }
    co_await wait_for_wake(delivery);
  }
  if (refused(delivery)) {
    SimError err{500, "the engine refused the request", {}};
    co_await send_error(conn, err);
    co_return true;
  }
  std::vector<ChunkFormatter::Answer> texts(answers);
  for (std::uint32_t a = 0; a < answers; ++a) {
    const SimAnswer& answer = request.answers[a];
    texts[a].text.reserve(std::size_t{answer.output_tokens} * 4);
    for (std::uint32_t i = 0; i < answer.output_tokens; ++i) {
      texts[a].text += engine::token_word(answer.text_seed, request.text_offset + i);
    }
    texts[a].finish_reason = finish_reason(answer);
  }
  const std::string id = response_id(request.route, seed_, response_n);
  const ChunkFormatter format(request.route, id, model_, unix_seconds(), false);
  std::string body = request.route == Route::kResponses
                         ? ResponsesFormatter(id, model_, unix_seconds()).whole(texts[0].text, texts[0].finish_reason,
                                                                                usage_of(request))
                         : format.whole_response(texts, usage_of(request));
  co_await send_body(conn, http::status::ok, std::move(body), "application/json");
  co_return true;
}

}  // namespace arbiter::sim
