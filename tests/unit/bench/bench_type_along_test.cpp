// Live mode's typing along (bench/type_along.hpp): a keystroke that types
// along the previous one goes out with exactly that one's prompt plus the
// text arbiter-sim generates for it, read here from the simulator's own
// request parser, so the prediction cannot drift from what the engine does.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "bench/live_request.hpp"
#include "bench/scenario_yaml.hpp"
#include "bench/type_along.hpp"
#include "engine/generated_text.hpp"
#include "engine/profile.hpp"
#include "sim/sim_request.hpp"

namespace arbiter::bench {
namespace {

namespace json = boost::json;

constexpr uint64_t kKey = 0xfeed;
constexpr uint64_t kServerSeed = 5;

class TypeAlongTest : public ::testing::Test {
 protected:
  TypeAlongTest() : along_({.model = "m", .seed = kServerSeed}) {
    auto s = load_scenario(ARBITER_SOURCE_DIR "/bench/scenarios/smoke.yaml");
    EXPECT_TRUE(s) << s.error();
    scenario_ = *s;
    options_.model = "m";
    options_.text_salt = 99;
    config_ = engine::find_profile("tiny")->config;
  }

  // Keystroke `id` of the burst; `extends`: the text it types along (0: none).
  RequestSpec keystroke(uint64_t id, uint64_t extends, uint32_t unique, uint32_t output) const {
    RequestSpec r;
    r.id = id;
    r.klass = 1;  // smoke.yaml's completion: typing
    r.prefix = {.key = 77, .tokens = 40};
    r.unique_tokens = unique;
    r.output_tokens = output;
    r.max_tokens = 128;
    r.supersede_key = kKey;
    r.text = 1000 + id;
    r.extends = extends;
    r.typed_tokens = extends != 0 ? 1 : 0;
    return r;
  }

  Outgoing send(const RequestSpec& spec, std::string_view received = {}) {
    return along_.next(spec, own_keystroke(spec, options_), received);
  }

  // What arbiter-sim makes of the request live mode would send.
  sim::SimRequest as_sim_sees(const RequestSpec& spec, const Keystroke& k) const {
    const sim::RequestLimits limits{.model = "m", .config = &config_, .output_mean_tokens = 0, .seed = kServerSeed};
    auto r = sim::parse_sim_request(Route::kCompletions, request_body(scenario_, spec, options_, &k), limits);
    EXPECT_TRUE(r) << r.error().message;
    return *r;
  }

  static std::string word(uint64_t seed, uint32_t i) { return std::string(engine::token_word(seed, i)); }

  Scenario scenario_;
  LiveRequestOptions options_;
  engine::EngineConfig config_;
  TypeAlong along_;
};

TEST_F(TypeAlongTest, TypedAlongIsTheExtendedPromptPlusTheSimsFirstToken) {
  const RequestSpec first = keystroke(1, 0, 20, 30);
  const Outgoing a = send(first);
  EXPECT_EQ(a.typed, Typed::kNo);
  EXPECT_EQ(a.keystroke.prompt, own_keystroke(first, options_).prompt);
  const sim::SimRequest engine_a = as_sim_sees(first, a.keystroke);

  // Nothing received yet: the text the simulator will generate.
  const RequestSpec second = keystroke(2, first.text, 21, 29);
  const Outgoing b = send(second);
  EXPECT_EQ(b.typed, Typed::kPredicted);
  EXPECT_EQ(b.keystroke.prompt, a.keystroke.prompt + word(engine_a.answers[0].text_seed, 0));
  // The same parameters as the keystroke it extends (the gateway's rule).
  const json::object body_a = json::parse(request_body(scenario_, first, options_, &a.keystroke)).as_object();
  const json::object body_b = json::parse(request_body(scenario_, second, options_, &b.keystroke)).as_object();
  EXPECT_EQ(body_b.at("prompt").as_string(), b.keystroke.prompt);
  EXPECT_EQ(body_b.at("max_tokens"), body_a.at("max_tokens"));
  EXPECT_EQ(body_b.at("min_tokens"), body_a.at("min_tokens"));
  EXPECT_EQ(body_a.at("max_tokens").as_int64(), 30);

  // Typing along the heir: it continues the generation the heir took over.
  const RequestSpec third = keystroke(3, second.text, 22, 28);
  const Outgoing c = send(third);
  EXPECT_EQ(c.typed, Typed::kPredicted);
  EXPECT_EQ(c.keystroke.prompt, b.keystroke.prompt + word(engine_a.answers[0].text_seed, 1));
}

TEST_F(TypeAlongTest, ReceivedTextWinsAndTellsWhichGenerationRuns) {
  const RequestSpec first = keystroke(1, 0, 20, 30);
  const Outgoing a = send(first);
  const uint64_t seed_a = as_sim_sees(first, a.keystroke).answers[0].text_seed;
  // What the client received matches the prediction: typed as predicted.
  const RequestSpec second = keystroke(2, first.text, 21, 29);
  const Outgoing b = send(second, word(seed_a, 0) + word(seed_a, 1));
  EXPECT_EQ(b.typed, Typed::kReceived);
  EXPECT_EQ(b.keystroke.prompt, a.keystroke.prompt + word(seed_a, 0));

  // The second keystroke ran anew (refused): its client got its own
  // prompt's answer, and that is what is typed, and continued after.
  const uint64_t seed_b = as_sim_sees(second, b.keystroke).answers[0].text_seed;
  ASSERT_NE(word(seed_b, 0), word(seed_a, 1));
  const RequestSpec third = keystroke(3, second.text, 22, 28);
  const Outgoing c = send(third, word(seed_b, 0));
  EXPECT_EQ(c.typed, Typed::kReceived);
  EXPECT_EQ(c.keystroke.prompt, b.keystroke.prompt + word(seed_b, 0));
  const Outgoing d = send(keystroke(4, third.text, 23, 27));
  EXPECT_EQ(d.typed, Typed::kPredicted);
  EXPECT_EQ(d.keystroke.prompt, c.keystroke.prompt + word(seed_b, 1));
}

TEST_F(TypeAlongTest, AnotherBurstOfTheKeyInBetweenAndAKeystrokeThatEnded) {
  const RequestSpec first = keystroke(1, 0, 20, 30);
  const Outgoing a = send(first);
  // The developer's next burst starts while this one is still going.
  send(keystroke(2, 0, 50, 12));
  // The first keystroke's client is done: what it received is what is typed.
  along_.ended(first, " sky sea");
  const RequestSpec third = keystroke(3, first.text, 21, 29);
  ASSERT_EQ(along_.extended(third), std::optional<uint64_t>(1));
  const Outgoing c = send(third, " not what the first one got");
  EXPECT_EQ(c.typed, Typed::kReceived);
  EXPECT_EQ(c.keystroke.prompt, a.keystroke.prompt + " sky");
  EXPECT_EQ(c.keystroke.budget.max_tokens, 30u);
}

TEST_F(TypeAlongTest, AlongAKeystrokeNeverSentGoesOutWithItsOwnPrompt) {
  send(keystroke(1, 0, 20, 30));
  // Keystroke 2 was held back by the client (debounce); 3 types along it.
  const RequestSpec third = keystroke(3, 1002, 22, 28);
  const Outgoing c = send(third, " the");
  EXPECT_EQ(c.typed, Typed::kNotSent);
  EXPECT_EQ(c.keystroke.prompt, own_keystroke(third, options_).prompt);
  EXPECT_EQ(c.keystroke.budget.max_tokens, 28u);
}

}  // namespace
}  // namespace arbiter::bench
