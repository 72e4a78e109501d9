// Typing through, live (issue 12), against arbiter-sim: a keystroke whose
// prompt is the running completion's prompt plus exactly the start of what
// it has generated takes over that generation (the engine runs it once);
// any other keystroke aborts it and starts anew, as supersede always did.
// The hand-over does not wait for the engine's next token.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "integration/sim_harness.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"
#include "support/harness.hpp"  // describe_output
#include "support/audit_trail.hpp"

namespace arbiter::test::typing_through_test {
namespace {

constexpr int kTokens = 100;  // ~1 s on the simulated A100 at batch 1
constexpr const char* kPrompt = "def fibonacci(n):\n    ";

GatewayConfig typing_config(uint16_t sim_port, unsigned threads = 2) {
  GatewayConfig c;
  c.backend_ports = {sim_port};
  c.threads = threads;
  c.extra =
      "classes:\n"
      "  - {name: completion, match: {routes: [/v1/completions]}, debounce_ms: 0, typing_through: true}\n"
      "  - {name: chat, match: {routes: [/v1/chat/completions]}}\n";
  return c;
}

// A completion of `prompt` (streamed unless `stream` is false), keyed by
// the editor it comes from.
HttpRequest keystroke(const std::string& prompt, bool stream = true) {
  const boost::json::object body{{"model", "m1"},         {"prompt", prompt},  {"max_tokens", kTokens},
                                 {"min_tokens", kTokens}, {"temperature", 0.2}, {"stream", stream}};
  HttpRequest r = sim_post("/v1/completions", boost::json::serialize(body));
  r.headers.push_back(bearer(kAlphaKey));
  r.headers.emplace_back("x-arbiter-supersede-key", "editor-1");
  return r;
}

// The text of the events in `events` (whole SSE events).
std::string events_text(const std::vector<std::string>& events) {
  std::string joined;
  for (const auto& e : events) joined += e;
  return stream_text(sse_payloads(joined));
}

// What the older client got: some text, then the superseded error event.
std::string expect_superseded(HttpConnection& older) {
  older.read_rest(Millis(20'000));
  auto payloads = sse_payloads(older.body());
  EXPECT_FALSE(payloads.empty());
  if (payloads.empty()) return {};
  const boost::json::object last = payloads.back();
  payloads.pop_back();
  EXPECT_TRUE(last.contains("error")) << older.body();
  if (last.contains("error")) {
    EXPECT_EQ(last.at("error").at("code"), "superseded");
  }
  return stream_text(payloads);
}

double typing_metric(GatewayProcess& gateway, const std::string& outcome) {
  return gateway
      .wait_for_metric("arbiter_typing_through_total", [](double v) { return v >= 1; }, Millis(3'000),
                       {{"class", "completion"}, {"outcome", outcome}})
      .value_or(0);
}

// An engine, the gateway in front of it (`threads` I/O threads) and an
// older keystroke's stream, running once start() has read its first four
// events; `typed`: the first two words of that suggestion.
struct RunningSuggestion {
  SimProcess sim{std::vector<std::string>{"--profile", "llama-8b-a100", "--model", "m1"}};
  GatewayProcess gateway;
  HttpConnection older;
  std::string typed;
  std::string older_id;  // its x-request-id

  explicit RunningSuggestion(unsigned threads = 2)
      : gateway(typing_config(sim.port(), threads).to_yaml()), older(gateway.port()) {}

  ::testing::AssertionResult start() {
    older.send(keystroke(kPrompt));
    const HttpResponse head = older.read_head();
    if (head.status != 200) {
      return ::testing::AssertionFailure() << "status " << head.status << "\n" << describe_output(gateway);
    }
    older_id = head.header("x-request-id").value_or("?");
    const std::vector<std::string> first = older.read_events(4);
    if (first.size() < 4) return ::testing::AssertionFailure() << "fewer than 4 events: " << older.body();
    typed = events_text({first[0], first[1]});
    if (typed.empty()) return ::testing::AssertionFailure() << "no text in " << older.body();
    return ::testing::AssertionSuccess();
  }
};

// With two I/O threads the two connections land on different ones (round
// robin) and the upstream socket moves between them; with one it stays.
void expect_handed_over(unsigned threads) {
  RunningSuggestion run(threads);
  ASSERT_TRUE(run.start());
  auto& [sim, gateway, older, typed, older_id] = run;

  // The user types the first two words of the suggestion.
  HttpConnection newer(gateway.port());
  newer.send(keystroke(kPrompt + typed));
  ASSERT_EQ(newer.read_head().status, 200) << describe_output(gateway);
  newer.read_rest(Millis(20'000));
  ASSERT_TRUE(newer.complete()) << newer.body();
  EXPECT_TRUE(newer.body().ends_with("data: [DONE]\n\n")) << newer.body();
  const std::string rest = stream_text(sse_payloads(newer.body()));

  // One generation, served in two parts: the older client's, up to the
  // hand-over, and the newer one's, after what was typed.
  const std::string older_text = expect_superseded(older);
  const std::string whole = typed + rest;
  EXPECT_TRUE(whole.starts_with(older_text)) << "older: " << older_text << "\nwhole: " << whole;
  EXPECT_EQ(word_count(whole), static_cast<std::size_t>(kTokens)) << whole;
  EXPECT_EQ(sim.metric("arbiter_sim_requests_received_total").value_or(-1), 1) << "the engine ran it once";
  EXPECT_EQ(sim.metric("arbiter_sim_requests_aborted_total").value_or(0), 0);
  EXPECT_EQ(typing_metric(gateway, "handed_over"), 1);
  // The audit trail: the newer request inherited the older one's generation.
  const std::string inherited = "from=" + older_id;
  bool found = false;
  const std::string trail = audit_trail_with(gateway, inherited, found);
  EXPECT_TRUE(found) << "no inherited row " << inherited << " in " << trail;
  EXPECT_NE(trail.find("placement=inherited"), std::string::npos) << trail;
}

TEST(TypingThrough, TypedStartOfTheSuggestionTakesOverTheRunningGeneration) { expect_handed_over(2); }

TEST(TypingThrough, HandOverOnOneThreadKeepsTheConnectionWhereItIs) { expect_handed_over(1); }

// The claim wakes the older request's relay from its wait for the engine's
// next bytes: the heir hears of its inheritance at once, not one engine
// token later. Here the engine is stopped (SIGSTOP) once the older client
// has its first tokens, so no next token comes until it resumes: the heir's
// first event (the text generated after what was typed) must arrive while
// it is stopped. Before the wake it came only after SIGCONT.
TEST(TypingThrough, TheHandOverDoesNotWaitForTheEnginesNextToken) {
  RunningSuggestion run;
  ASSERT_TRUE(run.start());
  auto& [sim, gateway, older, typed, older_id] = run;
  sim.child().signal(SIGSTOP);

  HttpConnection newer(gateway.port());
  newer.send(keystroke(kPrompt + typed));
  std::vector<std::string> preamble;
  try {
    EXPECT_EQ(newer.read_head(Millis(10'000)).status, 200);
    preamble = newer.read_events(1, Millis(10'000));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "no hand-over while the engine was stopped: " << e.what();
  }
  sim.child().signal(SIGCONT);
  ASSERT_EQ(preamble.size(), 1u) << "the heir's first event waited for the engine's next token";
  // Its text is what the older client had beyond the typed words.
  EXPECT_FALSE(events_text(preamble).empty());

  newer.read_rest(Millis(20'000));
  ASSERT_TRUE(newer.complete()) << newer.body();
  const std::string whole = typed + stream_text(sse_payloads(newer.body()));
  EXPECT_EQ(word_count(whole), static_cast<std::size_t>(kTokens)) << whole;
  expect_superseded(older);
  EXPECT_EQ(sim.metric("arbiter_sim_requests_received_total").value_or(-1), 1) << "the engine ran it once";
  EXPECT_EQ(typing_metric(gateway, "handed_over"), 1);
}

// A client that does not stream: the engine streams to the gateway, which
// knows the text generated so far, and the heir gets the rest whole.
TEST(TypingThrough, ACompletionSentWholeIsTypedThroughToo) {
  SimProcess sim{std::vector<std::string>{"--profile", "llama-8b-a100", "--model", "m1"}};
  GatewayProcess gateway(typing_config(sim.port()).to_yaml());
  // The engine's text for this prompt is the same every time: its first two
  // words are what the user will type.
  const HttpResponse direct = http_call(sim.port(), keystroke(kPrompt, false), Millis(20'000));
  ASSERT_EQ(direct.status, 200) << direct.body;
  const std::string suggestion(boost::json::parse(direct.body).at("choices").at(0).at("text").as_string());
  // Its tokens are " word": the first two end where the third's space is.
  const std::size_t third = suggestion.find(' ', suggestion.find(' ', 1) + 1);
  ASSERT_NE(third, std::string::npos) << suggestion;
  const std::string typed = suggestion.substr(0, third);
  ASSERT_EQ(word_count(typed), 2u) << typed;
  const double steps = sim.metric("arbiter_sim_steps_total").value_or(0);

  HttpConnection older(gateway.port());
  older.send(keystroke(kPrompt, false));
  // A few tokens generated (and relayed to the gateway over loopback).
  sim.wait_for_metric("arbiter_sim_steps_total", [&](double v) { return v >= steps + 10; }, Millis(10'000));

  HttpConnection newer(gateway.port());
  newer.send(keystroke(kPrompt + typed, false));
  const HttpResponse head = newer.read_head(Millis(20'000));
  ASSERT_EQ(head.status, 200) << describe_output(gateway);
  newer.read_rest(Millis(20'000));
  ASSERT_TRUE(newer.complete()) << newer.body();
  const boost::json::value answer = boost::json::parse(newer.body());
  const std::string rest(answer.at("choices").at(0).at("text").as_string());
  EXPECT_EQ(typed + rest, suggestion) << "one generation: what was typed, then the rest";
  EXPECT_EQ(answer.at("object"), "text_completion");

  EXPECT_EQ(older.read_head(Millis(20'000)).status, 409);
  older.read_rest(Millis(5'000));
  EXPECT_EQ(boost::json::parse(older.body()).at("error").at("code"), "superseded") << older.body();
  EXPECT_EQ(sim.metric("arbiter_sim_requests_received_total").value_or(-1), 2) << "the older keystroke's generation ran once";
  EXPECT_EQ(sim.metric("arbiter_sim_requests_aborted_total").value_or(0), 0);
  EXPECT_EQ(typing_metric(gateway, "handed_over"), 1);
}

TEST(TypingThrough, AnythingElseTypedAbortsAndStartsAnew) {
  RunningSuggestion run;
  ASSERT_TRUE(run.start());
  auto& [sim, gateway, older, typed, older_id] = run;

  // Typed something the suggestion does not start with.
  HttpConnection newer(gateway.port());
  newer.send(keystroke(std::string(kPrompt) + "return 0 #"));
  ASSERT_EQ(newer.read_head().status, 200) << describe_output(gateway);
  newer.read_rest(Millis(20'000));
  ASSERT_TRUE(newer.complete()) << newer.body();
  EXPECT_EQ(word_count(stream_text(sse_payloads(newer.body()))), static_cast<std::size_t>(kTokens));
  expect_superseded(older);
  EXPECT_EQ(sim.metric("arbiter_sim_requests_received_total").value_or(-1), 2);
  EXPECT_EQ(sim.wait_for_metric("arbiter_sim_requests_aborted_total", [](double v) { return v >= 1; }, Millis(3'000)),
            1)
      << "the older generation must be aborted in the engine";
  EXPECT_EQ(typing_metric(gateway, "not_generated"), 1);
}

}  // namespace
}  // namespace arbiter::test::typing_through_test
