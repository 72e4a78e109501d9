#include "gateway/stages/caps/caps_stage.hpp"

namespace arbiter {

Verdict CapsStage::admit(RequestContext& ctx) {
  const Config& config = ctx.runtime->config;
  const ClassConfig& cls = config.classes[ctx.cls];
  if (cls.max_tokens_cap && apply_max_tokens_cap(ctx.parsed, *cls.max_tokens_cap)) {
    metrics_.rewrites.with({ctx.rec.cls}).inc();
    // Not silent: the client learns its max_tokens was lowered, and to what.
    ctx.response_headers.emplace_back("x-arbiter-max-tokens-capped", std::to_string(*cls.max_tokens_cap));
  }
  // Only work the scheduler may preempt needs a way to resume.
  if (config.scheduler.preemption && (cls.policy.preemptible || cls.policy.background)) {
    ctx.resume = resume_method(ctx.parsed, pools_[ctx.pool()]->continues_chat());
    // Read for that alone: a queued batch request would hold its body twice
    // (a 16 KiB prompt: 49.8 KB queued against 29.6; docs/benchmarks.md).
    ctx.parsed.drop_document();
  }
  return Verdict::go();
}

}  // namespace arbiter
