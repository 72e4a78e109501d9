#include "gateway/handler/dispatch_handler.hpp"

#include <algorithm>

#include <boost/json.hpp>

#include "core/client_hints.hpp"
#include "core/pricing.hpp"
#include "core/typing_through.hpp"
#include "gateway/handler/run_body.hpp"
#include "gateway/resilience/run_verdict.hpp"
#include "gateway/scheduler_setup.hpp"

namespace arbiter {

Task<void> DispatchHandler::run(RequestContext& ctx) {
  const RequestInfo& info = ctx.parsed.info;
  // A completion its client does not stream may still be typed through:
  // the engine streams it to the gateway, which sends it whole (the resume
  // path's aggregation), so the text generated so far is known.
  const bool typing = typing_eligible(ctx);
  if (typing && !info.stream) ctx.resume = ResumeMethod::kPromptAppend;
  // Client hints, bounded by the tenant here, where the class is final (the
  // traffic breaker may have moved the request to its degrade_class).
  const BoundHints hints = bound_client_hints(ctx.hints, config_.classes[ctx.cls].policy, ctx.tenant);
  count_hints(ctx, hints);
  const sched::Request queued{
      .pool = static_cast<sched::PoolId>(ctx.pool()),
      .klass = static_cast<sched::ClassId>(ctx.cls),
      .tenant = tenant_id(config_, ctx.tenant),
      .cost_tokens = info.cost_estimate(),
      .prompt_tokens = info.prompt_tokens_estimate,
      .deadline = std::nullopt,
      .ttft_slo = hints.ttft,
      .supersede_key = ctx.supersede_key,
      .resumable = ctx.resume != ResumeMethod::kNone,
      .prefix_blocks = ctx.prefix,
      // n answers (times a batch's prompts) are that many engine sequences.
      .sequences = static_cast<uint32_t>(std::min<int64_t>(info.choices, sched::kMaxSlotsPerRequest))};
  const auto enqueued = std::chrono::steady_clock::now();
  std::shared_ptr<TypingOffer> offer;
  if (typing) offer = co_await typing_offer(ctx);
  const TypingOfferClose offer_closed{offer.get()};  // whatever way its runs end
  auto slot = co_await dispatcher_.acquire(queued, *ctx.sink, offer);
  // Queue time from enqueue, not from request start (auth and parsing
  // are not queueing); the scheduler's own figure once dispatched.
  ctx.rec.queue_ms = RequestContext::millis(slot ? slot->queue_wait() : std::chrono::steady_clock::now() - enqueued);
  if (slot && slot->waited_for() != sched::WaitReason::kNone) {
    ctx.rec.wait_reason = sched::wait_reason_name(slot->waited_for());
  }
  if (!slot) {
    ctx.outcome.error = slot.error();
    if (ctx.sink->client_gone()) ctx.outcome.status = 499;  // left while queued: nothing to send
    co_return;
  }
  ctx.dispatch_queue_ms = ctx.rec.queue_ms;  // observed after the response: not on its path
  ctx.rec.engine_ms = 0;
  health_.on_request(ctx.pool());
  bool inherited = false;
  if (slot->inherited_from()) {
    inherited = co_await run_inherited(ctx, *slot, offer.get());
  } else if (const auto typing = slot->typing_outcome()) {
    count_typing(ctx, *typing);  // the older request was interrupted
  }
  if (!inherited) co_await run_upstream(ctx, *slot, offer.get(), hints.priority);
  // Fairness and shares are charged with what the request really cost:
  // the engine's usage, or for a stream without it the tokens counted from
  // its events (prompt still estimated).
  const Usage usage = ctx.outcome.usage.value_or(Usage{});
  if (const auto used = ctx.outcome.used_tokens(info.prompt_tokens_estimate)) slot->set_actual_tokens(*used);
  if (ctx.outcome.usage) {
    ctx.rec.prompt_tokens = usage.prompt_tokens;
    ctx.rec.completion_tokens = usage.completion_tokens;
    ctx.rec.cached_tokens = usage.cached_tokens;
  }
  // The bill: the tokens the engine reported (none: no token cost) and the
  // time the request held an engine.
  if (const auto& price = config_.models[ctx.pool()].price) {
    ctx.rec.cost = request_cost(*price, usage, ctx.rec.engine_ms / 1000);
  }
}

void DispatchHandler::release_body(RequestContext& ctx) {
  if (ctx.body_released) return;
  ctx.body_released = true;
  metrics_.request_body_bytes.sub(static_cast<double>(ctx.rec.bytes_in));
  ctx.parsed.release_body();
}

void DispatchHandler::count_hints(RequestContext& ctx, const BoundHints& hints) {
  std::string clamped;  // the answer says which hints its tenant's bounds changed: not silent
  const auto count = [&](std::string_view hint, bool sent, bool was_clamped) {
    if (!sent) return;
    metrics_.client_hints.with({hint, was_clamped ? "clamped" : "used"}).inc();
    if (was_clamped) clamped.append(clamped.empty() ? "" : ", ").append(hint);
  };
  count("priority", ctx.hints.priority.has_value(), hints.priority_clamped);
  count("ttft", ctx.hints.ttft.has_value(), hints.ttft_clamped);
  if (!clamped.empty()) ctx.response_headers.emplace_back("x-arbiter-hints-clamped", std::move(clamped));
}

void DispatchHandler::count_typing(const RequestContext& ctx, TypingOutcome outcome) {
  metrics_.typing_through.with({config_.classes[ctx.cls].name, std::string(typing_outcome_name(outcome))}).inc();
}

bool DispatchHandler::typing_eligible(const RequestContext& ctx) const {
  return config_.classes[ctx.cls].policy.typing_through && !ctx.supersede_key.empty() &&
         ctx.parsed.info.route == Route::kCompletions &&
         resume_method(ctx.parsed, false) == ResumeMethod::kPromptAppend;
}

Task<std::shared_ptr<TypingOffer>> DispatchHandler::typing_offer(const RequestContext& ctx) {
  const RequestInfo& info = ctx.parsed.info;
  const boost::json::object& body = ctx.parsed.body();
  const auto executor = co_await net::this_coro::executor;
  co_return std::make_shared<TypingOffer>(std::string(body.at("prompt").as_string()), info.model,
                                          info.max_tokens.value_or(-1), typing::sampling_text(body), info.stream,
                                          &net::query(executor, net::execution::context), executor);
}

void DispatchHandler::set_run_headers(RequestContext& ctx, const BackendConfig& backend, std::size_t own_headers,
                                      uint32_t retries) const {
  const AccessRecord& rec = ctx.rec;
  RequestContext::Headers& headers = ctx.response_headers;
  headers.resize(own_headers);
  headers.emplace_back("x-arbiter-class", rec.cls);
  headers.emplace_back("x-arbiter-backend", backend.name);
  headers.emplace_back("x-arbiter-queue-ms", std::to_string(static_cast<int64_t>(rec.queue_ms)));
  if (!rec.wait_reason.empty()) headers.emplace_back("x-arbiter-wait-reason", std::string(rec.wait_reason));
  headers.emplace_back("x-arbiter-preemptions", std::to_string(rec.preemptions));
  if (retries > 0) headers.emplace_back("x-arbiter-retries", std::to_string(retries));
}

namespace {

std::string upstream_run_id(std::string_view request_id, uint32_t earlier_runs) {
  // The first run is sent under the request's own id (the client's, when it
  // gave one), so engine logs match the access log; a retry or a resumed run
  // after a preemption gets "-2", "-3"..., because an engine that keys its
  // requests by x-request-id (vLLM with --enable-request-id-headers, before
  // vllm#27987) refuses an id still running there with 400, and an aborted
  // run may still be when the next one arrives on the same engine.
  if (earlier_runs == 0) return std::string(request_id);
  return std::string(request_id) + "-" + std::to_string(earlier_runs + 1);
}

}  // namespace

Task<bool> DispatchHandler::run_inherited(RequestContext& ctx, Dispatcher::Slot& slot, TypingOffer* offer) {
  std::optional<HandedStream> handed = co_await slot.inherited_from()->receive(*ctx.sink);
  count_typing(ctx, handed ? TypingOutcome::kHandedOver : TypingOutcome::kLost);
  if (!handed) co_return false;  // it runs anew on the slot it holds
  release_body(ctx);  // never sent: the request is the one already running
  ModelPool& pool = *pools_[slot.pool()];
  const BackendConfig& backend = pool.backend(slot.backend());
  ctx.rec.backend = backend.name;
  set_run_headers(ctx, backend, ctx.response_headers.size(), 0);
  // Nothing goes upstream: the request is the one already running there.
  const UpstreamRequest up{.target = route_path(ctx.route),
                           .host = pool.upstream(slot.backend()).host_header(),
                           .request_id = ctx.rec.request_id,
                           .accept = {},
                           .body = {},
                           .authorization = backend.authorization,
                           .forwarded = {}};
  Interrupt interrupt;
  slot.set_interrupt_hook([&interrupt, &slot] { interrupt.fire(slot.preempted(), slot.interrupt_error()); });
  // A client that does not stream gets the generation whole at its end.
  std::optional<RelayResume> whole;
  if (!ctx.parsed.info.stream) whole.emplace(RelayResume{.route = ctx.route, .aggregate = true});
  const RelayRequest relay_request{.pool = pool.upstream(slot.backend()),
                                   .upstream_request = up,
                                   .sink = *ctx.sink,
                                   .deadline = ctx.conn.deadline(),
                                   .timeouts = config_.timeouts,
                                   .limits = config_.limits,
                                   .response_headers = ctx.response_headers,
                                   .interrupt = interrupt,
                                   .resume = whole ? &*whole : nullptr,
                                   .on_first_event = {},
                                   .on_stream_started = [&ctx] { ctx.answer_started(); },
                                   .hold_failures = false,
                                   .typing = offer};
  const auto started = std::chrono::steady_clock::now();
  RelayOutcome& outcome = ctx.outcome;
  co_await relay_handed_over(relay_request, std::move(*handed), outcome);
  ctx.rec.engine_ms += RequestContext::millis(std::chrono::steady_clock::now() - started);
  if (whole) {
    outcome.usage = whole->checkpoint.usage;
    outcome.generated = whole->checkpoint.tokens;
  }
  slot.set_interrupt_hook(nullptr);
  health_.record(slot.pool(), slot.backend(), judge(outcome), outcome.upstream_retry_after);
  co_return true;
}

Task<void> DispatchHandler::run_upstream(RequestContext& ctx, Dispatcher::Slot& slot, TypingOffer* offer,
                                         std::optional<int> priority) {
  const Route route = ctx.route;
  RelayOutcome& outcome = ctx.outcome;  // each run's, written by relay()
  AccessRecord& rec = ctx.rec;
  RequestContext::Headers& headers = ctx.response_headers;
  ResponseSink& sink = *ctx.sink;
  const RequestInfo& info = ctx.parsed.info;
  // The engine orders its own queue the way the gateway does: `priority`,
  // the class's or the request's own (x-priority, bounded).
  const int engine_priority = priority.value_or(slot.engine_priority());
  std::optional<RelayResume> resume;
  if (ctx.resume != ResumeMethod::kNone) {
    resume.emplace();
    resume->route = route;
    resume->aggregate = !info.stream;
  }
  const std::size_t own_headers = headers.size();  // x-request-id
  // The client's end-to-end headers (trace context, custom ones) go to the
  // engine with every run; views into the request.
  std::vector<std::pair<std::string_view, std::string_view>> forwarded;
  ctx.req.end_to_end(forwarded);
  uint32_t retries = 0;  // runs after failed ones
  // vLLM's own request_id body field keys the request inside the engine as
  // x-request-id does: later runs carry theirs with the same suffix. Read
  // from the document at the first later run (not before: the document is
  // parsed only for the paths that rewrite the body).
  std::optional<std::string> body_request_id;
  bool body_request_id_read = false;
  // What a run again costs the scheduler: the prompt, the output so far (a
  // continuation reads it again) and what is left of the token budget.
  const auto remaining_cost = [&] {
    const int64_t generated = resume ? resume->checkpoint.tokens : 0;
    const int64_t left = std::max<int64_t>(info.max_tokens.value_or(kDefaultOutputEstimate) - generated, 1);
    const int64_t so_far = info.prompt_tokens_estimate + generated;
    return left > INT64_MAX - so_far ? INT64_MAX : so_far + left;  // max_tokens may be 2^63 - 1
  };
  for (;;) {
    ModelPool& pool = *pools_[slot.pool()];  // its own, or a pool lending it a slot
    const BackendConfig& backend = pool.backend(slot.backend());
    rec.backend = backend.name;
    set_run_headers(ctx, backend, own_headers, retries);

    const uint32_t earlier_runs = retries + rec.preemptions;
    const std::string run_id = upstream_run_id(rec.request_id, earlier_runs);
    if (earlier_runs > 0 && !body_request_id_read) {
      body_request_id_read = true;
      if (const auto* id = ctx.parsed.body().if_contains("request_id"); id && id->is_string()) {
        body_request_id.emplace(id->get_string());
      }
    }
    const bool new_body_id = earlier_runs > 0 && body_request_id;
    UpstreamRequest up{.target = route_path(route),
                       .host = pool.upstream(slot.backend()).host_header(),
                       .request_id = run_id,
                       .accept = ctx.req["accept"],
                       .body = {},
                       .authorization = backend.authorization,
                       .forwarded = forwarded};
    if (resume) resume->checkpoint.begin_run();
    // A stream whose client did not ask for usage asks for it here, and its
    // relay keeps the usage chunk from the client (core/stream_usage.hpp).
    const bool ask_usage = ctx.parsed.info.stream && !ctx.parsed.info.include_usage && backend.stream_usage;
    std::string rewritten;  // the body sent when it is serialised from the document
    build_run_body(ctx.parsed,
                   {.priority_engine = backend.priority_scheduling ? std::optional(backend.engine) : std::nullopt,
                    .engine_priority = engine_priority,
                    .request_id = new_body_id ? std::optional(upstream_run_id(*body_request_id, earlier_runs))
                                              : std::nullopt,
                    .ask_usage = ask_usage,
                    .resume_method = ctx.resume,
                    .checkpoint = resume ? &resume->checkpoint : nullptr,
                    .aggregate = resume && resume->aggregate},
                   up, rewritten);

    Interrupt interrupt;
    slot.set_interrupt_hook([&interrupt, &slot] { interrupt.fire(slot.preempted(), slot.interrupt_error()); });
    const sched::AdaptiveCapacityConfig& capacity = config_.adaptive_capacity_of(slot.pool());
    const bool adaptive = capacity.enabled;  // its relay counts gaps
    const sched::ClassPolicy& policy = config_.classes[ctx.cls].policy;
    const auto first_token_bound = policy.background ? std::chrono::steady_clock::duration::zero()
                                                     : std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                           policy.ttft_slo * capacity.ttft_headroom);
    const RelayRequest relay_request{.pool = pool.upstream(slot.backend()),
                                     .upstream_request = up,
                                     .sink = sink,
                                     .deadline = ctx.conn.deadline(),
                                     .timeouts = config_.timeouts,
                                     .limits = config_.limits,
                                     .response_headers = headers,
                                     .interrupt = interrupt,
                                     .resume = resume ? &*resume : nullptr,
                                     .on_first_event = backend.prefill_tokens_per_s > 0
                                                           ? std::function<void()>([&slot] { slot.first_token(); })
                                                           : std::function<void()>(),
                                     .on_stream_started =
                                         [this, &ctx, &rewritten, resumable = resume.has_value()] {
                                           ctx.answer_started();
                                           // The client has a byte: no retry or failover sends the
                                           // body again, and only a resumable request runs again.
                                           if (!resumable) {
                                             release_body(ctx);
                                             std::string().swap(rewritten);
                                           }
                                         },
                                     .hold_failures = retries < health_.max_retries(),
                                     .typing = offer,
                                     .gaps = adaptive ? &pool.gaps(slot.backend()) : nullptr,
                                     .first_token_bound = first_token_bound,
                                     .hide_usage_chunk = ask_usage};
    const auto sent = std::chrono::steady_clock::now();
    co_await relay(relay_request, outcome);
    rec.engine_ms += RequestContext::millis(std::chrono::steady_clock::now() - sent);
    slot.set_interrupt_hook(nullptr);
    const RunVerdict verdict = judge(outcome);
    health_.record(slot.pool(), slot.backend(), verdict, outcome.upstream_retry_after);
    // Nothing reached the client (or a resumable stream is still open): the
    // request may run again elsewhere.
    // (A resumed run that failed before its first byte leaves its stream open too.)
    const bool unsent = outcome.held || outcome.stream_open || (outcome.status == 0 && outcome.error);
    // An engine's 429 goes to another backend, never back to the one that
    // refused for load: with one backend it is the client's answer.
    const bool retryable = verdict == RunVerdict::kFailure ||
                           (verdict == RunVerdict::kOverloaded && pool.backend_count() > 1);
    if (!outcome.preempted && unsent) {
      const bool failover = resume && resume->client_stream_started;
      if (retryable && co_await may_run_again(ctx, failover, retries)) {
        auto requeued = co_await slot.retry(remaining_cost(), sink);
        if (requeued) {
          rec.queue_ms += RequestContext::millis(slot.queue_wait());
          continue;
        }
        outcome.error = std::move(requeued.error());
        outcome.held.reset();
      }
      co_await give_up(ctx, resume ? &*resume : nullptr);
    }
    if (!outcome.preempted) {
      // A resumable request's usage is counted over all its runs.
      if (resume) {
        outcome.usage = resume->checkpoint.usage;
        outcome.generated = resume->checkpoint.tokens;
      }
      co_return;
    }

    // Preempted: queue again, charged for what is left, and continue from
    // the checkpoint when dispatched.
    ++rec.preemptions;
    auto requeued = co_await slot.requeue(remaining_cost(), sink);
    if (!requeued) {
      outcome = RelayOutcome{.stream = outcome.stream, .error = std::move(requeued.error())};
      if (sink.client_gone()) {
        outcome.status = 499;
      } else if (resume->client_stream_started) {
        co_await end_stream_with_error(sink, *outcome.error);
        outcome.status = sink.client_gone() ? 499 : 200;
      }
      co_return;
    }
    rec.queue_ms += RequestContext::millis(slot.queue_wait());
  }
}

