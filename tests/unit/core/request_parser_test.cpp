#include "core/request_parser.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace arbiter {
namespace {

ParsedRequest parse_ok(Route route, std::string_view body) {
  auto r = parse_request(route, std::string(body));
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  return r ? std::move(*r) : ParsedRequest{};
}

ApiError parse_err(Route route, std::string_view body) {
  auto r = parse_request(route, std::string(body));
  EXPECT_FALSE(r);
  return r ? ApiError{} : r.error();
}

TEST(RequestParser, ExtractsChatFields) {
  const auto p = parse_ok(Route::kChatCompletions,
                          R"({"model":"m","stream":true,"stream_options":{"include_usage":true},
                              "max_tokens":50,"messages":[{"role":"system","content":"12345678"},
                              {"role":"user","content":[{"type":"text","text":"abcd"},{"type":"image_url"}]}]})");
  EXPECT_EQ(p.info.model, "m");
  EXPECT_TRUE(p.info.stream);
  EXPECT_TRUE(p.info.include_usage);
  EXPECT_EQ(p.info.max_tokens, 50);
  // 2 messages x 4 overhead + 8/4 + 4/4 tokens of text.
  EXPECT_EQ(p.info.prompt_tokens_estimate, 2 * 4 + 2 + 1);
}

TEST(RequestParser, MaxCompletionTokensWinsForChat) {
  const auto p = parse_ok(Route::kChatCompletions,
                          R"({"model":"m","max_tokens":10,"max_completion_tokens":20,"messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(p.info.max_tokens, 20);
}

TEST(RequestParser, CompletionPromptForms) {
  EXPECT_EQ(parse_ok(Route::kCompletions, R"({"model":"m","prompt":"abcdefghi"})").info.prompt_tokens_estimate, 3);
  EXPECT_EQ(parse_ok(Route::kCompletions, R"({"model":"m","prompt":["abcd","abcd"]})").info.prompt_tokens_estimate, 2);
  EXPECT_EQ(parse_ok(Route::kCompletions, R"({"model":"m","prompt":[1,2,3]})").info.prompt_tokens_estimate, 3);
  EXPECT_EQ(parse_ok(Route::kCompletions, R"({"model":"m","prompt":[[1,2],[3]]})").info.prompt_tokens_estimate, 3);
  EXPECT_FALSE(parse_ok(Route::kCompletions, R"({"model":"m","prompt":"x"})").info.stream);
}

TEST(RequestParser, FindsWhereThePromptStartsForPrefixAffinity) {
  const std::string chat = R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})";
  EXPECT_EQ(parse_ok(Route::kChatCompletions, chat).info.prompt_at, chat.find("messages"));
  const std::string completion = R"({"prompt":"abc","model":"m"})";
  EXPECT_EQ(parse_ok(Route::kCompletions, completion).info.prompt_at, completion.find("prompt"));
  // A "prompt" key on the chat route, or one nested inside, is not the prompt.
  const std::string nested =
      R"({"model":"m","metadata":{"messages":1},"prompt":"x","messages":[{"role":"user","content":"a"}]})";
  EXPECT_EQ(parse_ok(Route::kChatCompletions, nested).info.prompt_at, nested.rfind("messages"));
  EXPECT_EQ(parse_ok(Route::kCompletions, R"({"model":"m","prompt":"x"})").info.prompt_at,
            std::string(R"({"model":"m",)").size() + 1);
}

