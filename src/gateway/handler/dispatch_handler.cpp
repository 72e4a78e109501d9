#include "gateway/handler/dispatch_handler.hpp"


#include <algorithm>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "core/client_hints.hpp"
#include "core/pricing.hpp"
#include "core/typing_through.hpp"
#include "gateway/handler/run_policy.hpp"
#include "gateway/observers/tracing/trace_slot.hpp"
#include "gateway/observers/tracing/tracing_observer.hpp"
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
  const sched::Request queued = scheduled(ctx, hints);
  const auto enqueued = std::chrono::steady_clock::now();
  std::shared_ptr<TypingOffer> offer;
  if (typing) offer = co_await typing_offer(ctx);
  const TypingOfferClose offer_closed{offer.get()};  // whatever way its runs end
  auto slot = co_await dispatcher_.acquire(queued, *ctx.sink, epoch_, offer, ctx.rec.request_id);
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
    ctx.decisions.emplace_back("inherited", fmt::format("from={}", slot->inherited_id()));
    inherited = co_await run_inherited(ctx, *slot, offer.get());
  } else if (const auto typing = slot->typing_outcome()) {
    count_typing(ctx, *typing);  // the older request was interrupted
  }
  if (!inherited) co_await run_upstream(ctx, *slot, offer.get(), hints.priority);
  settle(ctx, *slot);
}

sched::Request DispatchHandler::scheduled(const RequestContext& ctx, const BoundHints& hints) const {
  const RequestInfo& info = ctx.parsed.info;
  return {.pool = static_cast<sched::PoolId>(ctx.pool()),
          .klass = static_cast<sched::ClassId>(ctx.cls),
          .tenant = tenant_id(config_, ctx.tenant),
          .cost_tokens = info.cost_estimate(),
          .prompt_tokens = info.prompt_tokens_estimate,
          .deadline = ctx.conn.start_by(),
          .ttft_slo = hints.ttft,
          .supersede_key = ctx.supersede_key,
          .resumable = ctx.resume != ResumeMethod::kNone,
          .prefix_blocks = ctx.prefix,
          // n answers (times a batch's prompts) are that many engine sequences.
          .sequences = static_cast<uint32_t>(std::min<int64_t>(info.choices, sched::kMaxSlotsPerRequest)),
          .adapter = ctx.adapter};
}

void DispatchHandler::settle(RequestContext& ctx, Dispatcher::Slot& slot) const {
  // Fairness and shares, the usage ledger (from the access record) and the
  // quota are charged one figure: what the request is billed.
  ctx.bill = ctx.billed();
  const std::optional<RelayOutcome::Billed>& billed = ctx.bill;
  const Usage usage = billed ? billed->usage : Usage{};
  if (billed) {
    slot.set_actual_tokens(billed->total());
    ctx.rec.prompt_tokens = usage.prompt_tokens;
    ctx.rec.completion_tokens = usage.completion_tokens;
    ctx.rec.cached_tokens = usage.cached_tokens;
    ctx.rec.tokens_from = billed_from_name(billed->from);
  }
  // The bill: its tokens (none: no token cost) and the time the request
  // held an engine.
  if (const auto& price = config_.models[ctx.pool()].price) {
    ctx.rec.cost = request_cost(*price, usage, ctx.rec.engine_ms / 1000);
  }
}

