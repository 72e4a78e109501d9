// The body of one upstream run (gateway/handler/run_body): the client's
// bytes when nothing changes, with the usage ask inserted; serialised with
// what the run adds otherwise; a resumed run's continuation.
#include "gateway/handler/run_body.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace arbiter {
namespace {

ParsedRequest parsed(std::string body) {
  auto r = parse_request(Route::kChatCompletions, std::move(body));
  EXPECT_TRUE(r.has_value());
  return std::move(*r);
}

// What the engine receives: the body with the insert spliced in.
std::string sent(const UpstreamRequest& up) {
  std::string out(up.body);
  out.insert(up.insert_at, up.body_insert);
  return out;
}

constexpr std::string_view kChat =
    R"({"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":50,"stream":true})";

TEST(RunBody, NothingChangedSendsTheClientsBytes) {
  ParsedRequest p = parsed(std::string(kChat));
  UpstreamRequest up;
  std::string rewritten;
  build_run_body(p, {}, up, rewritten);
  EXPECT_EQ(up.body, kChat);
  EXPECT_EQ(up.body.data(), p.text.data()) << "a view of the client's bytes, not a copy";
  EXPECT_TRUE(up.body_insert.empty());
  EXPECT_TRUE(rewritten.empty());
}

TEST(RunBody, TheUsageAskIsInsertedWithoutACopy) {
  ParsedRequest p = parsed(std::string(kChat));
  UpstreamRequest up;
  std::string rewritten;
  build_run_body(p, {.ask_usage = true}, up, rewritten);
  EXPECT_EQ(up.body.data(), p.text.data());
  const auto body = boost::json::parse(sent(up)).as_object();
  EXPECT_EQ(body.at("stream_options").at("include_usage"), true) << sent(up);
  EXPECT_EQ(body.at("max_tokens"), 50);
}

TEST(RunBody, PriorityAndTheRunsRequestIdAreSerialisedIntoTheDocument) {
  ParsedRequest p = parsed(std::string(kChat));
  UpstreamRequest up;
  std::string rewritten;
  build_run_body(p, {.priority_engine = EngineKind::kVllm, .engine_priority = 2, .request_id = "req-1-2"}, up,
                 rewritten);
  EXPECT_EQ(up.body.data(), rewritten.data());
  const auto body = boost::json::parse(up.body).as_object();
  EXPECT_EQ(body.at("priority"), engine_priority_field(EngineKind::kVllm, 2)) << up.body;
  EXPECT_EQ(body.at("request_id"), "req-1-2");
  EXPECT_EQ(body.at("messages").as_array().size(), 1u);
}

TEST(RunBody, AResumedRunContinuesFromItsCheckpointAndLeavesTheDocumentAlone) {
  ParsedRequest p = parsed(std::string(kChat));
  Checkpoint checkpoint;
  checkpoint.begin_run();
  {
    UpstreamRequest first;
    std::string rewritten;
    build_run_body(p, {.resume_method = ResumeMethod::kContinueFinal, .checkpoint = &checkpoint}, first,
                   rewritten);
    EXPECT_EQ(first.body, kChat) << "a first run of a streamed request goes as sent";
  }
  checkpoint.text = "Hello";
  checkpoint.tokens = 20;
  checkpoint.begin_run();
  UpstreamRequest up;
  std::string rewritten;
  build_run_body(p, {.ask_usage = true, .resume_method = ResumeMethod::kContinueFinal, .checkpoint = &checkpoint},
                 up, rewritten);
  const auto body = boost::json::parse(up.body).as_object();
  EXPECT_EQ(body.at("max_tokens"), 30) << up.body;  // 50 less the 20 generated
  EXPECT_EQ(body.at("stream_options").at("include_usage"), true);
  EXPECT_FALSE(p.document_changed()) << "the continuation is built apart from the client's document";
}

}  // namespace
}  // namespace arbiter
