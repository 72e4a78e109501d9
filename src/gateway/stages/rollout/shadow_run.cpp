#include "gateway/stages/rollout/shadow_run.hpp"

#include <boost/json/serialize.hpp>

#include "http/outbound_connection.hpp"
#include "http/tls_context.hpp"

namespace arbiter {

namespace {

// The lowest request priority an engine with priority scheduling knows
// (vLLM runs lower values first; SGLang, by default, higher ones).
constexpr int kLowestPriority = 1'000'000;
constexpr uint64_t kMaxShadowAnswerBytes = 8u << 20;

struct ShadowJob {
  RolloutBook::ShadowPermit permit;
  RolloutBook* book;
  std::string host;
  uint16_t port;
  TlsContext tls;
  std::string authorization;
  std::string target;  // the route's path
  std::string body;
  bool stream;
  bool deterministic;
  rollout::AnswerSummary primary;
};

Task<void> run_shadow(ShadowJob job) {
  const auto started = std::chrono::steady_clock::now();
  auto connection = std::make_shared<OutboundConnection>(co_await net::this_coro::executor, job.host, job.port,
                                                         std::move(job.tls));
  http::request<http::string_body> req{http::verb::post, job.target, 11};
  req.set(http::field::host, job.host + ":" + std::to_string(job.port));
  req.set(http::field::content_type, "application/json");
  if (!job.authorization.empty()) req.set(http::field::authorization, job.authorization);
  req.set("x-arbiter-shadow", "1");
  req.body() = std::move(job.body);
  req.prepare_payload();
  const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(job.permit.config().timeout);
  const OutboundResponse answer = co_await connection->request(req, timeout, kMaxShadowAnswerBytes);
  connection->close();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  const int status = answer.failure == OutboundFailure::kNone ? answer.response.result_int() : 0;
  const rollout::AnswerSummary shadow = rollout::summarize_answer(answer.response.body(), job.stream, status, ms);
  job.book->shadow_done(job.permit, job.primary, shadow, job.deterministic);
}

}  // namespace

void launch_shadow(const RequestContext& ctx, ShadowCapture& capture, RolloutBook& book) {
  const Runtime& runtime = *ctx.runtime;
  const std::string& model = capture.permit.config().model;
  const auto pools = runtime.pool_index.find(model);
  if (pools == runtime.pool_index.end() || pools->second.empty()) return;  // a reload took it away
  const ModelConfig& shadow_model = runtime.config.models[pools->second.front()];
  const BackendConfig& backend = shadow_model.backends[capture.permit.next_backend(shadow_model.backends.size())];
  if (backend.priority_scheduling) {
    capture.body["priority"] = engine_priority_field(backend.engine, kLowestPriority);
  }
  const AccessRecord& rec = ctx.rec;
  const bool stream = rec.stream;
  // Its output length from its usage, which a stream has only when asked.
  if (stream) capture.body["stream_options"] = {{"include_usage", true}};
  // The real answer's latency from dispatch, as the shadow's is from its send.
  rollout::AnswerSummary primary = rollout::summarize_answer(capture.copy.body(), stream,
                                                             static_cast<int>(capture.copy.status()),
                                                             rec.duration_ms - rec.queue_ms);
  // The client's copy of a stream may lack the usage the gateway read (and
  // kept back): the engine's count is in the record.
  if (!primary.output_tokens && rec.completion_tokens >= 0) primary.output_tokens = rec.completion_tokens;
  ShadowJob job{.permit = std::move(capture.permit),
                .book = &book,
                .host = backend.host,
                .port = backend.port,
                .tls = client_tls_for(backend),
                .authorization = backend.authorization,
                .target = std::string(route_path(ctx.route)),
                .body = boost::json::serialize(capture.body),
                .stream = stream,
                .deterministic = capture.deterministic && !capture.copy.cut(),
                .primary = std::move(primary)};
  net::co_spawn(ctx.conn.executor(), run_shadow(std::move(job)), net::detached);
}

}  // namespace arbiter
