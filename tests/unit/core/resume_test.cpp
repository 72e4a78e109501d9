// Checkpoint and resume: which requests can be resumed, the continuation
// bodies, and how several upstream runs become one stream or one response.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "core/resume.hpp"

namespace arbiter {
namespace {
namespace json = boost::json;

ParsedRequest parsed(Route route, std::string_view body) {
  auto r = parse_request(route, std::string(body));
  EXPECT_TRUE(r.has_value()) << body;
  return r ? *r : ParsedRequest{};
}

std::string chat_event(std::string_view id, std::string_view delta, std::string_view finish = "null") {
  return "data: {\"id\":\"" + std::string(id) +
         R"(","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":0,"delta":)" +
         std::string(delta) + ",\"finish_reason\":" + std::string(finish) + "}]}\n\n";
}

TEST(Resume, WhichRequestsCanBeResumed) {
  const auto chat = parsed(Route::kChatCompletions, R"({"model":"m","messages":[{"role":"user","content":"hi"}]})");
  EXPECT_EQ(resume_method(chat, true), ResumeMethod::kContinueFinal);
  EXPECT_EQ(resume_method(chat, false), ResumeMethod::kNone) << "backends must declare continue_final_message";
  EXPECT_EQ(resume_method(parsed(Route::kCompletions, R"({"model":"m","prompt":"once"})"), false),
            ResumeMethod::kPromptAppend);
  EXPECT_EQ(resume_method(parsed(Route::kCompletions, R"({"model":"m","prompt":["a","b"]})"), true),
            ResumeMethod::kNone);
  EXPECT_EQ(resume_method(parsed(Route::kCompletions, R"({"model":"m","prompt":"x","n":2})"), true),
            ResumeMethod::kNone);
  EXPECT_EQ(resume_method(parsed(Route::kCompletions, R"({"model":"m","prompt":"x","logprobs":1})"), true),
            ResumeMethod::kNone);
  EXPECT_EQ(resume_method(parsed(Route::kChatCompletions,
                                 R"({"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{}]})"),
                          true),
            ResumeMethod::kNone);
  EXPECT_EQ(resume_method(parsed(Route::kChatCompletions,
                                 R"({"model":"m","messages":[{"role":"user","content":"x"}],"logprobs":false})"),
                          true),
            ResumeMethod::kContinueFinal)
      << "logprobs: false asks for nothing";
}

TEST(Resume, FirstRunSendsTheOriginalAndForcesAStreamOnlyToAggregate) {
  const auto req = parsed(Route::kCompletions, R"({"model":"m","prompt":"once","max_tokens":50})");
  Checkpoint cp;
  cp.begin_run();
  EXPECT_EQ(run_body(req, ResumeMethod::kPromptAppend, cp, false), req.body());
  const auto forced = run_body(req, ResumeMethod::kPromptAppend, cp, true);
  EXPECT_EQ(forced.at("stream"), true);
  EXPECT_EQ(forced.at("stream_options").at("include_usage"), true);
  EXPECT_EQ(forced.at("max_tokens"), 50);
}

TEST(Resume, ResumedCompletionAppendsTheTextAndReducesTheBudgets) {
  const auto req =
      parsed(Route::kCompletions, R"({"model":"m","prompt":"once upon","max_tokens":50,"min_tokens":50})");
  Checkpoint cp;
  cp.begin_run();
  cp.text = " a time";
  cp.tokens = 20;
  cp.begin_run();
  const auto body = run_body(req, ResumeMethod::kPromptAppend, cp, false);
  EXPECT_EQ(body.at("prompt"), "once upon a time");
  EXPECT_EQ(body.at("max_tokens"), 30);
  EXPECT_EQ(body.at("min_tokens"), 30);
}

