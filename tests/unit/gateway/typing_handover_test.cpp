// The typing offer's claim (gateway/relay/typing_handover): the rule against
// the text published so far, once, and never after the run closed.
#include "gateway/relay/typing_handover.hpp"

#include <gtest/gtest.h>

namespace arbiter {
namespace {

struct Offers {
  net::io_context here;
  net::io_context there;
  TypingOffer offer(std::string prompt, net::io_context& ctx, int64_t max_tokens = 64) {
    return TypingOffer(std::move(prompt), "m1", max_tokens, "temperature=0.2\n", true, &ctx, ctx.get_executor());
  }
};

TEST(TypingOffer, ClaimsWhenTheTypedTextStartsWhatItsClientHas) {
  Offers o;
  TypingOffer old = o.offer("def f(", o.here);
  old.publish("x, y", false);
  EXPECT_EQ(old.try_claim(o.offer("def f(x, z", o.here)), TypingOutcome::kNotGenerated);
  EXPECT_EQ(old.try_claim(o.offer("class A", o.here)), TypingOutcome::kNotExtension);
  EXPECT_EQ(old.try_claim(o.offer("def f(x", o.here, 32)), TypingOutcome::kShape);  // a smaller budget
  EXPECT_FALSE(old.claimed());
  EXPECT_EQ(old.try_claim(o.offer("def f(x,", o.here)), TypingOutcome::kHandedOver);
  EXPECT_EQ(old.claimed(), std::optional<std::size_t>(2));
  EXPECT_TRUE(old.heir_on(&o.here));
  // Claimed once: a later keystroke finds nothing to take.
  EXPECT_EQ(old.try_claim(o.offer("def f(x, y", o.here)), TypingOutcome::kNotEligible);
}

TEST(TypingOffer, TextNotYetSentCannotBeTypedThrough) {
  Offers o;
  TypingOffer old = o.offer("a", o.here);
  EXPECT_EQ(old.try_claim(o.offer("ab", o.here)), TypingOutcome::kNotGenerated);
  old.publish("b", false);
  old.publish("c", false);
  EXPECT_EQ(old.try_claim(o.offer("abc", o.here)), TypingOutcome::kHandedOver);
}

TEST(TypingOffer, ATlsUpstreamStaysOnItsThread) {
  Offers o;
  TypingOffer old = o.offer("a", o.here);
  old.publish("bc", true);
  EXPECT_EQ(old.try_claim(o.offer("ab", o.there)), TypingOutcome::kTlsThread);
  EXPECT_EQ(old.try_claim(o.offer("ab", o.here)), TypingOutcome::kHandedOver);
}

TEST(TypingOffer, AClosedRunOrAnUnclaimedOneIsNotTaken) {
  Offers o;
  TypingOffer old = o.offer("a", o.here);
  old.publish("bc", false);
  EXPECT_EQ(old.try_claim(o.offer("ab", o.there)), TypingOutcome::kHandedOver);
  old.unclaim();
  EXPECT_FALSE(old.claimed());
  old.close();
  EXPECT_EQ(old.try_claim(o.offer("ab", o.there)), TypingOutcome::kNotEligible);
}

TEST(TypingOffer, TheHeirsFirstEventCarriesTheTextAfterWhatWasTyped) {
  Checkpoint c;
  c.id = "cmpl-1";
  c.created = 7;
  c.model = "m1";
  const std::string event = completion_text_event(c, "lo wor\"ld");
  EXPECT_EQ(event,
            "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":7,\"model\":\"m1\",\"choices\":[{"
            "\"index\":0,\"text\":\"lo wor\\\"ld\",\"logprobs\":null,\"finish_reason\":null}]}\n\n");
}

}  // namespace
}  // namespace arbiter