TEST(RequestParser, RejectsBadBodiesWithTheFieldNamed) {
  EXPECT_EQ(parse_err(Route::kChatCompletions, "{not json").code, ErrorCode::kInvalidJson);
  EXPECT_EQ(parse_err(Route::kChatCompletions, "[1,2]").code, ErrorCode::kInvalidJson);
  EXPECT_EQ(parse_err(Route::kChatCompletions, R"({"messages":[{"role":"user","content":"x"}]})").param, "model");
  EXPECT_EQ(parse_err(Route::kChatCompletions, R"({"model":"","messages":[{"role":"user","content":"x"}]})").param, "model");
  EXPECT_EQ(parse_err(Route::kChatCompletions, R"({"model":"m"})").param, "messages");
  EXPECT_EQ(parse_err(Route::kChatCompletions, R"({"model":"m","messages":[]})").param, "messages");
  EXPECT_EQ(parse_err(Route::kChatCompletions, R"({"model":"m","messages":[1]})").param, "messages");
  EXPECT_EQ(parse_err(Route::kCompletions, R"({"model":"m"})").param, "prompt");
  EXPECT_EQ(parse_err(Route::kCompletions, R"({"model":"m","prompt":5})").param, "prompt");
  EXPECT_EQ(parse_err(Route::kCompletions, R"({"model":"m","prompt":"x","stream":"yes"})").param, "stream");
  EXPECT_EQ(parse_err(Route::kCompletions, R"({"model":"m","prompt":"x","max_tokens":0})").param, "max_tokens");
  EXPECT_EQ(parse_err(Route::kCompletions, R"({"model":"m","prompt":"x","max_tokens":"9"})").param, "max_tokens");
  EXPECT_EQ(parse_err(Route::kCompletions, R"({"model":"m","prompt":"x","max_tokens":1.5})").code,
            ErrorCode::kInvalidRequest);
}

// Found by fuzz/fuzz_request_body (docs/security.md, "Fuzzing"): Boost.JSON
// reads 1e900000 as infinity (and 0e615 as NaN) and serialises them as
// `Infinity` (`NaN`), so a body the gateway rewrote (resume, fallback model,
// null budget) went out as invalid JSON. The last body is the fuzzer's input.
TEST(RequestParser, RejectsANumberBeyondTheRangeOfADouble) {
  for (const char* body : {
           R"({"model":"m","messages":[{"content":"x"}],"temperature":-1e400})",
           R"({"model":"m","messages":[{"content":"x"}],"top_p":0e615})",  // read as NaN
           R"({"model":"a","mo+el":"b","max_tokens":5,"mamanskens":1e900000,"dm3\\messages":[],)"
           R"("messages":[{"content":"x"}]})",
       }) {
    const ApiError err = parse_err(Route::kChatCompletions, body);
    EXPECT_EQ(err.code, ErrorCode::kInvalidJson) << body;
    EXPECT_NE(err.message.find("out of range"), std::string::npos) << err.message;
  }
  parse_ok(Route::kChatCompletions, R"({"model":"m","messages":[{"content":"x"}],"temperature":1e308})");
}

TEST(MaxTokensCap, RewritesWhenAboveOrAbsentOnly) {
  auto above = parse_ok(Route::kCompletions, R"({"model":"m","prompt":"x","max_tokens":1000})");
  EXPECT_TRUE(apply_max_tokens_cap(above, 128));
  EXPECT_EQ(above.body().at("max_tokens").as_int64(), 128);
  EXPECT_EQ(above.info.max_tokens, 128);

  auto absent = parse_ok(Route::kCompletions, R"({"model":"m","prompt":"x"})");
  EXPECT_TRUE(apply_max_tokens_cap(absent, 128));
  EXPECT_EQ(absent.body().at("max_tokens").as_int64(), 128);

  auto below = parse_ok(Route::kCompletions, R"({"model":"m","prompt":"x","max_tokens":16})");
  EXPECT_FALSE(apply_max_tokens_cap(below, 128));
  EXPECT_EQ(below.body().at("max_tokens").as_int64(), 16);

  auto nulled = parse_ok(Route::kCompletions, R"({"model":"m","prompt":"x","max_tokens":null})");
  EXPECT_TRUE(apply_max_tokens_cap(nulled, 128));
  EXPECT_EQ(nulled.body().at("max_tokens").as_int64(), 128);
}

TEST(MaxTokensCap, CapsTheFieldTheChatClientUsed) {
  auto p = parse_ok(Route::kChatCompletions,
                    R"({"model":"m","max_completion_tokens":500,"messages":[{"role":"user","content":"x"}]})");
  EXPECT_TRUE(apply_max_tokens_cap(p, 100));
  EXPECT_EQ(p.body().at("max_completion_tokens").as_int64(), 100);
  EXPECT_FALSE(p.body().contains("max_tokens"));
  // Every other field survives the rewrite untouched.
  auto q = parse_ok(Route::kChatCompletions,
                    R"({"model":"m","temperature":0.5,"messages":[{"role":"user","content":"x"}]})");
  apply_max_tokens_cap(q, 100);
  EXPECT_EQ(q.body().at("temperature").as_double(), 0.5);
  EXPECT_EQ(q.body().at("messages").as_array().size(), 1u);
}

