// The model breaker's stage and observer on a real config: outcomes walk
// the breaker, the stage reroutes or refuses, and a request that never
// reached a backend neither counts nor uses up a half-open trial.
#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "core/classifier.hpp"
#include "core/tenants.hpp"
#include "gateway/config_yaml.hpp"
#include "gateway/gateway_metrics.hpp"
#include "gateway/model_pool.hpp"
#include "gateway/stages/breaker/breaker_observer.hpp"
#include "gateway/stages/breaker/breaker_stage.hpp"
#include "gateway/stages/parse/parse_stage.hpp"
#include "gateway/stages/route/route_stage.hpp"
#include "loopback.hpp"

namespace arbiter {
namespace {

Config breaker_config() {
  auto c = parse_config(R"(
models:
  - name: m1
    degraded: m1-awq
    fallback: small
    backends: [{url: "http://127.0.0.1:9001"}]
  - name: m1-awq
    backends: [{url: "http://127.0.0.1:9002"}]
  - name: small
    backends: [{url: "http://127.0.0.1:9003"}]
model_breaker: {window_ms: 60000, min_requests: 10, base_open_ms: 100, max_open_ms: 1000, probe_requests: 1}
)");
  EXPECT_TRUE(c) << ::testing::PrintToString(c.error());
  return *c;
}

struct Rig {
  std::shared_ptr<const Runtime> runtime = std::make_shared<const Runtime>(breaker_config());
  const Config& config = runtime->config;
  GatewayMetrics metrics;
  std::vector<std::unique_ptr<ModelPool>> pools;
  ModelBreakers breakers{config, metrics.registry};
  net::io_context ioc;
  testing::Loopback loop{ioc};

  Rig() {
    for (std::size_t i = 0; i < config.models.size(); ++i) {
      pools.push_back(std::make_unique<ModelPool>(config.models[i], 1));
    }
  }

  // One request for m1 through parse, route and the breaker stage, ended
  // as `end` says (on a backend, or never reaching one); the refusal, if any.
  // kStreamCut: a stream whose answer began, then its backend broke and
  // its client had left by then (a 499 carrying the upstream error).
  enum class End { kServed, kFailed, kNoBackendReached, kStreamCut };
  std::optional<ApiError> request(End end, std::string* model = nullptr) {
    http::request<http::string_body> r{http::verb::post, "/v1/chat/completions", 11};
    r.body() = R"({"model":"m1","messages":[{"role":"user","content":"hi"}]})";
    HttpRequest req(std::move(r));
    RequestContext ctx(Route::kChatCompletions, req, loop.conn());
    ctx.runtime = runtime;  // as Pipeline::run does
    ParseStage parse;
    RouteStage route(pools);
    BreakerStage breaker(breakers);
    for (AdmissionStage* stage : std::initializer_list<AdmissionStage*>{&parse, &route, &breaker}) {
      Verdict v = stage->admit(ctx);
      if (v.kind == Verdict::Kind::kRefuse) return v.error;
    }
    if (model) *model = ctx.parsed.info.model;
    ctx.admitted = true;
    if (end != End::kNoBackendReached) ctx.rec.backend = config.models[ctx.pool()].backends[0].name;
    if (end == End::kFailed) ctx.outcome.error = ApiError{ErrorCode::kUpstreamFailed, "down", {}, {}};
    if (end == End::kNoBackendReached) ctx.outcome.error = ApiError{ErrorCode::kRateLimited, "queue full", {}, {}};
    // As Pipeline::run has it: the observers told through the context.
    std::vector<std::unique_ptr<CompletionObserver>> observers;
    observers.push_back(std::make_unique<BreakerObserver>(breakers));
    ctx.observers = &observers;
    if (end == End::kStreamCut) {
      ctx.answer_started();
      ctx.outcome.stream = true;
      ctx.outcome.status = 499;
      ctx.outcome.error = ApiError{ErrorCode::kUpstreamFailed, "broke off", {}, {}};
    }
    observers.front()->on_complete(ctx);
    return std::nullopt;
  }
};

TEST(BreakerStage, FailuresRerouteToTheVariantsThenIsolate) {
  Rig rig;
  std::string model;
  for (int i = 0; i < 9; ++i) ASSERT_FALSE(rig.request(Rig::End::kServed, &model));
  EXPECT_EQ(model, "m1");
  // 1 failure in 10: 10%, the fallback stage.
  ASSERT_FALSE(rig.request(Rig::End::kFailed));
  ASSERT_FALSE(rig.request(Rig::End::kServed, &model));
  EXPECT_EQ(model, "small") << "the body's model is the fallback's";
  // The stage's window starts afresh, and the fallback's failures count for
  // m1 too: 3 in 10 is over 20%, isolated.
  for (int i = 0; i < 6; ++i) ASSERT_FALSE(rig.request(Rig::End::kServed));
  for (int i = 0; i < 3; ++i) ASSERT_FALSE(rig.request(Rig::End::kFailed));
  const auto refused = rig.request(Rig::End::kServed);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->code, ErrorCode::kModelIsolated);
  EXPECT_TRUE(refused->retry_after.has_value());
}

TEST(BreakerStage, ARequestThatReachedNoBackendNeitherCountsNorUsesATrial) {
  Rig rig;
  // Ten that never reached a backend and nine served: nine counted, under
  // min_requests, so one failure now makes 1 in 10 (the fallback stage),
  // not 1 in 20.
  for (int i = 0; i < 10; ++i) ASSERT_FALSE(rig.request(Rig::End::kNoBackendReached));
  for (int i = 0; i < 9; ++i) ASSERT_FALSE(rig.request(Rig::End::kServed));
  ASSERT_FALSE(rig.request(Rig::End::kFailed));
  std::string model;
  ASSERT_FALSE(rig.request(Rig::End::kServed, &model));
  EXPECT_EQ(model, "small");
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // past the 100 ms opening
  // Half-open, one trial to m1: it reaches no backend, so it goes back and
  // the next request is the trial again (else it would go to the fallback).
  ASSERT_FALSE(rig.request(Rig::End::kNoBackendReached, &model));
  EXPECT_EQ(model, "m1");
  ASSERT_FALSE(rig.request(Rig::End::kServed, &model));
  EXPECT_EQ(model, "m1") << "the trial was handed back and given again";
  // It succeeded: closed.
  ASSERT_FALSE(rig.request(Rig::End::kServed, &model));
  EXPECT_EQ(model, "m1");
}

TEST(BreakerStage, AStreamCountsOnceAsAnAnswerFromTheMomentItBegan) {
  Rig rig;
  // Nine streams that began (then broke, their clients gone) and one
  // failure: 1 in 10, the fallback stage. Counted as failures they would
  // isolate the model; counted twice, 1 in 19 would only degrade it.
  for (int i = 0; i < 9; ++i) ASSERT_FALSE(rig.request(Rig::End::kStreamCut));
  ASSERT_FALSE(rig.request(Rig::End::kFailed));
  std::string model;
  ASSERT_FALSE(rig.request(Rig::End::kServed, &model));
  EXPECT_EQ(model, "small");
}

}  // namespace
}  // namespace arbiter
