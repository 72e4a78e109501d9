// The admission stages one by one, on a real config: what each finds and
// when each refuses (gateway/stages/).
#include <gtest/gtest.h>

#include <memory>

#include "core/classifier.hpp"
#include "core/tenants.hpp"
#include "gateway/config_yaml.hpp"
#include "gateway/gateway_metrics.hpp"
#include "gateway/model_pool.hpp"
#include "gateway/stages/auth/auth_stage.hpp"
#include "gateway/stages/caps/caps_stage.hpp"
#include "gateway/stages/parse/parse_stage.hpp"
#include "gateway/stages/route/route_stage.hpp"
#include "gateway/stages/supersede/supersede_stage.hpp"
#include "loopback.hpp"

namespace arbiter::stages_test {
namespace {

constexpr const char* kKey = "sk-stage-test";

Config test_config() {
  auto c = parse_config(std::string(R"(
auth: {enabled: true}
tenants: [{name: ide, api_keys: [)") + kKey + R"(]}]
classes:
  - {name: completion, match: {routes: [/v1/completions]}, supersede_by_user: true}
  - {name: chat, match: {routes: [/v1/chat/completions]}}
models:
  - name: m1
    backends:
      - {url: "http://127.0.0.1:9001", classes: [completion]}
      - {url: "http://127.0.0.1:9002"}
)");
  EXPECT_TRUE(c) << ::testing::PrintToString(c.error());
  return *c;
}

// One request through the stages in chain order, stopping at the first
// refusal (as the pipeline does).
struct Rig {
  std::shared_ptr<const Runtime> runtime = std::make_shared<const Runtime>(test_config());
  const Config& config = runtime->config;
  GatewayMetrics metrics;
  std::vector<std::unique_ptr<ModelPool>> pools;
  net::io_context ioc;
  testing::Loopback loop{ioc};

  Rig() {
    for (std::size_t i = 0; i < config.models.size(); ++i) {
      pools.push_back(std::make_unique<ModelPool>(config.models[i], 1));
    }
  }

  // Returns the refusal, or nullopt with `ctx` filled by every stage.
  std::optional<ApiError> admit(RequestContext& ctx) {
    ctx.runtime = runtime;  // as Pipeline::run does
    AuthStage auth;
    ParseStage parse;
    RouteStage route(pools);
    CapsStage caps(pools, metrics);
    SupersedeStage supersede;
    for (AdmissionStage* stage : std::initializer_list<AdmissionStage*>{&auth, &parse, &route, &caps, &supersede}) {
      Verdict v = stage->admit(ctx);
      if (v.kind == Verdict::Kind::kRefuse) return v.error;
    }
    return std::nullopt;
  }
};

HttpRequest request(std::string_view target, std::string body, std::string_view key = kKey) {
  http::request<http::string_body> r{http::verb::post, target, 11};
  if (!key.empty()) r.set(http::field::authorization, "Bearer " + std::string(key));
  r.body() = std::move(body);
  return HttpRequest(std::move(r));
}

TEST(Stages, AnAdmittedCompletionIsRoutedCappedAndKeyed) {
  Rig rig;
  HttpRequest req = request("/v1/completions", R"({"model":"m1","prompt":"def f(","max_tokens":900,"user":"dev-1"})");
  RequestContext ctx(Route::kCompletions, req, rig.loop.conn());
  ASSERT_FALSE(rig.admit(ctx));
  EXPECT_EQ(ctx.tenant->name, "ide");                          // auth
  EXPECT_EQ(ctx.parsed.info.model, "m1");                      // parse
  EXPECT_EQ(rig.config.classes[ctx.cls].name, "completion");   // route: class...
  EXPECT_EQ(rig.config.models[ctx.pool()].pool_name(), "m1/completion");  // ...and its pool
  EXPECT_EQ(ctx.rec.cls, "completion");
  EXPECT_EQ(ctx.response_headers.back(),                       // caps: 900 -> the built-in 128
            (std::pair<std::string, std::string>{"x-arbiter-max-tokens-capped", "128"}));
  EXPECT_TRUE(ctx.supersede_key.starts_with("user:dev-1/"));   // supersede, tied to the prompt
}

TEST(Stages, EachRefusesWhatItMust) {
  Rig rig;
  {
    HttpRequest req = request("/v1/chat/completions", R"({"model":"m1","messages":[]})", "sk-wrong");
    RequestContext ctx(Route::kChatCompletions, req, rig.loop.conn());
    EXPECT_EQ(rig.admit(ctx).value().status(), 401);  // auth
  }
  {
    HttpRequest req = request("/v1/chat/completions", "{not json");
    RequestContext ctx(Route::kChatCompletions, req, rig.loop.conn());
    EXPECT_EQ(rig.admit(ctx).value().status(), 400);  // parse
  }
  // A compressed body: 415 naming the coding, not "invalid JSON"; identity
  // is no coding.
  const auto encoded = [](std::string_view coding, std::string body) {
    http::request<http::string_body> r{http::verb::post, "/v1/chat/completions", 11};
    r.set(http::field::authorization, "Bearer " + std::string(kKey));
    r.set(http::field::content_encoding, coding);
    r.body() = std::move(body);
    return HttpRequest(std::move(r));
  };
  for (const char* coding : {"gzip", "br", "deflate, gzip"}) {
    HttpRequest req = encoded(coding, "\x1f\x8b\x08");
    RequestContext ctx(Route::kChatCompletions, req, rig.loop.conn());
    const ApiError refused = rig.admit(ctx).value();
    EXPECT_EQ(refused.status(), 415) << coding;
    EXPECT_NE(refused.message.find(coding), std::string::npos) << refused.message;
  }
  {
    HttpRequest req = encoded("Identity", R"({"model":"m1","messages":[{"role":"user","content":"hi"}]})");
    RequestContext ctx(Route::kChatCompletions, req, rig.loop.conn());
    EXPECT_FALSE(rig.admit(ctx)) << "identity is no coding";
  }
  {
    HttpRequest req = request("/v1/chat/completions", R"({"model":"nope","messages":[{"role":"user","content":"hi"}]})");
    RequestContext ctx(Route::kChatCompletions, req, rig.loop.conn());
    const auto refused = rig.admit(ctx);
    EXPECT_EQ(refused.value().status(), 404);  // route: unknown model
    EXPECT_EQ(ctx.rec.tenant, "ide");          // the stages before it ran
  }
}

TEST(Stages, AChatGoesToTheGeneralPoolWithNoKeyOrCap) {
  Rig rig;
  HttpRequest req = request("/v1/chat/completions",
                            R"({"model":"m1","messages":[{"role":"user","content":"hi"}],"user":"u"})");
  RequestContext ctx(Route::kChatCompletions, req, rig.loop.conn());
  ASSERT_FALSE(rig.admit(ctx));
  EXPECT_EQ(rig.config.models[ctx.pool()].pool_name(), "m1");
  EXPECT_TRUE(ctx.supersede_key.empty());  // chat does not supersede by user
  EXPECT_EQ(ctx.response_headers.size(), 1u);  // x-request-id only
}

}  // namespace
}  // namespace arbiter::stages_test