TEST(Resume, ResumedChatContinuesThePartialAssistantMessage) {
  const auto req = parsed(Route::kChatCompletions,
                          R"({"model":"m","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":10})");
  Checkpoint cp;
  cp.begin_run();
  cp.text = "Hello th";
  cp.tokens = 3;
  cp.begin_run();
  const auto body = run_body(req, ResumeMethod::kContinueFinal, cp, true);
  const auto& messages = body.at("messages").as_array();
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[1].at("role"), "assistant");
  EXPECT_EQ(messages[1].at("content"), "Hello th");
  EXPECT_EQ(body.at("continue_final_message"), true);
  EXPECT_EQ(body.at("add_generation_prompt"), false);
  EXPECT_EQ(body.at("max_completion_tokens"), 7);
  EXPECT_EQ(body.at("stream"), true);
}

TEST(Resume, PreemptedBeforeAnyTokenResendsTheOriginal) {
  const auto req = parsed(Route::kChatCompletions, R"({"model":"m","messages":[{"role":"user","content":"hi"}]})");
  Checkpoint cp;
  cp.begin_run();
  cp.begin_run();
  EXPECT_EQ(run_body(req, ResumeMethod::kContinueFinal, cp, false), req.body());
}

TEST(Resume, TwoRunsReachAStreamingClientAsOneStream) {
  Checkpoint cp;
  cp.begin_run();
  const std::string role = chat_event("run1", R"({"role":"assistant","content":""})");
  const std::string a = chat_event("run1", R"({"content":"Hel"})");
  EXPECT_EQ(track_event(role, Route::kChatCompletions, cp).fate, EventFate::kForward);
  EXPECT_EQ(track_event(a, Route::kChatCompletions, cp).fate, EventFate::kForward);
  EXPECT_EQ(cp.text, "Hel");
  EXPECT_EQ(cp.tokens, 1);
  EXPECT_EQ(cp.id, "run1");

  cp.begin_run();  // preempted; the continuation streams under another id
  EXPECT_EQ(track_event(chat_event("run2", R"({"role":"assistant","content":""})"), Route::kChatCompletions, cp).fate,
            EventFate::kDrop);
  const auto b = track_event(chat_event("run2", R"({"content":"lo"})", R"("length")"), Route::kChatCompletions, cp);
  ASSERT_EQ(b.fate, EventFate::kRewritten);
  EXPECT_EQ(json::parse(b.rewritten.substr(6)).at("id"), "run1");
  EXPECT_TRUE(b.rewritten.ends_with("\n\n"));
  const auto usage = track_event(
      R"(data: {"id":"run2","object":"chat.completion.chunk","created":9,"model":"m","choices":[],)"
      R"("usage":{"prompt_tokens":11,"completion_tokens":1,"total_tokens":12}})"
      "\n\n",
      Route::kChatCompletions, cp);
  ASSERT_EQ(usage.fate, EventFate::kRewritten);
  const auto u = json::parse(usage.rewritten.substr(6)).at("usage");
  EXPECT_EQ(u.at("prompt_tokens"), 10) << "the first run's token is output, not prompt";
  EXPECT_EQ(u.at("completion_tokens"), 2);
  EXPECT_EQ(u.at("total_tokens"), 12);
  EXPECT_EQ(track_event("data: [DONE]\n\n", Route::kChatCompletions, cp).fate, EventFate::kForward);
  EXPECT_EQ(cp.text, "Hello");
  EXPECT_EQ(cp.tokens, 2);
  EXPECT_EQ(cp.finish_reason, "length");
}

