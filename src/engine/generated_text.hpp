// The text the simulated model generates (arbiter-sim's answers), as a rule
// anyone can apply: arbiter-sim answers with it, and arbiter-bench's live
// mode uses it to type along a suggestion before it has arrived.
//
// Token i of an answer is one of 64 four-byte word pieces (a space and three
// letters), picked by a hash of (text seed, i), so an answer of n tokens is
// n * kCharsPerToken bytes and counts as n tokens again when sent back as a
// prompt. The text seed hashes the server's seed, the served model name, the
// prompt text (before a continued final message) and the request's `seed`.
#pragma once

#include <cstdint>
#include <string_view>

namespace arbiter::engine {

// The seed of the answer to `prompt`.
std::uint64_t text_seed(std::uint64_t server_seed, std::string_view model, std::string_view prompt,
                        std::int64_t request_seed = 0);

// The text of token `index` of the answer seeded by `text_seed`.
std::string_view token_word(std::uint64_t text_seed, std::uint32_t index);

}  // namespace arbiter::engine
