// Admission stage 2: the body. One pass over the JSON (core/request_parser)
// finds the model, the prompt, max_tokens, stream and the rest the later
// stages need; a malformed or oversized request is refused here (400).
#pragma once

#include "gateway/pipeline/stage.hpp"

namespace arbiter {

class ParseStage final : public AdmissionStage {
 public:
  std::string_view name() const override { return "parse"; }
  Verdict admit(RequestContext& ctx) override;
};

}  // namespace arbiter