// Found by fuzz_sse_resume: a number past a double's range parsed to
// infinity, and the rewritten event carried "Infinity", which is not JSON.
TEST(Resume, AResumedChunkWithANumberPastADoublesRangeGoesAsItCame) {
  Checkpoint cp;
  cp.begin_run();
  EXPECT_EQ(track_event(chat_event("run1", R"({"content":"Hel"})"), Route::kCompletions, cp).fate, EventFate::kForward);
  cp.begin_run();
  const std::string odd = "data: {\"id\":\"run2\",\"choices\":[1E99999]}\n\n";
  EXPECT_EQ(track_event(odd, Route::kCompletions, cp).fate, EventFate::kForward);
  const auto fine = track_event("data: {\"id\":\"run2\",\"choices\":[1E300]}\n\n", Route::kCompletions, cp);
  ASSERT_EQ(fine.fate, EventFate::kRewritten);
  EXPECT_TRUE(json::parse(fine.rewritten.substr(6, fine.rewritten.size() - 8)).is_object());
}

TEST(Resume, AggregatedResponseIsOneCompletionObject) {
  Checkpoint cp;
  cp.begin_run();
  track_event(R"(data: {"id":"c1","object":"text_completion","created":5,"model":"m","choices":[{"index":0,"text":"ab","finish_reason":null}]})"
              "\n\n",
              Route::kCompletions, cp);
  cp.begin_run();
  track_event(R"(data: {"id":"c2","object":"text_completion","created":6,"model":"m","choices":[{"index":0,"text":"c","finish_reason":"stop"}]})"
              "\n\n",
              Route::kCompletions, cp);
  track_event(R"(data: {"id":"c2","object":"text_completion","created":6,"model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}})"
              "\n\n",
              Route::kCompletions, cp);
  const auto r = json::parse(aggregate_response(Route::kCompletions, cp));
  EXPECT_EQ(r.at("id"), "c1");
  EXPECT_EQ(r.at("object"), "text_completion");
  EXPECT_EQ(r.at("created"), 5);
  EXPECT_EQ(r.at("choices").at(0).at("text"), "abc");
  EXPECT_EQ(r.at("choices").at(0).at("finish_reason"), "stop");
  EXPECT_EQ(r.at("usage").at("completion_tokens"), 2);
  EXPECT_EQ(r.at("usage").at("prompt_tokens"), 4);
}

// A chat chunk of run `id` with no choices and this usage.
std::string usage_event(std::string_view id, std::string_view usage) {
  return "data: {\"id\":\"" + std::string(id) +
         R"(","object":"chat.completion.chunk","created":7,"model":"m","choices":[],"usage":)" + std::string(usage) + "}\n\n";
}

TEST(Resume, CachedPromptTokensAreKeptOverRuns) {
  // The engine served 8 prompt tokens from its prefix cache; the resumed
  // run's prompt (11, of which 1 was the first run's output) is 10, and no
  // more than that can have been cached.
  Checkpoint cp;
  cp.begin_run();
  track_event(chat_event("c1", R"({"content":"ab"})"), Route::kChatCompletions, cp);
  cp.begin_run();
  track_event(usage_event("c2", R"({"prompt_tokens":11,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":8}})"),
              Route::kChatCompletions, cp);
  ASSERT_TRUE(cp.usage.has_value());
  EXPECT_EQ(cp.usage->prompt_tokens, 10);
  EXPECT_EQ(cp.usage->cached_tokens, 8);
  const auto r = json::parse(aggregate_response(Route::kChatCompletions, cp));
  EXPECT_EQ(r.at("usage").at("prompt_tokens_details").at("cached_tokens"), 8);

  track_event(usage_event("c2", R"({"prompt_tokens":11,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":11}})"),
              Route::kChatCompletions, cp);
  EXPECT_EQ(cp.usage->cached_tokens, 10);
  // Without details there is none, and the answer says nothing of it.
  Checkpoint plain;
  plain.begin_run();
  track_event(usage_event("c3", R"({"prompt_tokens":3,"completion_tokens":1})"), Route::kChatCompletions, plain);
  EXPECT_EQ(plain.usage->cached_tokens, 0);
  EXPECT_FALSE(json::parse(aggregate_response(Route::kChatCompletions, plain)).at("usage").as_object().contains("prompt_tokens_details"));
}

}  // namespace
}  // namespace arbiter
