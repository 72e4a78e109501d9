#include "gateway/stages/supersede/supersede_stage.hpp"

#include <functional>

namespace arbiter {

Verdict SupersedeStage::admit(RequestContext& ctx) {
  const bool anonymous = ctx.tenant == nullptr;
  if (auto h = ctx.req.field("x-arbiter-supersede-key"); h && !h->empty()) {
    ctx.supersede_key = anonymous ? "peer:" + ctx.conn.remote_address() + "/key:" : "key:";
    ctx.supersede_key += *h;
    return Verdict::go();
  }
  const RequestInfo& info = ctx.parsed.info;
  if (anonymous || !ctx.runtime->config.classes[ctx.cls].supersede_by_user || !info.user) return Verdict::go();
  std::string_view prompt;
  if (info.prompt_at < ctx.parsed.text.size()) prompt = std::string_view(ctx.parsed.text).substr(info.prompt_at);
  const std::string_view start = prompt.substr(0, std::min(kUserKeyPromptBytes, (prompt.size() + 1) / 2));
  ctx.supersede_key = "user:" + *info.user + "/" + std::to_string(std::hash<std::string_view>{}(start));
  return Verdict::go();
}

}  // namespace arbiter
