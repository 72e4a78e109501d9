// One request of a workload, as both modes consume it: virtual mode submits
// it to the modelled gateway and engines, live mode (later) turns it into an
// HTTP request. Times are seconds from the start of the run.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace arbiter::bench {

inline constexpr double kNever = std::numeric_limits<double>::infinity();

// A run of prompt tokens shared with other requests: block hashes chain
// from `key`, so two requests with the same key share their first
// min(tokens) tokens of it in a prefix cache.
struct SharedSegment {
  uint64_t key = 0;     // 0: none
  uint32_t tokens = 0;  // tokens of the segment this request's prompt contains
};

struct RequestSpec {
  uint64_t id = 0;      // position in the stream, from 0
  double arrival = 0;   // seconds
  uint16_t klass = 0;   // index into Scenario::classes
  uint16_t tenant = 0;  // index into Scenario::tenants
  // Prompt = prefix (system prompt, file being edited), then history (a chat
  // session's earlier turns), then `unique_tokens` of its own.
  SharedSegment prefix;
  SharedSegment history;
  uint32_t unique_tokens = 0;
  uint32_t output_tokens = 1;  // tokens the model generates (<= max_tokens)
  uint32_t max_tokens = 1;     // the request's max_tokens
  uint64_t supersede_key = 0;  // 0: none; a newer request with the key replaces this one
  // Typing: `text` names this prompt's text. A keystroke that types along
  // the suggestion being generated for the previous one (`type_along`) has
  // that one's prompt plus the first `typed_tokens` of its generation:
  // `extends` is that prompt's `text` (0: none).
  uint64_t text = 0;
  uint64_t extends = 0;
  uint32_t typed_tokens = 0;
  // The key of the request's own tokens (0: they are its alone, keyed by
  // its id, and never hashed for the prefix cache). Typing traffic that
  // types along sets it: a keystroke typing along another has that one's
  // own tokens and the typed ones after them, so both carry the key of the
  // keystroke the chain started from, and the engine's prefix cache finds
  // the earlier prompt in the later one, as a real engine's does.
  uint64_t own_key = 0;
  double abort_at = kNever;    // the client gives up then, unless finished
  double deadline = kNever;    // finished by then, or it missed its deadline
  uint16_t adapter = 0;        // the LoRA adapter it asks for (Scenario::lora), 0: the base model

  uint32_t prompt_tokens() const { return prefix.tokens + history.tokens + unique_tokens; }
};

// The key of the spec's own tokens: own_key, or one drawn from its id.
uint64_t own_tokens_key(const RequestSpec& spec);

// Block hashes of the spec's full prompt blocks that hold shared tokens,
// chained like the engine's prefix cache expects (blocks of the request's
// own tokens only are left out unless own_key is set: nothing else could
// hit them).
void prompt_block_hashes(const RequestSpec& spec, uint32_t block_size, std::vector<uint64_t>& out);

// What the gateway would hash for prefix affinity (core/prefix_blocks.hpp):
// the chain at every kPrefixBlockTokens boundary, taken from the engine's
// block hashes (`engine_blocks`, at `block_size` tokens) so equal prefixes
// give equal values. Empty when the prompt shares no full such block.
void affinity_blocks(const std::vector<uint64_t>& engine_blocks, uint32_t block_size,
                     std::vector<uint64_t>& out);

}  // namespace arbiter::bench