TEST(MaxTokensCap, LowersAMinTokensAboveTheCapTooOrVllmRefusesTheRequest) {
  // vLLM answers 400 "min_tokens must be less than or equal to max_tokens".
  auto above = parse_ok(Route::kChatCompletions,
                        R"({"model":"m","max_tokens":600,"min_tokens":600,"messages":[{"role":"user","content":"x"}]})");
  EXPECT_TRUE(apply_max_tokens_cap(above, 3));
  EXPECT_TRUE(above.document_changed());  // what goes out is the document
  EXPECT_EQ(above.body().at("max_tokens").as_int64(), 3);
  EXPECT_EQ(above.body().at("min_tokens").as_int64(), 3);
  // Absent max_tokens, a min_tokens below the cap: kept.
  auto below = parse_ok(Route::kCompletions, R"({"model":"m","prompt":"x","min_tokens":2})");
  EXPECT_TRUE(apply_max_tokens_cap(below, 3));
  EXPECT_EQ(below.body().at("max_tokens").as_int64(), 3);
  EXPECT_EQ(below.body().at("min_tokens").as_int64(), 2);
  // No min_tokens anywhere: the text is edited in place, no document.
  auto plain = parse_ok(Route::kCompletions, R"({"model":"m","prompt":"x","max_tokens":600})");
  EXPECT_TRUE(apply_max_tokens_cap(plain, 3));
  EXPECT_FALSE(plain.document_changed());
  EXPECT_NE(plain.text.find("\"max_tokens\":3"), std::string::npos);
}

// The one-pass scan must read a body exactly as the JSON document would:
// the last of duplicate keys, unescaped strings, fields nested under keys
// of the same name elsewhere ignored.
TEST(RequestParser, ReadsTheBodyAsTheDocumentWould) {
  // Text parts count, other parts do not: (4 + 8/4) + (4 + (4+9)/4 rounded up).
  EXPECT_EQ(parse_ok(Route::kChatCompletions,
                     R"({"model":"m","messages":[{"role":"user","content":"abcdefgh"},
                         {"role":"user","content":[{"type":"text","text":"abcd"},
                          {"type":"image_url","image_url":{"url":"xxxxxxxxxxxxxxxxxxxx"}},
                          {"type":"text","text":"abcdefghi"}]}]})")
                .info.prompt_tokens_estimate,
            6 + 8);
  // Duplicates: the last model, the last messages, the last content.
  const auto dup = parse_ok(Route::kChatCompletions,
                            R"({"model":"a","model":"bb","messages":[{"content":"x"}],
                                "messages":[{"content":"abcdefghijkl","content":"abcdefgh"},{"content":"abcd"}]})");
  EXPECT_EQ(dup.info.model, "bb");
  EXPECT_EQ(dup.info.prompt_tokens_estimate, (4 + 2) + (4 + 1));
  // Escapes: in keys and values, sizes in unescaped UTF-8 bytes (5 x 2).
  const auto esc = parse_ok(Route::kChatCompletions,
                            R"({"mod\u0065l":"m\u00e9","messages":[{"cont\u0065nt":"\u00e9\u00e9\u00e9\u00e9\u00e9"}]})");
  EXPECT_EQ(esc.info.model, "m\xc3\xa9");
  EXPECT_EQ(esc.info.prompt_tokens_estimate, 4 + 3);
  // A long escaped model name arrives in parts.
  const std::string long_name = "A" + std::string(9000, 'b');
  EXPECT_EQ(parse_ok(Route::kCompletions, R"({"model":"\u0041)" + std::string(9000, 'b') + R"(","prompt":"x"})")
                .info.model,
            long_name);
  // Same names deeper down are not the top-level fields.
  const auto nested = parse_ok(Route::kChatCompletions,
                               R"({"extra":{"model":"zz","stream":"no","messages":[]},"model":"m",
                                   "messages":[{"content":"abcd","meta":{"content":"xxxxxxxxxxxxxxxxxxxxxxxx","text":"y"}}]})");
  EXPECT_EQ(nested.info.model, "m");
  EXPECT_FALSE(nested.info.stream);
  EXPECT_EQ(nested.info.prompt_tokens_estimate, 4 + 1);
}