void DispatchHandler::note_placement(RequestContext& ctx, const Dispatcher::Slot& slot) const {
  ctx.placement.reason = sched::placement_name(slot.placement());
  ctx.placement.prefix_blocks = slot.prefix_blocks();
  ctx.placement.borrowed_from.clear();
  // The slot's numbers are its generation's: after a reload, by name.
  const Config& run_config = slot.generation().config();
  const bool borrowed = &run_config == &config_
                            ? slot.pool() != ctx.pool()
                            : run_config.models[slot.pool()].pool_name() != config_.models[ctx.pool()].pool_name();
  if (borrowed) ctx.placement.borrowed_from = run_config.models[slot.pool()].pool_name();
  if (ctx.adapter != 0) {
    metrics_.lora_dispatches.with({config_.models[ctx.pool()].name, ctx.parsed.info.model, ctx.placement.reason})
        .inc();
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

Task<bool> DispatchHandler::run_inherited(RequestContext& ctx, Dispatcher::Slot& slot, TypingOffer* offer) {
  std::optional<HandedStream> handed = co_await slot.inherited_from()->receive(*ctx.sink);
  count_typing(ctx, handed ? TypingOutcome::kHandedOver : TypingOutcome::kLost);
  if (!handed) co_return false;  // it runs anew on the slot it holds
  release_body(ctx);  // never sent: the request is the one already running
  ModelPool& pool = slot.generation().pool(slot.pool());
  const BackendConfig& backend = pool.backend(slot.backend());
  ctx.rec.backend = backend.name;
  note_placement(ctx, slot);
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
  slot.generation().health().record(slot.pool(), slot.backend(), judge(outcome), outcome.upstream_retry_after);
  co_return true;
}

Task<void> DispatchHandler::run_upstream(RequestContext& ctx, Dispatcher::Slot& slot, TypingOffer* offer,
                                         std::optional<int> priority) {
  RelayOutcome& outcome = ctx.outcome;  // each run's, written by relay()
  std::optional<RelayResume> resume;
  if (ctx.resume != ResumeMethod::kNone)
    resume.emplace(RelayResume{.route = ctx.route, .aggregate = !ctx.parsed.info.stream});
  Runs runs{.ctx = ctx,
            .requests = RunRequestBuilder(ctx.parsed, ctx.req, ctx.rec.request_id, ctx.route),
            .resume = resume ? &*resume : nullptr,
            .own_headers = ctx.response_headers.size(),  // x-request-id
            // The engine orders its own queue the way the gateway does: the
            // class's priority or the request's own (x-priority, bounded).
            .engine_priority = priority.value_or(slot.engine_priority())};
  for (;;) {
    RunCall call;  // in this frame: the relay reads it while it runs
    prepare_run(slot, offer, runs, call);
    const auto sent = std::chrono::steady_clock::now();
    co_await relay(*call.relay, outcome);
    const RunVerdict verdict = end_run(ctx, slot, sent);
    switch (after_run(outcome, verdict, slot.generation().pool(slot.pool()).backend_count())) {
      case AfterRun::kRequeue:
        if (!co_await requeue_preempted(slot, runs)) co_return;
        continue;
      case AfterRun::kRunAgain:
        if (co_await run_again(slot, runs)) continue;
        [[fallthrough]];
      case AfterRun::kGiveUp:
        co_await give_up(ctx, runs.resume);
        [[fallthrough]];
      case AfterRun::kFinish:
        // A resumable request's usage is counted over all its runs.
        if (resume) {
          outcome.usage = resume->checkpoint.usage;
          outcome.generated = resume->checkpoint.tokens;
        }
        co_return;
    }
  }
}

void DispatchHandler::prepare_run(Dispatcher::Slot& slot, TypingOffer* offer, Runs& runs, RunCall& call) {
  RequestContext& ctx = runs.ctx;
  ModelPool& pool = slot.generation().pool(slot.pool());  // its own, or a pool lending it a slot
  const BackendConfig& backend = pool.backend(slot.backend());
  ctx.rec.backend = backend.name;
  // A traced request: the attempt's span, named in the engine's traceparent.
  if (auto* trace = ctx.slots.get<TraceSlot>()) runs.requests.set_traceparent(trace->begin_attempt(backend.name, trace_random()));
  note_placement(ctx, slot);
  set_run_headers(ctx, backend, runs.own_headers, runs.retries);
  RelayResume* resume = runs.resume;
  if (resume) resume->checkpoint.begin_run();
  const bool ask_usage = asks_usage(ctx.parsed.info, backend);
  call.up =
      runs.requests.build(pool.upstream(slot.backend()).host_header(), backend, runs.retries + ctx.rec.preemptions,
                          {.engine_priority = runs.engine_priority,
                           .ask_usage = ask_usage,
                           .resume_method = ctx.resume,
                           .checkpoint = resume ? &resume->checkpoint : nullptr,
                           .aggregate = resume && resume->aggregate});
  slot.set_interrupt_hook([&call, &slot] { call.interrupt.fire(slot.preempted(), slot.interrupt_error()); });
  const sched::AdaptiveCapacityConfig& capacity = slot.generation().config().adaptive_capacity_of(slot.pool());
  const sched::ClassPolicy& policy = config_.classes[ctx.cls].policy;
  call.relay.emplace(RelayRequest{
      .pool = pool.upstream(slot.backend()),
      .upstream_request = call.up,
      .sink = *ctx.sink,
      .deadline = ctx.conn.deadline(),
      .timeouts = config_.timeouts,
      .limits = config_.limits,
      .response_headers = ctx.response_headers,
      .interrupt = call.interrupt,
      .resume = resume,
      // The scheduler hears of the first token for the prefill backlog, and
      // for a LoRA request that waited for an adapter slot (a pending swap).
      .on_first_event = backend.prefill_tokens_per_s > 0 || ctx.adapter != 0
                            ? std::function<void()>([&slot] { slot.first_token(); })
                            : std::function<void()>(),
      .on_stream_started =
          // Two pointers: within std::function's own storage, no allocation.
          [this, &runs] {
            runs.ctx.answer_started();
            // The client has a byte: no retry or failover sends the body
            // again, and only a resumable request runs again.
            if (!runs.resume) {
              release_body(runs.ctx);
              runs.requests.release_body();
            }
          },
      .hold_failures = runs.retries < health_.max_retries(),
      .typing = offer,
      .gaps = capacity.enabled ? &pool.gaps(slot.backend()) : nullptr,  // adaptive capacity counts gaps
      .first_token_bound = policy.background ? std::chrono::steady_clock::duration::zero()
                                             : std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                   policy.ttft_slo * capacity.ttft_headroom),
      .hide_usage_chunk = ask_usage});
}

RunVerdict DispatchHandler::end_run(RequestContext& ctx, Dispatcher::Slot& slot,
                                    std::chrono::steady_clock::time_point sent) {
  ctx.rec.engine_ms += RequestContext::millis(std::chrono::steady_clock::now() - sent);
  slot.set_interrupt_hook(nullptr);
  if (auto* trace = ctx.slots.get<TraceSlot>()) trace->end_attempt(static_cast<int>(ctx.outcome.upstream_status));
  const RunVerdict verdict = judge(ctx.outcome);
  slot.generation().health().record(slot.pool(), slot.backend(), verdict, ctx.outcome.upstream_retry_after);
  return verdict;
}

Task<bool> DispatchHandler::run_again(Dispatcher::Slot& slot, Runs& runs) {
  RequestContext& ctx = runs.ctx;
  const bool failover = runs.resume && runs.resume->client_stream_started;
  if (!co_await may_run_again(ctx, failover, runs.retries)) co_return false;
  const std::string from = ctx.rec.backend;
  auto requeued = co_await slot.retry(runs.remaining_cost(ctx.parsed.info), *ctx.sink);
  if (!requeued) {
    ctx.outcome.error = std::move(requeued.error());
    ctx.outcome.held.reset();
    co_return false;
  }
  ctx.rec.queue_ms += RequestContext::millis(slot.queue_wait());
  if (auto* trace = ctx.slots.get<TraceSlot>()) trace->next_kind = failover ? "failover" : "retry";
  const std::string& to = slot.generation().pool(slot.pool()).backend(slot.backend()).name;
  ctx.decisions.emplace_back("failover", fmt::format("from={} to={} stream_started={}", from, to, failover));
  co_return true;
}

Task<bool> DispatchHandler::requeue_preempted(Dispatcher::Slot& slot, Runs& runs) {
  RequestContext& ctx = runs.ctx;
  ++ctx.rec.preemptions;
  if (auto* trace = ctx.slots.get<TraceSlot>()) trace->next_kind = "resume";
  ResponseSink& sink = *ctx.sink;
  RelayOutcome& outcome = ctx.outcome;
  const std::string from = ctx.rec.backend;
  auto requeued = co_await slot.requeue(runs.remaining_cost(ctx.parsed.info), sink);
  const std::optional<Dispatcher::Taker>& taker = slot.preempted_by();
  ctx.decisions.emplace_back(
      "preempted", taker ? fmt::format("backend={} taken_by={} class={}", from, taker->request_id, taker->klass)
                         : fmt::format("backend={} taken_by=none (no request took the slot at once)", from));
  if (requeued) {
    ctx.rec.queue_ms += RequestContext::millis(slot.queue_wait());
    co_return true;
  }
  outcome = RelayOutcome{.stream = outcome.stream, .error = std::move(requeued.error())};
  if (sink.client_gone()) {
    outcome.status = 499;
  } else if (runs.resume->client_stream_started) {
    co_await end_stream_with_error(sink, *outcome.error);
    outcome.status = sink.client_gone() ? 499 : 200;
  }
  co_return false;
}

int64_t DispatchHandler::Runs::remaining_cost(const RequestInfo& info) const {
  // The prompt, the output so far (a continuation reads it again) and what
  // is left of the token budget.
  const int64_t generated = resume ? resume->checkpoint.tokens : 0;
  const int64_t left = std::max<int64_t>(info.max_tokens.value_or(kDefaultOutputEstimate) - generated, 1);
  const int64_t so_far = info.prompt_tokens_estimate + generated;
  return left > INT64_MAX - so_far ? INT64_MAX : so_far + left;  // max_tokens may be 2^63 - 1
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
