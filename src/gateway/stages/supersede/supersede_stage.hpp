// Admission stage 5: the request's supersede key. A newer request with the
// same key replaces an older one of the same tenant (a keystroke makes the
// previous completion worthless; core/scheduler.hpp):
//   - x-arbiter-supersede-key: the client's own key;
//   - else, for classes with supersede_by_user, the OpenAI `user` field
//     joined with a hash of the prompt's first bytes, so one user's requests
//     on different prompts (a service account's concurrent calls) never
//     replace each other, while keystrokes in one file (same beginning) do.
// Keys are scoped to the tenant. An anonymous request (auth off) shares
// its tenant with every other anonymous client: its header key is scoped
// by the client's address too, and `user`, which anyone can send, is never
// a key for it.
#pragma once

#include "gateway/pipeline/stage.hpp"

namespace arbiter {

// How much of the prompt's beginning a `user` key covers (or half of a
// shorter prompt).
inline constexpr std::size_t kUserKeyPromptBytes = 256;

class SupersedeStage final : public DeclaredStage<SupersedeStage> {
 public:
  // The class settings come from the request's config snapshot (ctx.runtime).
  static constexpr std::string_view kName = "supersede";
  static constexpr Phase kPhase = Phase::kAdmit;
  Verdict admit(RequestContext& ctx) override;
};

}  // namespace arbiter