TEST(RequestParser, StreamOptionsAndMaxTokensForms) {
  const std::string messages = R"("messages":[{"content":"x"}])";
  auto usage = [&](std::string_view options) {
    return parse_ok(Route::kChatCompletions, R"({"model":"m",)" + std::string(options) + "," + messages + "}")
        .info.include_usage;
  };
  EXPECT_TRUE(usage(R"("stream_options":{"include_usage":true})"));
  EXPECT_FALSE(usage(R"("stream_options":{"include_usage":true},"stream_options":{})"));
  EXPECT_FALSE(usage(R"("stream_options":{"include_usage":true,"include_usage":"yes"})"));
  EXPECT_FALSE(usage(R"("stream_options":[{"include_usage":true}])"));
  auto max_tokens = [&](std::string_view value) {
    return parse_request(Route::kChatCompletions,
                         R"({"model":"m","max_tokens":)" + std::string(value) + "," + messages + "}");
  };
  EXPECT_EQ(max_tokens("null")->info.max_tokens, std::nullopt);
  EXPECT_EQ(max_tokens("18446744073709551615")->info.max_tokens, INT64_MAX);
  EXPECT_EQ(max_tokens("1")->info.max_tokens, 1);
  for (const char* bad : {"-3", "1e2", "true", "[1]", "{}"}) {
    ASSERT_FALSE(max_tokens(bad)) << bad;
    EXPECT_EQ(max_tokens(bad).error().param, "max_tokens") << bad;
  }
  EXPECT_EQ(parse_err(Route::kCompletions, R"({"model":"m","prompt":["a",null]})").param, "prompt");
  EXPECT_EQ(parse_err(Route::kCompletions, R"({"model":"m","prompt":[1.5]})").param, "prompt");
  EXPECT_EQ(parse_ok(Route::kCompletions, R"({"model":"m","prompt":["abcdefgh",[1,2,3],7,"ab"]})")
                .info.prompt_tokens_estimate,
            2 + 3 + 1 + 1);
}

TEST(RequestParser, RejectsWhatTheDocumentParserRejects) {
  EXPECT_TRUE(parse_ok(Route::kCompletions, "{\"model\":\"m\",\"prompt\":\"x\"} \n").info.model == "m");
  for (const std::string& bad : {std::string(R"({"model":"m","prompt":"x"} x)"), std::string("{}{}"),
                                std::string(R"({"model":"m","prompt":"\xff"})"),
                                R"({"model":"m","prompt":"x","deep":)" + std::string(200, '[') + std::string(200, ']') + "}",
                                std::string(R"({"model":"m",})"), std::string("")}) {
    EXPECT_EQ(parse_err(Route::kCompletions, bad).code, ErrorCode::kInvalidJson) << bad;
  }
  EXPECT_EQ(parse_err(Route::kCompletions, R"("just a string")").code, ErrorCode::kInvalidJson);
}

TEST(RequestParser, TheDocumentIsBuiltFromTheTextOnlyWhenAsked) {
  const std::string text = R"({"model":"m","max_tokens":500,"user":"u1","messages":[{"role":"user","content":"x"}]})";
  auto p = parse_ok(Route::kChatCompletions, text);
  EXPECT_EQ(p.text, text);
  EXPECT_EQ(p.info.user, "u1");
  EXPECT_EQ(p.body(), boost::json::parse(text).as_object());
  // A cap is written into the text in place: still no document to send.
  EXPECT_TRUE(apply_max_tokens_cap(p, 100));
  EXPECT_FALSE(p.document_changed());
  EXPECT_EQ(p.text, R"({"model":"m","max_tokens":100,"user":"u1","messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(p.body().at("max_tokens").as_int64(), 100);  // the document, built again, agrees
  // A change only the document can hold is flagged for serialising.
  auto q = parse_ok(Route::kChatCompletions, R"({"model":"m","max_tokens":null,"messages":[{"content":"x"}]})");
  EXPECT_TRUE(apply_max_tokens_cap(q, 100));
  EXPECT_TRUE(q.document_changed());
  EXPECT_EQ(q.body().at("max_tokens").as_int64(), 100);
}

TEST(RequestParser, ADroppedDocumentIsBuiltAgainAndOneWithItsOwnChangesIsKept) {
  const std::string text = R"({"model":"m","max_tokens":500,"messages":[{"role":"user","content":"x"}]})";
  auto p = parse_ok(Route::kChatCompletions, text);
  const boost::json::object first = p.body();
  p.drop_document();
  EXPECT_EQ(p.body(), first);
  EXPECT_EQ(p.text, text);
  // A change only the document holds is not in the text: dropping it would lose it.
  auto q = parse_ok(Route::kChatCompletions, R"({"model":"m","max_tokens":null,"messages":[{"content":"x"}]})");
  ASSERT_TRUE(apply_max_tokens_cap(q, 100));
  q.drop_document();
  EXPECT_TRUE(q.document_changed());
  EXPECT_EQ(q.body().at("max_tokens").as_int64(), 100);
  rewrite_model(q, "m2");
  q.drop_document();
  EXPECT_EQ(q.body().at("model").as_string(), "m2");
}

}  // namespace
}  // namespace arbiter

