// Admission stage 2: the body. One pass over the JSON (core/request_parser)
// finds the model, the prompt, max_tokens, stream and the rest the later
// stages need; a malformed request, or one nested deeper than
// limits.max_json_depth, is refused here (400), and a compressed one
// (Content-Encoding other than identity) with 415.
#pragma once

#include <cstddef>

#include "core/request_fields.hpp"
#include "gateway/pipeline/stage.hpp"

namespace arbiter {

class ParseStage final : public DeclaredStage<ParseStage> {
 public:
  explicit ParseStage(std::size_t max_json_depth = kDefaultMaxJsonDepth) : max_json_depth_(max_json_depth) {}
  static constexpr std::string_view kName = "parse";
  static constexpr Phase kPhase = Phase::kParse;
  Verdict admit(RequestContext& ctx) override;

 private:
  std::size_t max_json_depth_;
};

}  // namespace arbiter
