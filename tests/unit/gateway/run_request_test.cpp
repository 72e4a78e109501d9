// What each upstream run sends (gateway/handler/run_request): the first run
// under the request's own id and the client's bytes; later runs (retries,
// resumes) under suffixed ids, in the header and in vLLM's body request_id
// alike; the client's end-to-end headers on every run; the backend's
// credential and priority field.
#include "gateway/handler/run_request.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace arbiter::run_request_test {
namespace {

ServerRequest client_request(std::string body) {
  http::request<http::string_body> req{http::verb::post, "/v1/chat/completions", 11};
  req.set("accept", "text/event-stream");
  req.set("traceparent", "00-abc-def-01");
  req.set("x-arbiter-class", "chat");  // the gateway's own: not forwarded
  req.body() = std::move(body);
  req.prepare_payload();
  return ServerRequest(std::move(req));
}

ParsedRequest parsed(std::string body) {
  auto r = parse_request(Route::kChatCompletions, std::move(body));
  EXPECT_TRUE(r.has_value());
  return std::move(*r);
}

constexpr std::string_view kChat = R"({"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":50})";

TEST(RunRequest, RunIdsAreTheRequestsThenSuffixedFromTwo) {
  EXPECT_EQ(upstream_run_id("req-1", 0), "req-1");
  EXPECT_EQ(upstream_run_id("req-1", 1), "req-1-2");
  EXPECT_EQ(upstream_run_id("req-1", 4), "req-1-5");
}

TEST(RunRequest, TheFirstRunSendsTheClientsBytesHeadersAndTheBackendsCredential) {
  const ServerRequest client = client_request(std::string(kChat));
  ParsedRequest p = parsed(std::string(kChat));
  RunRequestBuilder runs(p, client, "req-1", Route::kChatCompletions);
  BackendConfig backend;
  backend.authorization = "Bearer engine-key";
  const UpstreamRequest up = runs.build("engine:8000", backend, 0, {});
  EXPECT_EQ(up.target, "/v1/chat/completions");
  EXPECT_EQ(up.host, "engine:8000");
  EXPECT_EQ(up.request_id, "req-1");
  EXPECT_EQ(up.accept, "text/event-stream");
  EXPECT_EQ(up.authorization, "Bearer engine-key");
  EXPECT_EQ(up.body, kChat);
  EXPECT_EQ(up.body.data(), p.text.data()) << "the client's bytes, not a copy";
  std::vector<std::string> forwarded;
  for (const auto& [name, value] : up.forwarded) forwarded.push_back(std::string(name) + ": " + std::string(value));
  EXPECT_NE(std::find(forwarded.begin(), forwarded.end(), "traceparent: 00-abc-def-01"), forwarded.end());
  for (const auto& f : forwarded) EXPECT_EQ(f.find("x-arbiter-"), std::string::npos) << f;
}

TEST(RunRequest, LaterRunsSuffixTheHeaderAndTheBodysOwnRequestId) {
  const std::string body = R"({"model":"m","messages":[{"role":"user","content":"hi"}],"request_id":"client-7"})";
  const ServerRequest client = client_request(body);
  ParsedRequest p = parsed(body);
  RunRequestBuilder runs(p, client, "req-1", Route::kChatCompletions);
  const BackendConfig backend;
  EXPECT_EQ(runs.build("e", backend, 0, {}).body, body) << "the first run: as sent";
  const UpstreamRequest third = runs.build("e", backend, 2, {});
  EXPECT_EQ(third.request_id, "req-1-3");
  const auto sent = boost::json::parse(third.body).as_object();
  EXPECT_EQ(sent.at("request_id"), "client-7-3") << third.body;
  EXPECT_EQ(sent.at("model"), "m");
}

TEST(RunRequest, ABodyWithoutItsOwnIdIsSentAsItCameOnLaterRuns) {
  const ServerRequest client = client_request(std::string(kChat));
  ParsedRequest p = parsed(std::string(kChat));
  RunRequestBuilder runs(p, client, "req-1", Route::kChatCompletions);
  const UpstreamRequest second = runs.build("e", BackendConfig{}, 1, {});
  EXPECT_EQ(second.request_id, "req-1-2");
  EXPECT_EQ(second.body, kChat);
}

TEST(RunRequest, APriorityEngineGetsThePriorityField) {
  const ServerRequest client = client_request(std::string(kChat));
  ParsedRequest p = parsed(std::string(kChat));
  RunRequestBuilder runs(p, client, "req-1", Route::kChatCompletions);
  BackendConfig backend;
  backend.priority_scheduling = true;
  backend.engine = EngineKind::kVllm;
  const UpstreamRequest up = runs.build("e", backend, 0, {.engine_priority = 3});
  EXPECT_EQ(boost::json::parse(up.body).at("priority"), engine_priority_field(EngineKind::kVllm, 3)) << up.body;
}

TEST(RunRequest, UsageIsAskedOnlyOfAStreamWhoseClientDidNot) {
  BackendConfig backend;
  RequestInfo info;
  info.stream = true;
  EXPECT_TRUE(asks_usage(info, backend));
  info.include_usage = true;
  EXPECT_FALSE(asks_usage(info, backend));
  info.include_usage = false;
  backend.stream_usage = false;
  EXPECT_FALSE(asks_usage(info, backend));
  info.stream = false;
  backend.stream_usage = true;
  EXPECT_FALSE(asks_usage(info, backend));
}

}  // namespace
}  // namespace arbiter::run_request_test
