#include "gateway/observers/store/store_observer.hpp"

#include <array>
#include <charconv>
#include <cstring>
#include <iterator>

#include <fmt/format.h>

#include "core/decimal.hpp"

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

// Every request's row's detail, written by hand into `out` grown once to
// the most it can take: a fifth of what fmt's parse of the format costs
// here, and a third of appending it piece by piece.
void dispatched_detail(std::string& out, const AccessRecord& rec, const RequestContext::Placement& placed) {
  using namespace std::string_view_literals;
  const std::string_view wait = rec.wait_reason.empty() ? "none"sv : std::string_view(rec.wait_reason);
  constexpr std::size_t kLabelsAndNumbers = 80 + 48 + 2 * 24;
  const std::size_t most =
      kLabelsAndNumbers + rec.backend.size() + placed.reason.size() + wait.size() + placed.borrowed_from.size();
  out.resize_and_overwrite(most, [&](char* begin, std::size_t) {
    char* p = begin;
    const auto put = [&p](std::string_view s) {
      std::memcpy(p, s.data(), s.size());
      p += s.size();
    };
    put("backend="sv);
    put(rec.backend);
    put(" placement="sv);
    put(placed.reason);
    put(" queue_ms="sv);
    if (const auto done = std::to_chars(p, p + 48, rec.queue_ms, std::chars_format::fixed, 1); done.ec == std::errc{}) {
      p = done.ptr;
    }
    put(" wait_reason="sv);
    put(wait);
    put(" status="sv);
    p = put_int(p, rec.status);
    if (placed.prefix_blocks > 0) {
      put(" prefix_blocks="sv);
      p = put_uint(p, placed.prefix_blocks);
    }
    if (!placed.borrowed_from.empty()) {
      put(" borrowed_from="sv);
      put(placed.borrowed_from);
    }
    return static_cast<std::size_t>(p - begin);
  });
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
  dispatched_detail(detail, rec, ctx.placement);
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
