#include "core/store/store_rows.hpp"

#include <bit>
#include <cstring>
#include <initializer_list>

namespace arbiter::store {

namespace {

// Little-endian fixed-size numbers, strings with a 32-bit length, appended:
// the string grown once to the row's size (`bytes`), then written straight
// (a capacity check and a call per field cost more than the copying did).
class Writer {
 public:
  Writer(std::string& out, std::size_t bytes) : out_(out), at_(out.size()) {
    // The size returned is the one asked for: GCC 12's library hands the
    // operation the capacity it allocated, which may be more.
    const std::size_t size = at_ + bytes;
    out_.resize_and_overwrite(size, [size](char*, std::size_t) { return size; });
    p_ = out_.data() + at_;
  }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  void u8(uint8_t v) { *p_++ = static_cast<char>(v); }
  void i64(int64_t v) { raw(&v, sizeof v); }
  void f64(double v) { raw(&v, sizeof v); }
  void str(std::string_view s) {
    const auto n = static_cast<uint32_t>(s.size());
    raw(&n, sizeof n);
    raw(s.data(), s.size());
  }
  // The bytes a row of these fields takes.
  static constexpr std::size_t size(std::size_t numbers, std::initializer_list<std::string_view> strings) {
    std::size_t n = 1 + 8 * numbers;
    for (const std::string_view s : strings) n += 4 + s.size();
    return n;
  }

 private:
  void raw(const void* p, std::size_t n) {
    std::memcpy(p_, p, n);
    p_ += n;
  }
  std::string& out_;
  std::size_t at_;
  char* p_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool u8(uint8_t& v) { return raw(&v, sizeof v); }
  bool i64(int64_t& v) { return raw(&v, sizeof v); }
  bool f64(double& v) { return raw(&v, sizeof v); }
  bool str(std::string_view& s) {
    uint32_t n = 0;
    if (!raw(&n, sizeof n) || n > in_.size()) return false;
    s = in_.substr(0, n);
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

}  // namespace

void encode_into(std::string& out, const UsageView& u) {
  Writer w(out, Writer::size(7, {u.request_id, u.tenant, u.team, u.model, u.klass, u.tokens_from}));
  w.u8(kUsage);
  w.i64(u.ts_ms);
  for (const std::string_view s : {u.request_id, u.tenant, u.team, u.model, u.klass}) w.str(s);
  w.i64(u.status);
  w.i64(u.prompt_tokens);
  w.i64(u.completion_tokens);
  w.i64(u.cached_tokens);
  w.f64(u.engine_ms);
  w.f64(u.cost);
  w.str(u.tokens_from);
}

void encode_into(std::string& out, const AuditView& a) {
  Writer w(out, Writer::size(1, {a.kind, a.request_id, a.tenant, a.klass, a.model, a.detail}));
  w.u8(kAudit);
  w.i64(a.ts_ms);
  for (const std::string_view s : {a.kind, a.request_id, a.tenant, a.klass, a.model, a.detail}) w.str(s);
}

std::string encode(const Row& row) {
  std::string out;
  if (const auto* u = std::get_if<UsageRow>(&row)) {
    encode_into(out, UsageView{.ts_ms = u->ts_ms, .request_id = u->request_id, .tenant = u->tenant,
                               .team = u->team, .model = u->model, .klass = u->klass, .status = u->status,
                               .prompt_tokens = u->prompt_tokens, .completion_tokens = u->completion_tokens,
                               .cached_tokens = u->cached_tokens, .engine_ms = u->engine_ms, .cost = u->cost,
                               .tokens_from = u->tokens_from});
  } else {
    const auto& a = std::get<AuditRow>(row);
    encode_into(out, AuditView{.ts_ms = a.ts_ms, .kind = a.kind, .request_id = a.request_id, .tenant = a.tenant,
                               .klass = a.klass, .model = a.model, .detail = a.detail});
  }
  return out;
}

std::optional<RowView> decode_view(std::string_view bytes) {
  Reader r(bytes);
  uint8_t kind = 0;
  if (!r.u8(kind)) return std::nullopt;
  if (kind == kUsage) {
    UsageView u;
    bool ok = r.i64(u.ts_ms);
    for (std::string_view* s : {&u.request_id, &u.tenant, &u.team, &u.model, &u.klass}) ok = ok && r.str(*s);
    ok = ok && r.i64(u.status) && r.i64(u.prompt_tokens) && r.i64(u.completion_tokens) && r.i64(u.cached_tokens) &&
         r.f64(u.engine_ms) && r.f64(u.cost) && r.str(u.tokens_from) && r.done();
    if (ok) return RowView(u);
    return std::nullopt;
  }
  if (kind == kAudit) {
    AuditView a;
    bool ok = r.i64(a.ts_ms);
    for (std::string_view* s : {&a.kind, &a.request_id, &a.tenant, &a.klass, &a.model, &a.detail}) ok = ok && r.str(*s);
    if (ok && r.done()) return RowView(a);
  }
  return std::nullopt;
}

AuditView view_of(const AuditRow& a) {
  return {.ts_ms = a.ts_ms, .kind = a.kind, .request_id = a.request_id, .tenant = a.tenant, .klass = a.klass,
          .model = a.model, .detail = a.detail};
}

std::string canonical_line(int64_t seq, const AuditView& row) {
  std::string out;
  feed_canonical_line(seq, row, [&](std::string_view bytes) { out += bytes; });
  return out;
}

}  // namespace arbiter::store
