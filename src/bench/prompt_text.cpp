#include "bench/prompt_text.hpp"

#include "core/mix.hpp"

namespace arbiter::bench {

void append_segment_text(uint64_t key, uint32_t tokens, std::string& out) {
  out.reserve(out.size() + std::size_t{tokens} * kBytesPerToken);
  for (uint32_t i = 0; i < tokens; ++i) {
    // Lower-case letters only: nothing to escape in JSON.
    const uint64_t h = splitmix64(key ^ splitmix64(i));
    out += static_cast<char>('a' + h % 26);
    out += static_cast<char>('a' + (h >> 8) % 26);
    out += static_cast<char>('a' + (h >> 16) % 26);
    out += ' ';
  }
}

std::string prefix_text(const RequestSpec& spec, uint64_t salt) {
  std::string out;
  append_segment_text(spec.prefix.key ^ salt, spec.prefix.tokens, out);
  return out;
}

std::string body_text(const RequestSpec& spec, uint64_t salt) {
  std::string out;
  append_segment_text(spec.history.key ^ salt, spec.history.tokens, out);
  // The same key virtual mode uses for the request's own blocks.
  append_segment_text(own_tokens_key(spec) ^ salt, spec.unique_tokens, out);
  return out;
}

}  // namespace arbiter::bench
