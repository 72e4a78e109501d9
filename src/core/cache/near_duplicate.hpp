// Near-duplicate prompts without a model (docs/cache.md#near-duplicates):
// the prompt's JSON text (a chat's `messages`, a completion's `prompt`) read
// as normalised tokens, and a similarity that is high only for the same
// request written differently.
//
// Normalised: ASCII lower case; punctuation that carries no meaning in prose
// (. , ! ? ; : quotes) dropped, the rest (+ - * / = < > ( ) ...) kept as
// tokens; numbers whole (3.14); contractions read (n't as `not`); articles,
// politeness and filler words dropped (please, can you, tell me, hi, the);
// a plural's s dropped. JSON keys and structure strings (roles) are tokens
// that must match but do not count as the prompt's words.
//
// Similarity: two prompts are near only when their normalised tokens are the
// same, in the same order, but for typos (in words of 7+ letters: an
// adjacent swap, a letter doubled or dropped); the similarity is the
// share of the words equal as written, so a threshold of 0.9 takes one typo in
// ten words. Any other difference (a word added, dropped, replaced or moved:
// a number, a negation, a name, an operator) makes them different prompts
// (similarity 0): a wrong answer from the cache is worse than a slow one.
// So near hits are the same words formatted, spelt or padded differently;
// prompts reworded with other words are for the semantic mode
// (docs/cache.md: its labelled set measures both).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace arbiter::cache {

struct NearText {
  std::string tokens;                 // the normalised tokens, one space apart
  std::vector<uint64_t> hashes;       // each token's hash, in order
  std::size_t words = 0;              // tokens of the prompt's text (not structure)
  // The smallest hashes of its distinct tokens (the index's buckets): two
  // prompts whose token sets have Jaccard index J share the smallest with
  // probability J; near ones (one typo in ten words) nearly always.
  static constexpr std::size_t kSketch = 4;
  std::array<uint64_t, kSketch> sketch{};
  std::size_t sketch_size = 0;

  std::size_t bytes() const { return sizeof(NearText) + tokens.size() + hashes.size() * sizeof(uint64_t); }
};

// Prompts with fewer words are matched exactly only: "hi" and "thanks" are
// both all filler.
inline constexpr std::size_t kMinNearWords = 3;

// `json`: the raw JSON text of the prompt's value (an array of messages, a
// string, an array of strings).
NearText near_text(std::string_view json);

// In [0, 1]: 1 for the same normalised tokens in the same order; the share
// of the words equal as written when the others are typos; else 0 (also
// for prompts without words).
double near_similarity(const NearText& a, const NearText& b);

}  // namespace arbiter::cache
