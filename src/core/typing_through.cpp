#include "core/typing_through.hpp"

#include <algorithm>
#include <vector>

#include <boost/json/serialize.hpp>

namespace arbiter::typing {

bool compatible(const Shape& old, const Shape& successor) {
  return old.model == successor.model && old.n == 1 && successor.n == 1 &&
         old.stream == successor.stream && old.sampling == successor.sampling &&
         successor.max_tokens >= old.max_tokens;
}

std::string sampling_text(const boost::json::object& body) {
  static constexpr std::string_view kNotSampling[] = {"prompt", "model",  "max_tokens", "max_completion_tokens",
                                                      "stream", "n",      "user"};
  std::vector<std::pair<std::string_view, std::string>> fields;
  for (const auto& field : body) {
    const std::string_view key(field.key().data(), field.key().size());
    if (std::ranges::find(kNotSampling, key) != std::end(kNotSampling)) continue;
    fields.emplace_back(key, boost::json::serialize(field.value()));
  }
  std::ranges::sort(fields);
  std::string out;
  for (const auto& [key, value] : fields) {
    out.append(key).append("=").append(value).append("\n");
  }
  return out;
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