Task<bool> DispatchHandler::may_run_again(RequestContext& ctx, bool failover, uint32_t& retries) {
  const std::string& pool = config_.models[ctx.pool()].pool_name();
  if (retries >= health_.max_retries()) {
    metrics_.retries.with({pool, "exhausted"}).inc();
    co_return false;
  }
  // A failover continues a stream the client already has, at most
  // max_retries times: outside the budget, which bounds the extra load of
  // retrying requests that have nothing yet. (With the budget, a crash of
  // an engine holding over a tenth of a pool's streams cut the rest.)
  if (!failover && !health_.try_retry(ctx.pool())) {
    metrics_.retries.with({pool, "refused_budget"}).inc();
    co_return false;
  }
  ++retries;
  metrics_.retries.with({pool, failover ? "failover" : "retry"}).inc();
  net::steady_timer backoff(co_await net::this_coro::executor);
  backoff.expires_after(health_.backoff(ctx.pool(), retries));
  co_await backoff.async_wait(kAsTuple);
  co_return !ctx.sink->client_gone();
}

Task<void> DispatchHandler::give_up(RequestContext& ctx, const RelayResume* resume) {
  RelayOutcome& outcome = ctx.outcome;
  ResponseSink& sink = *ctx.sink;
  if (sink.client_gone()) {
    outcome.status = 499;
    co_return;
  }
  if (outcome.held) {
    // The engine's own answer, as it would have gone without retries.
    const HeldResponse held = std::move(*outcome.held);
    outcome.held.reset();
    outcome.error.reset();
    const ResponseHead head{.status = held.status,
                            .content_type = held.content_type,
                            .cache_control = {},
                            .upstream = held.headers,
                            .gateway = ctx.response_headers};
    outcome.status = co_await sink.send(head, held.body) ? static_cast<int>(held.status) : 499;
    co_return;
  }
  if (outcome.stream_open || (resume && resume->client_stream_started)) {
    // The client has a stream: it ends with the error event.
    outcome.stream_open = false;
    co_await end_stream_with_error(sink, *outcome.error);
    outcome.status = sink.client_gone() ? 499 : 200;
    outcome.stream = true;
  }
}

}  // namespace arbiter
