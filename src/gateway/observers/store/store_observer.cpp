#include "gateway/observers/store/store_observer.hpp"

#include <array>
#include <charconv>
#include <iterator>

#include <fmt/format.h>

namespace arbiter {

namespace {

int64_t unix_ms(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// A request's rows, encoded end to end in one buffer the thread reuses: no
// row is built of strings first, and the writer takes them under one lock.
class Rows {
 public:
  Rows() { bytes().clear(); }
  template <class View>
  void add(const View& row) {
    if (count_ == kMost) return;
    store::encode_into(bytes(), row);
    ends_[count_++] = bytes().size();
  }
  std::span<const std::string_view> views() {
    std::size_t from = 0;
    for (std::size_t i = 0; i < count_; ++i) {
      views_[i] = std::string_view(bytes()).substr(from, ends_[i] - from);
      from = ends_[i];
    }
    return std::span(views_.data(), count_);
  }

 private:
  static constexpr std::size_t kMost = 8;
  static std::string& bytes() {
    thread_local std::string buffer;
    return buffer;
  }
  std::array<std::size_t, kMost> ends_{};
  std::array<std::string_view, kMost> views_{};
  std::size_t count_ = 0;
};

}  // namespace

StoreObserver::StoreObserver(StoreWriter& store, const StoreConfig& settings) : store_(store) {
  for (const auto& [kind, share] : settings.audit_sample) {
    if (share < 1) sample_.emplace_back(kind, share);
  }
}

bool StoreObserver::sampled(std::string_view kind, std::string_view request_id) const {
  for (const auto& [k, share] : sample_) {
    if (k == kind) return static_cast<double>(std::hash<std::string_view>{}(request_id) % 1'000'000) < share * 1e6;
  }
  return true;
}

namespace {

// `n` in decimal (a double with one decimal), appended.
void append_number(std::string& out, int64_t n) {
  char buf[24];
  out.append(buf, static_cast<std::size_t>(std::to_chars(buf, buf + sizeof buf, n).ptr - buf));
}
void append_number(std::string& out, double x) {
  char buf[48];
  const auto done = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::fixed, 1);
  out.append(buf, done.ec == std::errc{} ? static_cast<std::size_t>(done.ptr - buf) : 0);
}

// The request's decisions (docs/audit.md, "Event kinds"), those `observer` samples.
void add_decisions(const StoreObserver& observer, const RequestContext& ctx, int64_t ts_ms, Rows& rows) {
  const AccessRecord& rec = ctx.rec;
  thread_local std::string detail;
  // The detail, written by the format_to that follows (cleared here).
  auto text = [] {
    detail.clear();
    return std::back_inserter(detail);
  };
  auto row = [&](std::string_view kind) {
    if (!observer.sampled(kind, rec.request_id)) return;
    rows.add(store::AuditView{.ts_ms = ts_ms,
                              .kind = kind,
                              .request_id = rec.request_id,
                              .tenant = rec.tenant,
                              .klass = rec.cls,
                              .model = rec.model,
                              .detail = detail});
  };
  if (!ctx.refused_by.empty()) {
    const std::string_view why = ctx.outcome.error ? std::string_view(ctx.outcome.error->message) : "";
    fmt::format_to(text(), "stage={} status={} error={} reason={}", ctx.refused_by, rec.status, rec.error, why);
    row("refused");
    return;
  }
  if (!ctx.answered_by.empty()) {
    fmt::format_to(text(), "stage={} status={} cache={}", ctx.answered_by, rec.status, rec.cache);
    row("answered");
    return;
  }
  if (!ctx.dispatch_queue_ms) {  // admitted, never dispatched: gave up or expired in the queue
    fmt::format_to(text(), "status={} error={} queue_ms={:.1f} wait_reason={}", rec.status, rec.error, rec.queue_ms,
                   rec.wait_reason);
    row("not_dispatched");
    return;
  }
  // Every request's row: appended by hand, a fifth of what fmt's parse of
  // the format costs here.
  const RequestContext::Placement& placed = ctx.placement;
  detail.clear();
  detail.append("backend=").append(rec.backend).append(" placement=").append(placed.reason).append(" queue_ms=");
  append_number(detail, rec.queue_ms);
  detail.append(" wait_reason=").append(rec.wait_reason.empty() ? std::string_view("none") : rec.wait_reason);
  detail.append(" status=");
  append_number(detail, int64_t{rec.status});
  if (placed.prefix_blocks > 0) {
    detail.append(" prefix_blocks=");
    append_number(detail, int64_t{placed.prefix_blocks});
  }
  if (!placed.borrowed_from.empty()) detail.append(" borrowed_from=").append(placed.borrowed_from);
  row("dispatched");
  // Each preemption (who took the slot), failover, inheritance, in order.
  for (const auto& [kind, why] : ctx.decisions) {
    detail = why;
    row(kind);
  }
  if (!rec.degraded.empty()) {
    fmt::format_to(text(), "actions={}", rec.degraded);
    row("degraded");
  }
  if (ctx.outcome.retried) {
    fmt::format_to(text(), "a pooled connection was closed; resent");
    row("retried");
  }
  if (rec.error == "superseded") {
    fmt::format_to(text(), "a newer request of the same key replaced it");
    row("superseded");
  }
}

}  // namespace

void StoreObserver::on_answer_end(const RequestContext& ctx) {
  const AccessRecord& rec = ctx.rec;
  const int64_t ts = unix_ms(rec.ts);
  Rows rows;
  if (ctx.dispatch_queue_ms) {  // reached an engine: billed
    rows.add(store::UsageView{.ts_ms = ts,
                              .request_id = rec.request_id,
                              .tenant = rec.tenant,
                              .team = rec.team,
                              .model = rec.model,
                              .klass = rec.cls,
                              .status = rec.status,
                              .prompt_tokens = std::max<int64_t>(rec.prompt_tokens, 0),
                              .completion_tokens = std::max<int64_t>(rec.completion_tokens, 0),
                              .cached_tokens = rec.cached_tokens,
                              .engine_ms = std::max(rec.engine_ms, 0.0),
                              .cost = std::max(rec.cost, 0.0),
                              .tokens_from = rec.tokens_from});
  }
  if (store_.audit()) add_decisions(*this, ctx, ts, rows);
  store_.add(rows.views());
}

}  // namespace arbiter
