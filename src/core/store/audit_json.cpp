#include "core/store/audit_json.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <span>

#include "core/decimal.hpp"
#include "core/store/audit_chain.hpp"
#include "core/store/clean_text.hpp"
#include "core/word_bytes.hpp"

namespace arbiter::store {

namespace {

// Bytes a JSON string takes as they are: all but control characters, the
// quote and the backslash (the text is valid UTF-8 already).
constexpr auto kPlain = [] {
  std::array<bool, 256> plain{};
  for (int c = 0x20; c < 256; ++c) plain[c] = c != '"' && c != '\\';
  return plain;
}();

// The row written straight into `out`, grown once to the longest it can be
// (a byte escaped as \u00XX takes six): no capacity check a byte.
class Writer {
 public:
  Writer(std::string& out, std::size_t most) : out_(out), at_(out.size()) {
    out_.resize(at_ + most);
    p_ = out_.data() + at_;
  }
  ~Writer() { out_.resize(static_cast<std::size_t>(p_ - out_.data())); }
  void put(char c) { *p_++ = c; }
  void number(int64_t n) { p_ = put_int(p_, n); }
  void string(std::string_view s) {
    *p_++ = '"';
    for (const char ch : s) {
      const auto c = static_cast<unsigned char>(ch);
      if (kPlain[c]) {
        *p_++ = ch;
        continue;
      }
      *p_++ = '\\';
      switch (c) {
        case '"': *p_++ = '"'; break;
        case '\\': *p_++ = '\\'; break;
        case '\n': *p_++ = 'n'; break;
        case '\r': *p_++ = 'r'; break;
        case '\t': *p_++ = 't'; break;
        default: {
          static constexpr char kHex[] = "0123456789abcdef";
          const char escaped[] = {'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
          for (const char e : escaped) *p_++ = e;
        }
      }
    }
    *p_++ = '"';
  }

 private:
  std::string& out_;
  std::size_t at_;
  char* p_;
};

}  // namespace

void append_audit_json(std::string& out, int64_t seq, const AuditView& row) {
  const std::string_view fields[] = {row.kind, row.request_id, row.tenant, row.klass, row.model, row.detail};
  std::size_t most = 2 + 2 * 21 + std::size(fields) * 3;  // brackets, numbers, quotes and commas
  for (const std::string_view field : fields) most += 6 * field.size();
  Writer w(out, most);
  w.put('[');
  w.number(seq);
  w.put(',');
  w.number(row.ts_ms);
  for (const std::string_view field : fields) {
    w.put(',');
    w.string(field);
  }
  w.put(']');
}

std::optional<std::vector<std::pair<int64_t, AuditRow>>> parse_audit_json(std::string_view json) {
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(json, ec);
  if (ec || !v.is_array()) return std::nullopt;
  std::vector<std::pair<int64_t, AuditRow>> rows;
  rows.reserve(v.as_array().size());
  for (const boost::json::value& r : v.as_array()) {
    const boost::json::array* a = r.if_array();
    if (a == nullptr || a->size() != 8 || !(*a)[0].is_int64() || !(*a)[1].is_int64()) return std::nullopt;
    std::string text[6];
    for (std::size_t i = 0; i < 6; ++i) {
      const boost::json::string* s = (*a)[i + 2].if_string();
      if (s == nullptr) return std::nullopt;
      text[i] = std::string(*s);
    }
    rows.emplace_back((*a)[0].as_int64(), AuditRow{.ts_ms = (*a)[1].as_int64(),
                                                   .kind = std::move(text[0]),
                                                   .request_id = std::move(text[1]),
                                                   .tenant = std::move(text[2]),
                                                   .klass = std::move(text[3]),
                                                   .model = std::move(text[4]),
                                                   .detail = std::move(text[5])});
  }
  return rows;
}

void append_newest(std::string_view rows_json, std::size_t limit, std::vector<AuditRow>& out) {
  auto rows = parse_audit_json(rows_json);
  if (!rows) return;
  std::sort(rows->begin(), rows->end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (auto& [seq, row] : *rows) {
    if (out.size() >= limit) return;
    out.push_back(std::move(row));
  }
}

namespace {

// Whether every byte of the fields is printable ASCII but the quote and the
// backslash: text that is clean (clean_text.hpp) and goes into JSON as it
// is. Eight bytes a step (a byte table a byte cost ~5 instructions, most of
// what a row's JSON cost): a word is plain when no byte is below 0x20,
// above 0x7E, '"' or '\\'. Each test is exact about whether any byte
// matches (the classic "has a byte less than / more than / equal to"
// word tricks), which is all that is asked.
bool plain_ascii(std::span<const std::string_view> fields) {
  uint64_t bad = 0;
  const auto word = [&](uint64_t x) {
    bad |= escape_bits(x)                           // below 0x20, '"', '\\'
           | (((x + kEveryByte) | x) & kHighBits);  // above 0x7E
  };
  for (const std::string_view field : fields) {
    const char* const p = field.data();
    const std::size_t n = field.size();
    if (n >= 8) {
      std::size_t i = 0;
      for (; i + 8 <= n; i += 8) word(load8(p + i));
      if (i < n) word(load8(p + n - 8));  // the tail: the last eight bytes
    } else {
      uint64_t x = kEveryByte * 'a';  // a short field's bytes shifted into a plain word
      for (std::size_t i = 0; i < n; ++i) x = x << 8 | static_cast<unsigned char>(p[i]);
      word(x);
    }
  }
  return bad == 0;
}

// A row whose text is all plain ASCII: the string grown once, each field
// copied whole.
void append_plain_row(std::string& out, int64_t seq, const AuditView& row,
                      std::span<const std::string_view> fields) {
  std::size_t most = 2 + 2 * 21 + fields.size() * 3;  // brackets, numbers, commas and quotes
  for (const std::string_view field : fields) most += field.size();
  const std::size_t at = out.size();
  out.resize_and_overwrite(at + most, [&](char* begin, std::size_t) {
    char* p = begin + at;
    *p++ = '[';
    p = put_int(p, seq);
    *p++ = ',';
    p = put_int(p, row.ts_ms);
    for (const std::string_view field : fields) {
      *p++ = ',';
      *p++ = '"';
      std::memcpy(p, field.data(), field.size());
      p += field.size();
      *p++ = '"';
    }
    *p++ = ']';
    return static_cast<std::size_t>(p - begin);
  });
}

}  // namespace

void AuditBatchBuilder::add(int64_t seq, const AuditView& row) {
  AuditView v = row;
  if (count_ == 0) json_.reserve(1 + rows_ * kTypicalRowBytes);
  if (count_ > 0) json_ += ',';
  ++count_;
  last_seq_ = seq;
  last_ts_ = std::max(last_ts_, v.ts_ms);
  const std::string_view fields[] = {v.kind, v.request_id, v.tenant, v.klass, v.model, v.detail};
  if (plain_ascii(fields)) {  // nearly every row: no cleaning, no escapes
    append_plain_row(json_, seq, v, fields);
    return;
  }
  bool clean = true;
  for (const std::string_view field : fields) clean = clean && is_clean_text(field);
  AuditRow cleaned;  // owns the cleaned text while it is appended
  if (!clean) {
    cleaned = {.ts_ms = v.ts_ms, .kind = clean_text(v.kind), .request_id = clean_text(v.request_id),
               .tenant = clean_text(v.tenant), .klass = clean_text(v.klass), .model = clean_text(v.model),
               .detail = clean_text(v.detail)};
    v = view_of(cleaned);
  }
  append_audit_json(json_, seq, v);
}

AuditBatchBuilder::Batch AuditBatchBuilder::finish() {
  json_ += ']';
  std::string hash = json_batch_hash(prev_hash_, json_);
  return {.json = std::move(json_), .hash = std::move(hash)};
}

}  // namespace arbiter::store
