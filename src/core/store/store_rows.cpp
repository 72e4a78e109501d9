#include "core/store/store_rows.hpp"

#include <bit>
#include <cstring>

namespace arbiter::store {

namespace {

// Little-endian fixed-size numbers, strings with a 32-bit length.
class Writer {
 public:
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void i64(int64_t v) { raw(&v, sizeof v); }
  void f64(double v) { raw(&v, sizeof v); }
  void str(std::string_view s) {
    const auto n = static_cast<uint32_t>(s.size());
    raw(&n, sizeof n);
    out_.append(s);
  }
  std::string take() { return std::move(out_); }

 private:
  void raw(const void* p, std::size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool u8(uint8_t& v) { return raw(&v, sizeof v); }
  bool i64(int64_t& v) { return raw(&v, sizeof v); }
  bool f64(double& v) { return raw(&v, sizeof v); }
  bool str(std::string& s) {
    uint32_t n = 0;
    if (!raw(&n, sizeof n) || n > in_.size()) return false;
    s.assign(in_.substr(0, n));
    in_.remove_prefix(n);
    return true;
  }
  bool done() const { return in_.empty(); }

 private:
  bool raw(void* p, std::size_t n) {
    if (in_.size() < n) return false;
    std::memcpy(p, in_.data(), n);
    in_.remove_prefix(n);
    return true;
  }
  std::string_view in_;
};

static_assert(std::endian::native == std::endian::little, "the journal's numbers are written as in memory");

constexpr uint8_t kUsage = 1, kAudit = 2;

void escape_into(std::string& out, std::string_view s) {
  for (const char c : s) {
    if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\\') {
      out += "\\\\";
    } else {
      out += c;
    }
  }
}

}  // namespace

std::string encode(const Row& row) {
  Writer w;
  if (const auto* u = std::get_if<UsageRow>(&row)) {
    w.u8(kUsage);
    w.i64(u->ts_ms);
    for (const std::string* s : {&u->request_id, &u->tenant, &u->team, &u->model, &u->klass}) w.str(*s);
    w.i64(u->status);
    w.i64(u->prompt_tokens);
    w.i64(u->completion_tokens);
    w.i64(u->cached_tokens);
    w.f64(u->engine_ms);
    w.f64(u->cost);
    w.str(u->tokens_from);
  } else {
    const auto& a = std::get<AuditRow>(row);
    w.u8(kAudit);
    w.i64(a.ts_ms);
    for (const std::string* s : {&a.kind, &a.request_id, &a.tenant, &a.klass, &a.model, &a.detail}) w.str(*s);
  }
  return w.take();
}

std::optional<Row> decode(std::string_view bytes) {
  Reader r(bytes);
  uint8_t kind = 0;
  if (!r.u8(kind)) return std::nullopt;
  if (kind == kUsage) {
    UsageRow u;
    bool ok = r.i64(u.ts_ms);
    for (std::string* s : {&u.request_id, &u.tenant, &u.team, &u.model, &u.klass}) ok = ok && r.str(*s);
    ok = ok && r.i64(u.status) && r.i64(u.prompt_tokens) && r.i64(u.completion_tokens) && r.i64(u.cached_tokens) &&
         r.f64(u.engine_ms) && r.f64(u.cost) && r.str(u.tokens_from) && r.done();
    if (ok) return Row(std::move(u));
    return std::nullopt;
  }
  if (kind == kAudit) {
    AuditRow a;
    bool ok = r.i64(a.ts_ms);
    for (std::string* s : {&a.kind, &a.request_id, &a.tenant, &a.klass, &a.model, &a.detail}) ok = ok && r.str(*s);
    if (ok && r.done()) return Row(std::move(a));
  }
  return std::nullopt;
}

std::string canonical_line(int64_t seq, const AuditRow& row) {
  std::string out = std::to_string(seq);
  out += '\t';
  out += std::to_string(row.ts_ms);
  for (const std::string* s : {&row.kind, &row.request_id, &row.tenant, &row.klass, &row.model, &row.detail}) {
    out += '\t';
    escape_into(out, *s);
  }
  out += '\n';
  return out;
}

}  // namespace arbiter::store
