#include "gateway/stages/rollout/alias_stage.hpp"

#include "core/request_parser.hpp"
#include "core/rollout/traffic_split.hpp"
#include "gateway/stages/rollout/shadow_run.hpp"

namespace arbiter {

AliasStage::AliasStage(RolloutBook& book, GatewayMetrics& metrics)
    : book_(book),
      requests_(metrics.registry.counter("arbiter_alias_requests_total",
                                         "Requests for a model alias, by the target it sent them to.",
                                         {"alias", "target"})) {}

namespace {

// Whether a request is one of the shadow's share: a hash of its id, so the
// choice is the same wherever it is made.
bool mirrored(double share, std::string_view request_id) {
  if (share >= 1) return true;
  return rollout::unit_point(rollout::sticky_hash("shadow", request_id)) < share;
}

}  // namespace

Verdict AliasStage::admit(RequestContext& ctx) {
  const Runtime& runtime = *ctx.runtime;
  const std::string& model = ctx.parsed.info.model;
  const auto found = runtime.aliases.find(model);
  if (found == runtime.aliases.end()) return Verdict::go();  // a model, or none: RouteStage says which
  const rollout::AliasConfig* alias = found->second;
  std::string_view key = ctx.rec.request_id;  // sticky: none
  const std::string_view tenant = ctx.tenant ? std::string_view(ctx.tenant->name) : std::string_view();
  if (alias->sticky == rollout::Sticky::kTenant) {
    key = tenant;
  } else if (alias->sticky == rollout::Sticky::kSession) {
    if (const auto session = ctx.req.field("x-session-id"); session && !session->empty()) {
      key = *session;
    } else if (ctx.parsed.info.user && !ctx.parsed.info.user->empty()) {
      key = *ctx.parsed.info.user;
    } else {
      key = tenant;
    }
  }
  std::optional<std::string> target = book_.pick(alias->name, rollout::sticky_hash(alias->name, key));
  // The rollout follows the newest config; a request of an older one may
  // find a target its config does not serve (a reload in between).
  if (!target || !runtime.pool_index.contains(*target)) {
    return Verdict::refuse(ApiError{ErrorCode::kNoBackend,
                                    "the alias '" + model + "' changed while the request came in; retry", "model",
                                    std::chrono::milliseconds(1000)});
  }
  requests_.with({alias->name, *target}).inc();
  ctx.response_headers.emplace_back("x-arbiter-target", *target);
  ctx.slots.emplace<AliasRoute>(AliasRoute{.alias = alias->name, .target = *target});
  rewrite_model(ctx.parsed, *target);
  if (alias->shadow && mirrored(alias->shadow->share, ctx.rec.request_id)) {
    if (auto permit = book_.take_shadow(alias->name)) {
      boost::json::object body = ctx.parsed.body();  // a copy, the target's model in it
      body["model"] = alias->shadow->model;
      const bool deterministic = ctx.parsed.info.greedy || ctx.parsed.info.seeded;
      ShadowCapture& capture = ctx.slots.emplace<ShadowCapture>(std::move(*permit), std::move(body), deterministic, *ctx.sink);
      ctx.sink = &capture.copy;  // the real answer goes on through it, copied
    }
  }
  return Verdict::go();
}

void RolloutObserver::on_complete(const RequestContext& ctx) {
  const AliasRoute* route = ctx.slots.get<AliasRoute>();
  if (route == nullptr || !ctx.dispatch_queue_ms) return;  // never reached an engine: nothing to judge
  if (ShadowCapture* capture = ctx.slots.get<ShadowCapture>()) launch_shadow(ctx, *capture, book_);
  const AccessRecord& rec = ctx.rec;
  const int status = ctx.outcome.status;
  rollout::Outcome outcome;
  // The engine's failures: a 5xx, or a stream that broke after its 200. A
  // client that left (499) or a refusal of its own (4xx) says nothing of it.
  outcome.error = status >= 500 || (status == 200 && !rec.error.empty());
  if (rec.stream && status == 200 && rec.ttfb_ms >= 0) {
    outcome.ttft_ms = rec.ttfb_ms - rec.queue_ms;  // from dispatch: the engine's part, not the queue's
    if (rec.completion_tokens > 1) {
      outcome.itl_ms = (rec.duration_ms - rec.ttfb_ms) / static_cast<double>(rec.completion_tokens - 1);
    }
  }
  book_.record(route->alias, route->target, rollout::Clock::now(), outcome);
}

}  // namespace arbiter
