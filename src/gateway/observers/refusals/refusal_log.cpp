#include "gateway/observers/refusals/refusal_log.hpp"

#include <string>

#include "core/tenants.hpp"
#include "gateway/observers/access_log/access_log_observer.hpp"
#include "gateway/pipeline/request_context.hpp"
#include "gateway/request_id.hpp"

namespace arbiter {

namespace {
// A refused request's target is the client's to choose: the log keeps its start.
constexpr std::size_t kMaxLoggedTarget = 256;
}  // namespace

RefusalLog::RefusalLog(GatewayMetrics& metrics, BatchedLineWriter* log)
    : metrics_(metrics), log_(log), lines_(kLineBurst, std::chrono::duration_cast<quota::Duration>(
                                                           std::chrono::duration<double>(kLineBurst / kLinesPerSecond))) {}

bool RefusalLog::line_allowed() {
  std::lock_guard lock(mu_);
  const auto now = quota::Clock::now();
  if (lines_.wait_for(now, 1) != quota::Duration::zero()) return false;
  lines_.take(now, 1);
  return true;
}

void RefusalLog::record(const HttpRefusal& refusal) {
  const std::string status = std::to_string(refusal.status);
  metrics_.http_refusals.with({std::string(refusal.reason), status}).inc();
  metrics_.requests.with({std::string(kNoLabel), std::string(kNoLabel), std::string(kAnonymousTenant), status}).inc();
  if (!log_) return;
  if (!line_allowed()) {
    metrics_.http_refusals_unlogged.inc();
    return;
  }
  AccessRecord rec;
  rec.ts = std::chrono::system_clock::now();
  rec.request_id = choose_request_id({});
  rec.tenant = kAnonymousTenant;
  rec.team = kAnonymousTenant;
  rec.cls = kNoLabel;
  rec.model = kNoLabel;
  rec.route = refusal.target.substr(0, kMaxLoggedTarget);
  rec.status = refusal.status;
  rec.error = refusal.reason;
  log_access(*log_, rec);
}

}  // namespace arbiter
