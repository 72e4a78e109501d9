#include "gateway/pipeline/pipeline.hpp"

#include <algorithm>
#include <optional>

#include "core/tenants.hpp"
#include "gateway/cors.hpp"
#include "gateway/pipeline/answer_end_hold.hpp"
#include "gateway/request_id.hpp"

namespace arbiter {

Task<Verdict> AdmissionStage::admit_async(RequestContext&) { co_return Verdict::go(); }

std::string_view phase_name(Phase phase) {
  switch (phase) {
    case Phase::kAuthenticate: return "authenticate";
    case Phase::kParse: return "parse";
    case Phase::kRoute: return "route";
    case Phase::kProtect: return "protect";
    case Phase::kAnswerEarly: return "answer_early";
    case Phase::kAdmit: return "admit";
  }
  return "?";
}

void Pipeline::add_stage(std::unique_ptr<AdmissionStage> stage) {
  const auto after = std::find_if(stages_.begin(), stages_.end(),
                                  [&](const auto& s) { return s->phase() > stage->phase(); });
  stages_.insert(after, std::move(stage));
}

RequestContext::RequestContext(Route r, HttpRequest& request, RequestClient& connection)
    : route(r), req(request), conn(connection), sink(&connection), started(Clock::now()) {
  rec.ts = std::chrono::system_clock::now();
  rec.route = route_path(route);
  rec.bytes_in = req.body().size();
  rec.request_id = choose_request_id(req["x-request-id"]);
  rec.tenant = kAnonymousTenant;
  rec.team = kAnonymousTenant;
  rec.model = kNoLabel;
  rec.cls = kNoLabel;
  response_headers.reserve(12);  // x-request-id, CORS's four, a stage's, the relay's five: no regrowth
  response_headers.emplace_back("x-request-id", rec.request_id);
}

void RequestContext::route_to(const Config& config, const std::vector<std::size_t>& pools, std::size_t klass) {
  if (model_pools != &pools) adapter = 0;
  model_pools = &pools;
  cls = klass;
  pool_ = class_pool(config, pools, klass);
  rec.cls = config.classes[klass].name;
}

std::optional<RelayOutcome::Billed> RequestContext::billed() const {
  if (!dispatch_queue_ms) return std::nullopt;  // never reached an engine
  // A whole answer went out (or began to, when the client left during it).
  const bool answer_sent = outcome.status == 200 || (outcome.status == 499 && conn.body_bytes_sent() > 0);
  const RequestInfo& info = parsed.info;
  return outcome.billed(info.prompt_tokens_estimate, info.cost_estimate() - info.prompt_tokens_estimate, answer_sent);
}

void RequestContext::answer_started() {
  if (answer_began || !observers) return;
  answer_began = true;
  for (const auto& observer : *observers) observer->on_answer_started(*this);
}

bool Pipeline::settle(RequestContext& ctx, const AdmissionStage& stage, Verdict verdict) {
  if (verdict.kind == Verdict::Kind::kRefuse) {
    ctx.outcome.error = std::move(verdict.error);
    ctx.refused_by = stage.name();
    return false;
  }
  if (verdict.kind == Verdict::Kind::kAnswered) {
    ctx.answered_by = stage.name();
    return false;
  }
  return true;
}

Task<bool> Pipeline::admit_waiting(RequestContext& ctx, std::size_t i) const {
  co_return settle(ctx, *stages_[i], co_await stages_[i]->admit_async(ctx));
}

std::size_t Pipeline::admit_until_wait(RequestContext& ctx, std::size_t from) const {
  for (std::size_t i = from; i < stages_.size(); ++i) {
    Verdict verdict = stages_[i]->admit(ctx);
    if (verdict.kind == Verdict::Kind::kWait) return i;
    if (!settle(ctx, *stages_[i], std::move(verdict))) break;
  }
  return stages_.size();
}

Task<void> Pipeline::run(Route route, HttpRequest& req, RequestClient& conn,
                         std::shared_ptr<const Runtime> runtime) const {
  RequestContext ctx(route, req, conn);
  ctx.observers = &observers_;
  ctx.rec.config = config_hash_;
  if (cors_) cors_->add_answer_headers(req["origin"], ctx.response_headers);
  ctx.runtime = std::move(runtime);
  std::optional<AnswerEndHold> hold;
  if (holds_answer_end_) ctx.sink = &hold.emplace(*ctx.sink);
  for (const auto& observer : observers_) observer->on_start(ctx);

  // The stages, in a plain loop until one must wait: only a wait costs a
  // coroutine (admit_async).
  for (std::size_t i = admit_until_wait(ctx, 0); i < stages_.size(); i = admit_until_wait(ctx, i + 1)) {
    if (!co_await admit_waiting(ctx, i)) break;
  }
  if (!ctx.outcome.error && ctx.answered_by.empty()) {
    ctx.admitted = true;
    co_await handler_->run(ctx);
  }
  if (ctx.outcome.error && ctx.outcome.status == 0) {
    // Refused before any upstream exchange.
    const bool delivered = co_await send_error(*ctx.sink, *ctx.outcome.error, ctx.response_headers);
    ctx.outcome.status = delivered ? ctx.outcome.error->status() : 499;
  }

  // The access-log line's end: exactly once per request, whatever path it took.
  AccessRecord& rec = ctx.rec;
  rec.status = ctx.outcome.status;
  rec.upstream_ms = ctx.outcome.upstream_ms;
  if (ctx.outcome.error) rec.error = map_error(ctx.outcome.error->code).code;
  if (hold) {
    for (const auto& observer : observers_) observer->on_answer_end(ctx);
    if (!co_await hold->release()) {
      ctx.outcome.status = 499;  // the client left before its answer's end
      rec.status = 499;
    }
  }
  const auto now = RequestContext::Clock::now();
  rec.bytes_out = conn.body_bytes_sent();
  rec.duration_ms = RequestContext::millis(now - ctx.started);
  if (auto first = conn.first_body_byte_at()) rec.ttfb_ms = RequestContext::millis(*first - ctx.started);
  for (const auto& observer : observers_) observer->on_complete(ctx);
}

}  // namespace arbiter
