// What the usage and audit store keeps (docs/audit.md): one row per request
// that reached an engine (its bill) and one per arbitration decision (the
// audit trail). Rows are encoded to bytes for the journal
// (gateway/store/journal.hpp) and decoded when it is replayed. Pure.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace arbiter::store {

// A request's bill (RequestContext::billed, at its end).
struct UsageRow {
  int64_t ts_ms = 0;  // arrival, unix milliseconds (the access log's ts)
  std::string request_id, tenant, team, model, klass;
  int64_t status = 0;
  int64_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
  double engine_ms = 0;
  double cost = 0;
  std::string tokens_from;  // "engine", "events", "estimate"; empty: no tokens billed
  bool operator==(const UsageRow&) const = default;
};

// One decision (docs/audit.md, "Event kinds").
struct AuditRow {
  int64_t ts_ms = 0;  // when it was decided, unix milliseconds
  std::string kind;   // "admitted", "refused", "dispatched", "breaker", ...
  std::string request_id, tenant, klass, model;  // empty for a decision about no request
  std::string detail;  // why, in words and figures: "stage=quota limit=tokens_per_minute"
  bool operator==(const AuditRow&) const = default;
};

using Row = std::variant<UsageRow, AuditRow>;

// A row's fields as views, to encode without copying them first (the
// request path: StoreObserver).
struct UsageView {
  int64_t ts_ms = 0;
  std::string_view request_id, tenant, team, model, klass;
  int64_t status = 0, prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
  double engine_ms = 0, cost = 0;
  std::string_view tokens_from;
};
struct AuditView {
  int64_t ts_ms = 0;
  std::string_view kind, request_id, tenant, klass, model, detail;
};

using RowView = std::variant<UsageView, AuditView>;

// The row appended to `out` as bytes; and back as views into `bytes`
// (nullopt when `bytes` is not one row).
void encode_into(std::string& out, const UsageView& row);
void encode_into(std::string& out, const AuditView& row);
std::string encode(const Row& row);
std::optional<RowView> decode_view(std::string_view bytes);

AuditView view_of(const AuditRow& row);

// An audit row as one line of text: what its batch's hash covers
// (audit_chain.hpp), fields in a fixed order, separated by tabs and with
// tabs, newlines and backslashes escaped. feed_canonical_line hands the
// line's bytes to `feed` (a std::string_view at a time) without building
// it; canonical_line collects them.
template <class Feed>
void feed_canonical_line(int64_t seq, const AuditView& row, Feed&& feed) {
  char number[24];
  auto feed_number = [&](int64_t n) {
    const char* end = std::to_chars(number, number + sizeof number, n).ptr;
    feed(std::string_view(number, static_cast<std::size_t>(end - number)));
  };
  feed_number(seq);
  feed(std::string_view("\t"));
  feed_number(row.ts_ms);
  for (const std::string_view field : {row.kind, row.request_id, row.tenant, row.klass, row.model, row.detail}) {
    feed(std::string_view("\t"));
    std::size_t from = 0;
    for (std::size_t i = 0; i < field.size(); ++i) {
      const char c = field[i];
      const std::string_view escaped = c == '\t' ? "\\t" : c == '\n' ? "\\n" : c == '\\' ? "\\\\" : "";
      if (escaped.empty()) continue;
      feed(field.substr(from, i - from));
      feed(escaped);
      from = i + 1;
    }
    feed(field.substr(from));
  }
  feed(std::string_view("\n"));
}
std::string canonical_line(int64_t seq, const AuditView& row);

}  // namespace arbiter::store
