// The result cache's readers of untrusted bytes (core/cache): the
// near-duplicate tokenizer, the answers read from an engine's bytes and
// written again, the client's cache-control. Properties:
// - the tokenizer's tokens fit the room it sized (three bytes out per byte
//   in), a hash each, a prompt is its own near duplicate (similarity 1 when
//   it has words, 0 when it has none), a similarity is in [0, 1];
// - an answer read from bytes (whole or a stream), written whole and as a
//   stream, reads back to the same texts, finish reason and usage: the
//   escaping loses nothing, whatever the engine sent;
// - cache-control never reads a negative max-age.
// Input: one byte of choices (what to read), then the bytes.
#include <string>

#include "core/cache/cache_policy.hpp"
#include "core/cache/cached_answer.hpp"
#include "core/cache/near_duplicate.hpp"
#include "fuzz_check.hpp"

namespace arbiter {
namespace {

void check_near(std::string_view bytes) {
  const cache::NearText t = cache::near_text(bytes);
  FUZZ_CHECK(t.tokens.size() <= 3 * bytes.size() + 8);
  std::size_t tokens = t.tokens.empty() ? 0 : 1;
  for (const char c : t.tokens) tokens += c == ' ' ? 1 : 0;
  FUZZ_CHECK(tokens == t.hashes.size());
  FUZZ_CHECK(t.words <= t.hashes.size());
  FUZZ_CHECK(t.sketch_size <= cache::NearText::kSketch);
  const double self = cache::near_similarity(t, t);
  FUZZ_CHECK(self == (t.words > 0 ? 1.0 : 0.0));
  // Against a prefix of itself: a number in [0, 1].
  const cache::NearText half = cache::near_text(bytes.substr(0, bytes.size() / 2));
  const double s = cache::near_similarity(t, half);
  FUZZ_CHECK(s >= 0 && s <= 1);
}

void check_same(const cache::CachedAnswer& a, const std::optional<cache::CachedAnswer>& b) {
  FUZZ_CHECK(b.has_value());
  FUZZ_CHECK(b->content == a.content);
  FUZZ_CHECK(b->reasoning == a.reasoning);
  FUZZ_CHECK(b->finish_reason == a.finish_reason);
  FUZZ_CHECK(b->usage.has_value() == a.usage.has_value());
  if (a.usage) FUZZ_CHECK(b->usage->completion_tokens == a.usage->completion_tokens);
}

void check_answer(Route route, bool stream, std::string_view bytes) {
  const cache::StoredAnswer stored{.route = route, .stream = stream, .raw = std::string(bytes)};
  const auto a = cache::read_answer(stored);  // escaped texts kept, as the store keeps them
  if (!a || route == Route::kEmbeddings) return;
  check_same(*a, cache::answer_from_whole(route, cache::render_whole(*a, "id-1", 1, "m")));
  check_same(*a, cache::answer_from_stream(route, cache::render_stream(*a, "id-2", 1, "m", true)));
  cache::CachedAnswer plain = *a;  // written from the raw texts, escaped on the way
  plain.content_json.clear();
  plain.reasoning_json.clear();
  FUZZ_CHECK(cache::render_whole(plain, "i", 1, "m") == cache::render_whole(*a, "i", 1, "m"));
  FUZZ_CHECK(cache::render_stream(plain, "i", 1, "m", false) == cache::render_stream(*a, "i", 1, "m", false));
}

}  // namespace
}  // namespace arbiter

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  arbiter::fuzz::Input in(data, size);
  const uint8_t choice = in.byte();
  const std::string_view bytes = in.rest();
  switch (choice % 4) {
    case 0: arbiter::check_near(bytes); break;
    case 1: arbiter::check_answer(choice & 4 ? arbiter::Route::kCompletions : arbiter::Route::kChatCompletions,
                                  false, bytes); break;
    case 2: arbiter::check_answer(choice & 4 ? arbiter::Route::kCompletions : arbiter::Route::kChatCompletions,
                                  true, bytes); break;
    default: {
      const auto d = arbiter::cache::read_cache_control(bytes);
      FUZZ_CHECK(!d.max_age_s || *d.max_age_s >= 0);
    }
  }
  return 0;
}
