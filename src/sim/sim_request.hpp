// Turns an OpenAI request body into what the simulated engine runs: prompt
// tokens and prefix-cache block hashes (engine/prompt.hpp's rule applied to
// the prompt text), the output length, and the seed of the generated text.
//
// Prompt text. Completions: the prompt string; a list of token ids becomes
// 4 bytes per id, so it counts one token per id. Chat: the concatenation of
// every message's content (strings, or the "text" of content parts), in
// order, with nothing between them and no role markers.
//
// continue_final_message (vLLM, chat only): the last message must be the
// assistant's; it stays part of the prompt, and the answer continues it: the
// text is seeded by the messages before it and starts at token
// count_tokens(final message), so a request resumed with the text already
// streamed yields the rest of the original answer.
//
// n (1 to kMaxAnswers): that many answers, each with its own text seed (the
// first one's is the request's, so n = 1 answers as before).
//
// A batch (completions: `prompt` as a list of strings or of lists of token
// ids) is served as vLLM serves one: each prompt is checked and run on its
// own, n answers each, in prompt order (the choice index of a prompt's i-th
// answer is prompt x n + i); each prompt's text is what it would be alone.
// At most kMaxAnswers answers in all.
//
// Output length, per answer: max_tokens (or max_completion_tokens), by default what is
// left of max_model_len. Without ignore_eos the "model" has a natural length
// drawn from the text seed (engine::generation_length with
// output_mean_tokens; minus the tokens already in a continued message),
// clamped to [min_tokens, max_tokens]. finish_reason is "length" when the
// output reaches max_tokens, else "stop".
#pragma once

#include <cstdint>
#include <expected>
#include <string_view>
#include <vector>

#include "core/request.hpp"
#include "engine/profile.hpp"
#include "sim/sim_error.hpp"

namespace arbiter::sim {

// One of the `n` answers to one of the request's prompts. The engine runs
// each as a sequence of its own, as vLLM's parallel sampling does: each
// takes a place in max_num_seqs, and each prefills its prompt (submitted
// together, none finds the others' blocks already computed in the prefix
// cache).
struct SimAnswer {
  std::uint32_t prompt = 0;         // its prompt in SimRequest::prompts
  std::uint32_t output_tokens = 0;  // tokens the engine will generate
  bool finish_length = false;       // finish_reason "length" rather than "stop"
  std::uint64_t text_seed = 0;      // seeds the words (token_word)
};

// One prompt: a chat's messages, or one of a completions batch.
struct SimPrompt {
  std::uint32_t tokens = 0;
  std::vector<std::uint64_t> block_hashes;  // full prompt blocks, chained
};

struct SimRequest {
  Route route = Route::kChatCompletions;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  int priority = 0;            // vLLM priority: lower first under the priority policy
  std::vector<SimPrompt> prompts;           // one, or a completions batch's in order
  std::vector<SimAnswer> answers;           // n per prompt, in choice-index order
  std::uint32_t text_offset = 0;            // index of every answer's first generated token
  std::uint32_t adapter = 0;                // its LoRA adapter: place in RequestLimits::adapters + 1; 0: none
};

// The most answers one request may ask for (`n`).
inline constexpr std::int64_t kMaxAnswers = 128;

// What a request is checked against.
struct RequestLimits {
  std::string_view model;                   // the served model name
  const std::vector<std::string>* adapters = nullptr;  // LoRA adapters served with it (SimOptions::lora_modules)
  const engine::EngineConfig* config = nullptr;
  std::uint32_t output_mean_tokens = 0;     // natural length mean; 0: always max_tokens
  std::uint64_t seed = 0;                   // server seed, mixed into every text seed
};

std::expected<SimRequest, SimError> parse_sim_request(Route route, std::string_view body,
                                                      const RequestLimits& limits);

}  // namespace arbiter::sim