namespace arbiter {
namespace {

TEST(RewriteModel, TheBodyAndInfoNameTheNewModelAndACapStillApplies) {
  auto parsed = parse_request(Route::kChatCompletions,
                              R"({"model":"m1","messages":[{"role":"user","content":"hi"}],"max_tokens":500})");
  ASSERT_TRUE(parsed);
  rewrite_model(*parsed, "m1-awq");
  EXPECT_TRUE(parsed->document_changed());
  EXPECT_EQ(parsed->info.model, "m1-awq");
  EXPECT_TRUE(apply_max_tokens_cap(*parsed, 100));
  const auto sent = boost::json::parse(boost::json::serialize(parsed->body())).as_object();
  EXPECT_EQ(sent.at("model").as_string(), "m1-awq");
  EXPECT_EQ(sent.at("max_tokens").as_int64(), 100);
  EXPECT_EQ(sent.at("messages").as_array().size(), 1u);
}

// A body nested `levels` deep (the top object counts as one).
std::string nested(int levels) {
  return R"({"model":"m","prompt":"x","tools":)" + std::string(levels - 1, '[') + std::string(levels - 1, ']') + "}";
}

// Issue 16, edge item 6: deep tool schemas pass 32 levels; the limit is
// limits.max_json_depth, 128 by default. Before, 33 levels were refused.
TEST(RequestParser, NestingUpToTheConfiguredDepthIsAccepted) {
  EXPECT_TRUE(parse_request(Route::kCompletions, nested(40)));
  EXPECT_TRUE(parse_request(Route::kCompletions, nested(128)));
  EXPECT_EQ(parse_err(Route::kCompletions, nested(129)).code, ErrorCode::kInvalidJson);
  EXPECT_FALSE(parse_request(Route::kCompletions, nested(40), 32));
  auto deep = parse_request(Route::kCompletions, nested(300), 1000);
  ASSERT_TRUE(deep);
  EXPECT_EQ(deep->body().at("model"), "m");  // the document is built within the same depth
}

// Engines (Python's json) accept a lone escaped surrogate; Boost.JSON does
// not. It is read as U+FFFD, and the text goes out as the client sent it.
TEST(RequestParser, LoneEscapedSurrogatesAreAccepted) {
  for (const std::string prompt : {R"(\ud800)", R"(a\udbffb)", R"(\udc00 x)", R"(\ud800\ud800)",
                                   R"(\ud800\u0041)", R"(x\ud83d)"}) {
    const std::string body = R"({"model":"m","prompt":")" + prompt + R"(","max_tokens":5})";
    auto p = parse_request(Route::kCompletions, body);
    ASSERT_TRUE(p) << prompt << ": " << p.error().message;
    EXPECT_EQ(p->text, body);
    EXPECT_EQ(p->info.max_tokens, 5);
    EXPECT_NE(p->body().at("prompt").as_string().find("\xef\xbf\xbd"), boost::json::string::npos) << prompt;
  }
  // A valid pair is a character, and an escaped backslash is no escape.
  const auto pair = parse_ok(Route::kCompletions, R"({"model":"m","prompt":"\ud83d\ude00"})");
  EXPECT_EQ(pair.body().at("prompt").as_string(), "\xf0\x9f\x98\x80");
  const auto literal = parse_ok(Route::kCompletions, R"({"model":"m","prompt":"\\ud800"})");
  EXPECT_EQ(literal.body().at("prompt").as_string(), "\\ud800");
  // A cap is still written in place.
  auto capped = parse_request(Route::kCompletions, R"({"model":"m","prompt":"\udc00","max_tokens":500})");
  ASSERT_TRUE(capped);
  ASSERT_TRUE(apply_max_tokens_cap(*capped, 7));
  EXPECT_EQ(capped->text, R"({"model":"m","prompt":"\udc00","max_tokens":7})");
  // Other broken escapes are still refused.
  EXPECT_EQ(parse_err(Route::kCompletions, R"({"model":"m","prompt":"\ud80"})").code, ErrorCode::kInvalidJson);
}

// Issue 16, edge item 6: a max_tokens of 2^63 - 1 (or more, read as 2^63 - 1)
// in an uncapped class must not overflow the estimate.
TEST(RequestParser, CostEstimateSaturatesForAHugeMaxTokens) {
  for (const std::string max : {"9223372036854775807", "18446744073709551615", "9223372036854775806"}) {
    const auto p = parse_ok(Route::kCompletions, R"({"model":"m","prompt":"abcdefgh","max_tokens":)" + max + "}");
    EXPECT_EQ(p.info.cost_estimate(), INT64_MAX) << max;
  }
  EXPECT_EQ(parse_ok(Route::kCompletions, R"({"model":"m","prompt":"abcdefgh","max_tokens":10})").info.cost_estimate(),
            12);
}

// Each of n answers (and each prompt of a /v1/completions batch) runs up to
// max_tokens: the estimate the quota reserves and the scheduler charges
// counted one answer, so n: 16 took sixteen times what it was charged.
TEST(RequestParser, TheEstimateCountsEveryAnswerAskedFor) {
  const auto chat = [](const std::string& more) {
    return parse_ok(Route::kChatCompletions,
                    R"({"model":"m","messages":[{"role":"user","content":"12345678"}],"max_tokens":100)" + more + "}");
  };
  EXPECT_EQ(chat("").info.choices, 1);
  EXPECT_EQ(chat("").info.cost_estimate(), 6 + 100);
  EXPECT_EQ(chat(R"(,"n":null)").info.choices, 1);
  EXPECT_EQ(chat(R"(,"n":4)").info.choices, 4);
  EXPECT_EQ(chat(R"(,"n":4)").info.cost_estimate(), 6 + 400);
  // Without max_tokens, the default estimate for each.
  EXPECT_EQ(parse_ok(Route::kChatCompletions, R"({"model":"m","n":3,"messages":[{"content":"12345678"}]})")
                .info.cost_estimate(),
            6 + 3 * kDefaultOutputEstimate);

  const auto batch = [](const std::string& prompt, const std::string& more = "") {
    return parse_ok(Route::kCompletions, R"({"model":"m","max_tokens":10,"prompt":)" + prompt + more + "}").info;
  };
  EXPECT_EQ(batch(R"("abcd")").choices, 1);
  EXPECT_EQ(batch(R"(["abcd","efgh","ijkl"])").choices, 3);
  EXPECT_EQ(batch(R"(["abcd","efgh","ijkl"])", R"(,"n":2)").choices, 6);
  EXPECT_EQ(batch(R"(["abcd","efgh","ijkl"])", R"(,"n":2)").cost_estimate(), 3 + 60);
  EXPECT_EQ(batch("[1,2,3]").choices, 1);  // one prompt as token ids
  EXPECT_EQ(batch("[[1,2],[3],[4,5,6]]").choices, 3);
  EXPECT_EQ(batch("[]").choices, 1);

  // Saturates rather than overflows.
  EXPECT_EQ(chat(R"(,"n":9223372036854775807)").info.cost_estimate(), INT64_MAX);
  EXPECT_EQ(chat(R"(,"n":18446744073709551615)").info.cost_estimate(), INT64_MAX);

  for (const char* n : {"0", "-1", "1.5", "\"2\"", "true", "[2]"}) {
    EXPECT_EQ(parse_err(Route::kChatCompletions,
                        std::string(R"({"model":"m","messages":[{"content":"x"}],"n":)") + n + "}")
                  .param,
              "n")
        << n;
  }
}

}  // namespace
}  // namespace arbiter

