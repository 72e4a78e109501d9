#include "bench/type_along.hpp"

#include "engine/generated_text.hpp"
#include "engine/prompt.hpp"

namespace arbiter::bench {

const TypeAlong::Sent* TypeAlong::find(uint64_t key, uint64_t text) const {
  const auto it = recent_.find(key);
  if (it == recent_.end() || text == 0) return nullptr;
  for (const Sent& s : it->second) {
    if (s.text == text) return &s;
  }
  return nullptr;
}

std::optional<uint64_t> TypeAlong::extended(const RequestSpec& spec) const {
  const Sent* along = find(spec.supersede_key, spec.extends);
  return along ? std::optional(along->id) : std::nullopt;
}

std::string TypeAlong::words(Source from, uint32_t tokens) const {
  std::string out;
  for (uint32_t i = 0; i < tokens; ++i) out += engine::token_word(from.seed, from.offset + i);
  return out;
}

Outgoing TypeAlong::next(const RequestSpec& spec, Keystroke own, std::string_view received) {
  if (spec.supersede_key == 0) return {.keystroke = std::move(own)};
  Outgoing out{.keystroke = std::move(own)};
  // Unless it takes over a generation, its answer is its own prompt's.
  Source source{.seed = engine::text_seed(engine_.seed, engine_.model, out.keystroke.prompt), .offset = 0};
  if (const Sent* along = find(spec.supersede_key, spec.extends)) {
    if (along->received) received = *along->received;
    const std::size_t typed_bytes = std::size_t{spec.typed_tokens} * engine::kCharsPerToken;
    Source from = along->source;
    std::string typed = words(from, spec.typed_tokens);
    if (received.size() >= typed_bytes) {
      out.typed = Typed::kReceived;
      if (received.substr(0, typed_bytes) != typed) {
        // It did not take over: its answer is its own prompt's.
        from = {.seed = engine::text_seed(engine_.seed, engine_.model, along->keystroke.prompt), .offset = 0};
        typed = received.substr(0, typed_bytes);
      }
    } else {
      out.typed = Typed::kPredicted;
    }
    out.keystroke = {.prompt = along->keystroke.prompt + typed, .budget = along->keystroke.budget};
    source = {.seed = from.seed, .offset = from.offset + spec.typed_tokens};
  } else if (spec.extends != 0) {
    out.typed = Typed::kNotSent;
  }
  std::deque<Sent>& recent = recent_[spec.supersede_key];
  recent.push_back({.text = spec.text, .id = spec.id, .keystroke = out.keystroke, .source = source, .received = {}});
  if (recent.size() > kRemembered) recent.pop_front();
  return out;
}

void TypeAlong::ended(const RequestSpec& spec, std::string_view received) {
  const auto it = recent_.find(spec.supersede_key);
  if (it == recent_.end()) return;
  for (Sent& s : it->second) {
    if (s.id == spec.id) s.received = std::string(received);
  }
}

}  // namespace arbiter::bench
