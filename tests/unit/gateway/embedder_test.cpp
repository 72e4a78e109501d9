// What of a prompt the cache's semantic mode embeds, and what it requires to
// be the same (gateway/stages/cache/embedder.hpp): a chat's last message by
// meaning, the messages before it exactly.
#include "gateway/stages/cache/embedder.hpp"

#include <gtest/gtest.h>

namespace arbiter {
namespace {

TEST(EmbeddedPrompt, AChatsLastMessageIsEmbeddedAndTheMessagesBeforeItMustMatch) {
  const auto a = embedded_prompt(
      R"([{"role":"system","content":"Answer from the manual."},{"role":"user","content":"How do I reset it?"}])");
  EXPECT_EQ(a.text, "How do I reset it?");
  const auto same_context = embedded_prompt(
      R"([{"role":"system","content":"Answer from the manual."},{"role":"user","content":"How is it reset?"}])");
  EXPECT_EQ(same_context.text, "How is it reset?");
  EXPECT_EQ(same_context.context, a.context);
  const auto other_context = embedded_prompt(
      R"([{"role":"system","content":"Answer from the other manual."},{"role":"user","content":"How do I reset it?"}])");
  EXPECT_EQ(other_context.text, a.text);
  EXPECT_NE(other_context.context, a.context);  // the same question about another text: another scope
  // A multi-part message: its text parts, one a line.
  const auto parts = embedded_prompt(
      R"([{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"Be brief."}]}])");
  EXPECT_EQ(parts.text, "What is this?\nBe brief.");
  // A single message has nothing before it: every such prompt shares a context.
  EXPECT_EQ(embedded_prompt(R"([{"role":"user","content":"Hi there"}])").context,
            embedded_prompt(R"([{"role":"user","content":"Hello"}])").context);
}

TEST(EmbeddedPrompt, ACompletionsPromptIsEmbeddedWhole) {
  EXPECT_EQ(embedded_prompt(R"("Once upon a time")").text, "Once upon a time");
  EXPECT_EQ(embedded_prompt(R"("Once upon a time")").context, 0u);
  EXPECT_EQ(embedded_prompt(R"(["first", "second"])").text, "first\nsecond");
  EXPECT_EQ(embedded_prompt("[1,2,3]").text, "[1,2,3]");  // token ids: their JSON
  EXPECT_EQ(embedded_prompt("not json").text, "not json");
}

}  // namespace
}  // namespace arbiter