namespace arbiter {
namespace {

TEST(RequestParser, AnEmbeddingsInputIsItsPromptAndNothingIsGenerated) {
  auto r = parse_request(Route::kEmbeddings, R"({"model":"e","input":["one two three four", "five"],"stream":true,"max_tokens":5})");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->info.route, Route::kEmbeddings);
  EXPECT_FALSE(r->info.stream);  // an embedding is never streamed
  EXPECT_EQ(r->info.choices, 1);
  EXPECT_GT(r->info.prompt_tokens_estimate, 0);
  EXPECT_EQ(r->info.cost_estimate(), r->info.prompt_tokens_estimate);
  EXPECT_FALSE(apply_max_tokens_cap(*r, 1));
  EXPECT_NE(r->info.prompt_at, std::string::npos);
  // `input` is required, in a completion's forms; a `prompt` is not it.
  auto missing = parse_request(Route::kEmbeddings, R"({"model":"e","prompt":"x"})");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().param, "input");
  EXPECT_FALSE(parse_request(Route::kEmbeddings, R"({"model":"e","input":{}})"));
  // A completion's `input` is just another field.
  auto completion = parse_request(Route::kCompletions, R"({"model":"m","input":"x","prompt":"hello"})");
  ASSERT_TRUE(completion);
  EXPECT_EQ(route_from_path("/v1/embeddings"), Route::kEmbeddings);
  EXPECT_EQ(route_path(Route::kEmbeddings), "/v1/embeddings");
}

