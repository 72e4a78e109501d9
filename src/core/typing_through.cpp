#include "core/typing_through.hpp"

namespace arbiter::typing {

bool compatible(const Shape& old, const Shape& successor) {
  return old.model == successor.model && old.n == 1 && successor.n == 1 &&
         old.stream == successor.stream && old.sampling == successor.sampling &&
         successor.max_tokens >= old.max_tokens;
}

Verdict typing_through(const InFlight& old, const Successor& successor) {
  // Something typed: the successor's prompt is the old one and more.
  if (successor.prompt.size() <= old.prompt.size() || !successor.prompt.starts_with(old.prompt)) {
    return {.inherit = std::nullopt, .refusal = Refusal::kNotExtension};
  }
  const std::string_view typed = successor.prompt.substr(old.prompt.size());
  if (!old.generated.starts_with(typed)) {
    return {.inherit = std::nullopt, .refusal = Refusal::kNotGenerated};
  }
  if (!compatible(old.shape, successor.shape)) {
    return {.inherit = std::nullopt, .refusal = Refusal::kShape};
  }
  return {.inherit = Inheritance{.skip = typed.size()}, .refusal = Refusal::kNotExtension};
}

}  // namespace arbiter::typing
