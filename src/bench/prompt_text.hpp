// Prompt text of a RequestSpec for live mode. 4 bytes per token (the rule of
// arbiter-sim and of the inference gateway's prefix scorer: ~4 characters a
// token), each token a 3-letter word and a space. Segments come in the
// spec's order: prefix, history, own tokens. A shared segment's text depends
// on its key only, and a shorter cut of a key is a prefix of a longer one,
// so requests that share a segment in virtual mode send byte-identical
// leading text and hit a real engine's prefix cache where the model does.
// `salt` changes every segment's text: a run with a fresh salt finds nothing
// of an earlier run in the engines' caches.
#pragma once

#include <cstdint>
#include <string>

#include "bench/request_spec.hpp"

namespace arbiter::bench {

inline constexpr uint32_t kBytesPerToken = 4;

// Appends the first `tokens` tokens of the text of segment `key`.
void append_segment_text(uint64_t key, uint32_t tokens, std::string& out);

// The spec's shared prefix (a system prompt, the file being edited).
std::string prefix_text(const RequestSpec& spec, uint64_t salt);
// The rest: history, then the request's own tokens.
std::string body_text(const RequestSpec& spec, uint64_t salt);

}  // namespace arbiter::bench