// The Responses API: `input` a string or items, `instructions`,
// `max_output_tokens`; errors name their field; a class cap writes
// max_output_tokens.
TEST(RequestParser, ResponsesFields) {
  auto p = parse_ok(Route::kResponses,
                    R"({"model":"m","instructions":"12345678","stream":true,"max_output_tokens":40,
                        "input":[{"role":"user","content":[{"type":"input_text","text":"abcdabcd"}]}]})");
  EXPECT_EQ(p.info.route, Route::kResponses);
  EXPECT_EQ(p.info.model, "m");
  EXPECT_TRUE(p.info.stream);
  EXPECT_EQ(p.info.max_tokens, 40);
  EXPECT_EQ(p.info.prompt_tokens_estimate, 4);  // 16 characters of text: the item's keys and types not counted
  EXPECT_EQ(p.info.choices, 1);
  EXPECT_TRUE(apply_max_tokens_cap(p, 16));
  EXPECT_EQ(p.body().at("max_output_tokens").as_int64(), 16);
  EXPECT_FALSE(p.body().contains("max_tokens"));
  EXPECT_TRUE(p.document_changed());
  EXPECT_EQ(parse_ok(Route::kResponses, R"({"model":"m","input":"hello there"})").info.prompt_tokens_estimate, 3);
}

TEST(RequestParser, ResponsesErrorsNameTheirField) {
  EXPECT_EQ(parse_err(Route::kResponses, R"({"model":"m"})").param, "input");
  EXPECT_EQ(parse_err(Route::kResponses, R"({"model":"m","input":[]})").param, "input");
  EXPECT_EQ(parse_err(Route::kResponses, R"({"model":"m","input":5})").param, "input");
  EXPECT_EQ(parse_err(Route::kResponses, R"({"input":"x"})").param, "model");
  EXPECT_EQ(parse_err(Route::kResponses, R"({"model":"m","input":"x","max_output_tokens":0})").param,
            "max_output_tokens");
  EXPECT_EQ(parse_err(Route::kResponses, R"({"model":"m","input":"x","stream":"yes"})").param, "stream");
  EXPECT_EQ(parse_err(Route::kResponses, R"({"model":"m","input":"x","instructions":3})").param, "instructions");
  EXPECT_EQ(parse_err(Route::kResponses, R"([1])").code, ErrorCode::kInvalidJson);
  EXPECT_EQ(parse_err(Route::kResponses, R"({"model":)").code, ErrorCode::kInvalidJson);
}

}  // namespace
}  // namespace arbiter
