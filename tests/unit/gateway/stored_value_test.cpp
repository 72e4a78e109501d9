// The shared result store's value (gateway/stages/cache/stored_value.hpp):
// what goes in comes back, deflated; anything else reads as none.
#include "gateway/stages/cache/stored_value.hpp"

#include <gtest/gtest.h>

namespace arbiter {
namespace {

StoredValue sample() {
  std::string raw;
  for (int i = 0; i < 200; ++i) raw += "data: {\"choices\":[{\"delta\":{\"content\":\"word \"}}]}\n\n";
  return StoredValue{.scope = "tenant:alpha",
                     .model = "m1",
                     .stored_at_ms = 1'700'000'000'123,
                     .answer = cache::StoredAnswer{.route = Route::kCompletions,
                                                   .stream = true,
                                                   .raw = raw,
                                                   .usage = Usage{.prompt_tokens = 7, .completion_tokens = 200,
                                                                  .cached_tokens = 3}}};
}

TEST(StoredValue, ComesBackAsItWentInAndSmaller) {
  const StoredValue v = sample();
  const std::string bytes = encode_stored(v);
  EXPECT_LT(bytes.size(), v.answer.raw.size() / 3);  // text deflates well
  const auto back = decode_stored(bytes);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->scope, v.scope);
  EXPECT_EQ(back->model, v.model);
  EXPECT_EQ(back->stored_at_ms, v.stored_at_ms);
  EXPECT_EQ(back->answer.route, Route::kCompletions);
  EXPECT_TRUE(back->answer.stream);
  EXPECT_EQ(back->answer.raw, v.answer.raw);
  ASSERT_TRUE(back->answer.usage);
  EXPECT_EQ(back->answer.usage->cached_tokens, 3);
  StoredValue no_usage = v;
  no_usage.answer.usage.reset();
  EXPECT_FALSE(decode_stored(encode_stored(no_usage))->answer.usage);
}

TEST(StoredValue, AnythingElseIsNone) {
  const std::string bytes = encode_stored(sample());
  EXPECT_FALSE(decode_stored(""));
  EXPECT_FALSE(decode_stored("not a value"));
  EXPECT_FALSE(decode_stored(bytes.substr(0, bytes.size() / 2)));  // cut
  std::string other_version = bytes;
  other_version[0] = 9;
  EXPECT_FALSE(decode_stored(other_version));
  // A length that the deflated bytes do not fill (and one past the bound).
  const std::size_t length_at = 1 + 3 + 4 * 8 + 4 + std::string("tenant:alpha").size() + 4 + 2;
  std::string longer = bytes;
  longer[length_at] = static_cast<char>(longer[length_at] + 1);
  EXPECT_FALSE(decode_stored(longer));
  std::string huge = bytes;
  huge[length_at + 3] = 0x7f;
  EXPECT_FALSE(decode_stored(huge));
}

}  // namespace
}  // namespace arbiter
