#include "engine/generated_text.hpp"

#include <array>

#include "core/mix.hpp"
#include "engine/prompt.hpp"

namespace arbiter::engine {

namespace {

constexpr std::array<std::string_view, 64> kWords = {
    " the", " and", " for", " you", " not", " are", " but", " all", " can", " her", " was",
    " one", " our", " out", " day", " get", " has", " him", " his", " how", " man", " new",
    " now", " old", " see", " two", " way", " who", " boy", " did", " its", " let", " put",
    " say", " she", " too", " use", " sky", " sea", " sun", " red", " big", " few", " far",
    " own", " run", " set", " try", " ask", " end", " why", " any", " yes", " ran", " sat",
    " top", " low", " art", " map", " key", " job", " law", " air", " ice"};
static_assert(kWords.size() == 64);

constexpr bool all_words_one_token() {
  for (auto w : kWords) {
    if (w.size() != kCharsPerToken) return false;
  }
  return true;
}
static_assert(all_words_one_token(), "every word must be exactly one token under the 4-chars rule");

}  // namespace

std::uint64_t text_seed(std::uint64_t server_seed, std::string_view model, std::string_view prompt,
                        std::int64_t request_seed) {
  return splitmix64(server_seed ^ splitmix64(hash_bytes(prompt, hash_bytes(model)) ^
                                             splitmix64(static_cast<std::uint64_t>(request_seed))));
}

std::string_view token_word(std::uint64_t text_seed, std::uint32_t index) {
  return kWords[splitmix64(text_seed + index) & 63];
}

}  // namespace arbiter::engine
