#include "gateway/stages/parse/parse_stage.hpp"

#include "http/head_scan.hpp"

namespace arbiter {

Verdict ParseStage::admit(RequestContext& ctx) {
  // A compressed body is not JSON to the parser: say so rather than
  // "not valid JSON" (RFC 9110 15.5.16). Nor would the engines decode it.
  const std::string_view coding = ctx.req["content-encoding"];
  if (!coding.empty() && !lower_equals(coding, "identity")) {
    std::string message = "Content-Encoding '" + std::string(coding) + "' is not supported: send the body uncompressed";
    return Verdict::refuse({ErrorCode::kUnsupportedEncoding, std::move(message), {}, {}});
  }
  auto parsed = parse_request(ctx.route, std::move(ctx.req.body()), max_json_depth_);
  if (!parsed) return Verdict::refuse(std::move(parsed.error()));
  ctx.parsed = std::move(*parsed);
  ctx.rec.stream = ctx.parsed.info.stream;
  return Verdict::go();
}

}  // namespace arbiter
