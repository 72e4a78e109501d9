// The text-to-token rule, chained block hashes, output lengths and profiles.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "engine/generation.hpp"
#include "engine/profile.hpp"
#include "engine/prompt.hpp"

namespace arbiter::engine {
namespace {

TEST(EnginePrompt, FourCharactersPerTokenRoundedUpAtLeastOne) {
  EXPECT_EQ(count_tokens(""), 1u);
  EXPECT_EQ(count_tokens("abc"), 1u);
  EXPECT_EQ(count_tokens("abcd"), 1u);
  EXPECT_EQ(count_tokens("abcde"), 2u);
  EXPECT_EQ(count_tokens(std::string(4000, 'x')), 1000u);
}

TEST(EnginePrompt, OnlyFullBlocksAreHashed) {
  const std::string one_block(64, 'a');  // 16 tokens at 4 chars each
  EXPECT_EQ(prompt_blocks(one_block, 16).block_hashes.size(), 1u);
  EXPECT_EQ(prompt_blocks(one_block.substr(0, 63), 16).block_hashes.size(), 0u);
  const PromptBlocks blocks = prompt_blocks(std::string(64 * 3 + 10, 'a'), 16);
  EXPECT_EQ(blocks.num_tokens, 51u);
  EXPECT_EQ(blocks.block_hashes.size(), 3u);
}

TEST(EnginePrompt, HashesAreChainedOverPrecedingBlocks) {
  const std::string a(64, 'a');
  const std::string b(64, 'b');
  const PromptBlocks ab = prompt_blocks(a + b, 16);
  const PromptBlocks ab_more = prompt_blocks(a + b + a + "tail", 16);
  const PromptBlocks bb = prompt_blocks(b + b, 16);
  // Shared prefix -> shared leading hashes.
  EXPECT_EQ(ab.block_hashes[0], ab_more.block_hashes[0]);
  EXPECT_EQ(ab.block_hashes[1], ab_more.block_hashes[1]);
  // Same content at a different position hashes differently.
  EXPECT_NE(ab_more.block_hashes[2], ab_more.block_hashes[0]);
  // A different first block changes every later hash, even equal content.
  EXPECT_NE(bb.block_hashes[1], ab.block_hashes[1]);
  // Deterministic.
  EXPECT_EQ(prompt_blocks(a + b, 16).block_hashes, ab.block_hashes);
}

TEST(EnginePrompt, SaltSeparatesEqualText) {
  const std::string text(128, 'z');
  EXPECT_NE(prompt_blocks(text, 16, 1).block_hashes, prompt_blocks(text, 16, 2).block_hashes);
}

TEST(EngineGeneration, IgnoreEosOrNoNaturalLengthGivesMaxTokens) {
  EXPECT_EQ(generation_length({.max_tokens = 77, .ignore_eos = true, .natural_mean = 10}), 77u);
  EXPECT_EQ(generation_length({.max_tokens = 77}), 77u);
  EXPECT_EQ(generation_length({.max_tokens = 0}), 1u);
}

TEST(EngineGeneration, NaturalLengthIsDeterministicAndWithinMinAndMax) {
  std::set<std::uint32_t> seen;
  for (std::uint64_t seed = 0; seed < 500; ++seed) {
    const GenerationLimits limits{
        .max_tokens = 60, .min_tokens = 20, .natural_mean = 40, .seed = seed};
    const std::uint32_t n = generation_length(limits);
    EXPECT_EQ(n, generation_length(limits));
    EXPECT_GE(n, 20u);
    EXPECT_LE(n, 60u);
    seen.insert(n);
  }
  EXPECT_GT(seen.size(), 30u);  // natural lengths spread over [20, 60]
  // min_tokens above max_tokens: max wins, as the request cannot exceed it.
  EXPECT_EQ(generation_length({.max_tokens = 5, .min_tokens = 9, .natural_mean = 2, .seed = 1}),
            5u);
}

TEST(EngineProfile, NamedProfilesExist) {
  for (const char* name : {"llama-8b-a100", "llama-70b-h100x8", "tiny"}) {
    const Profile* profile = find_profile(name);
    ASSERT_NE(profile, nullptr) << name;
    EXPECT_EQ(profile->name, name);
    EXPECT_GT(profile->config.num_blocks, 0u);
    EXPECT_GT(profile->config.cost.base_s, 0.0);
    const auto names = profile_names();
    EXPECT_NE(std::find(names.begin(), names.end(), profile->name), names.end());
  }
  EXPECT_EQ(find_profile("no-such-profile"), nullptr);
}

TEST(EngineProfile, ShippedProfilesAreValidAndBadConfigsAreNamed) {
  for (const std::string_view name : profile_names()) {
    EXPECT_EQ(config_error(find_profile(name)->config), "") << name;
  }
  EngineConfig config = find_profile("tiny")->config;
  config.block_size = 0;
  EXPECT_NE(config_error(config), "");
  config = find_profile("tiny")->config;
  config.max_num_batched_tokens = 0;
  EXPECT_NE(config_error(config), "");
  config = find_profile("tiny")->config;
  config.cost.decode_seq_s = -1;
  EXPECT_NE(config_error(config), "");
}

TEST(EngineProfile, CostModelIsLinearInItsTerms) {
  const CostModel cost{.base_s = 1, .prefill_token_s = 2, .decode_seq_s = 3, .context_token_s = 4};
  EXPECT_DOUBLE_EQ(cost.step_seconds({}), 1.0);
  EXPECT_DOUBLE_EQ(
      cost.step_seconds({.prefill_tokens = 10, .decode_seqs = 100, .context_tokens = 1000}),
      1.0 + 20 + 300 + 4000);
}

}  // namespace
}  // namespace arbiter::engine
