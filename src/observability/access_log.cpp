#include "observability/access_log.hpp"

#include <unistd.h>

#include <boost/json.hpp>
#include <fmt/chrono.h>
#include <fmt/format.h>

namespace arbiter {

namespace {
std::string quoted(std::string_view v) { return boost::json::serialize(boost::json::string_view(v)); }
}  // namespace

std::string format_access_record(const AccessRecord& r) {
  std::string line;
  line.reserve(384);
  auto out = std::back_inserter(line);
  fmt::format_to(out,
                 R"({{"ts":"{:%FT%T}Z","request_id":{},"tenant":{},"team":{},"class":{},"model":{},)"
                 R"("backend":{},"route":{},"status":{},"stream":{},"bytes_in":{},"bytes_out":{},)"
                 R"("queue_ms":{:.3f})",
                 std::chrono::floor<std::chrono::milliseconds>(r.ts), quoted(r.request_id),
                 quoted(r.tenant), quoted(r.team), quoted(r.cls), quoted(r.model), quoted(r.backend), quoted(r.route),
                 r.status, r.stream, r.bytes_in, r.bytes_out, r.queue_ms);
  if (!r.wait_reason.empty()) fmt::format_to(out, R"(,"wait_reason":"{}")", r.wait_reason);
  if (r.upstream_ms >= 0) fmt::format_to(out, R"(,"upstream_ms":{:.3f})", r.upstream_ms);
  if (r.ttfb_ms >= 0) fmt::format_to(out, R"(,"ttfb_ms":{:.3f})", r.ttfb_ms);
  if (r.preemptions > 0) fmt::format_to(out, R"(,"preemptions":{})", r.preemptions);
  if (r.prompt_tokens >= 0) {
    fmt::format_to(out, R"(,"prompt_tokens":{},"completion_tokens":{},"cached_tokens":{})", r.prompt_tokens,
                   r.completion_tokens, r.cached_tokens);
  }
  if (r.engine_ms >= 0) fmt::format_to(out, R"(,"engine_ms":{:.3f})", r.engine_ms);
  if (r.cost >= 0) fmt::format_to(out, R"(,"cost":{})", r.cost);  // shortest text that reads back exactly
  fmt::format_to(out, R"(,"duration_ms":{:.3f})", r.duration_ms);
  if (!r.error.empty()) fmt::format_to(out, R"(,"error":{})", quoted(r.error));
  line += "}\n";
  return line;
}

void AccessLog::write(const AccessRecord& r) const {
  if (!enabled_) return;
  const std::string line = format_access_record(r);
  // One write(2) per line: lines from different threads never interleave and
  // nothing sits in a stdio buffer when the process is killed.
  std::size_t off = 0;
  while (off < line.size()) {
    const auto n = ::write(STDOUT_FILENO, line.data() + off, line.size() - off);
    if (n <= 0) return;
    off += static_cast<std::size_t>(n);
  }
}

}  // namespace arbiter
