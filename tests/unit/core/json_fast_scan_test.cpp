// json_fast::scan (core/json_fast_scan.hpp) against Boost.JSON's SAX parser
// on generated bodies: long strings, every escape, surrogate pairs and lone
// surrogates, multi-byte and invalid UTF-8, control bytes, numbers at the
// int64/uint64/double edges, deep nesting, then random damage. Whatever the
// scan accepts, Boost.JSON accepts with the same events (keys, string sizes
// and texts, number kinds, values and places, container sizes); and the
// scan accepts nearly every valid body of the common kind, so the fast path
// is the one exercised.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include <boost/json/basic_parser_impl.hpp>

#include "core/json_fast_scan.hpp"
#include "core/request_fields.hpp"

namespace arbiter {
namespace {

using boost::system::error_code;

// Every event, as text.
class Recorder {
 public:
  static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);

  explicit Recorder(std::string_view text) : text_(text) {}

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return add("end"); }
  bool on_object_begin(error_code&) { return add("{"); }
  bool on_object_end(std::size_t n, error_code&) { return add("}" + std::to_string(n)); }
  bool on_array_begin(error_code&) { return add("["); }
  bool on_array_end(std::size_t n, error_code&) { return add("]" + std::to_string(n)); }
  bool on_key_part(boost::json::string_view s, std::size_t, error_code&) { return part(s); }
  bool on_key(boost::json::string_view s, std::size_t n, error_code&) { return whole("K", s, n); }
  bool on_string_part(boost::json::string_view s, std::size_t, error_code&) { return part(s); }
  bool on_string(boost::json::string_view s, std::size_t n, error_code&) { return whole("S", s, n); }
  bool on_number_part(boost::json::string_view, error_code&) { return true; }
  bool on_int64(int64_t i, boost::json::string_view s, error_code&) { return add("I" + std::to_string(i) + at(s)); }
  bool on_uint64(uint64_t, boost::json::string_view s, error_code&) { return add("U" + at(s)); }
  bool on_double(double d, boost::json::string_view s, error_code&) {
    if (!std::isfinite(d)) non_finite = true;
    return add("D" + at(s));
  }
  bool on_bool(bool b, error_code&) { return add(b ? "true" : "false"); }
  bool on_null(error_code&) { return add("null"); }
  bool on_comment_part(boost::json::string_view, error_code&) { return true; }
  bool on_comment(boost::json::string_view, error_code&) { return true; }
  bool wants_text() const { return true; }

  std::string log;
  bool non_finite = false;

 private:
  bool add(const std::string& event) {
    log += event;
    log += '\n';
    return true;
  }
  bool part(boost::json::string_view s) {
    parts_.append(s.data(), s.size());
    return true;
  }
  bool whole(const char* tag, boost::json::string_view s, std::size_t n) {
    parts_.append(s.data(), s.size());
    add(tag + std::to_string(n) + ":" + parts_);
    parts_.clear();
    return true;
  }
  // A number's place in the text.
  std::string at(boost::json::string_view s) const {
    return "@" + std::to_string(s.data() - text_.data()) + "+" + std::to_string(s.size());
  }

  std::string_view text_;
  std::string parts_;
};

struct Outcome {
  bool ok = false;
  std::string log;
  bool non_finite = false;
};

Outcome boost_scan(std::string_view text, std::size_t max_depth) {
  boost::json::parse_options options;
  options.max_depth = max_depth;
  boost::json::basic_parser<Recorder> parser(options, text);
  error_code ec;
  const std::size_t used = parser.write_some(false, text.data(), text.size(), ec);
  return {!ec && used == text.size(), parser.handler().log, parser.handler().non_finite};
}

Outcome fast_scan(std::string_view text, std::size_t max_depth) {
  Recorder r(text);
  const bool ok = json_fast::scan(text, r, max_depth);
  return {ok, r.log, r.non_finite};
}

// Random JSON text with what a prompt may hold; `valid` keeps it well formed.
class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  std::string body(bool valid) {
    valid_ = valid;
    std::string out;
    value(out, 0, /*top=*/true);
    return out;
  }

 private:
  std::size_t pick(std::size_t n) { return rng_() % n; }
  bool chance(int percent) { return static_cast<int>(pick(100)) < percent; }

  void space(std::string& out) {
    static constexpr std::string_view kSpace[] = {"", "", "", " ", "\n  ", "\t", "\r\n"};
    out += kSpace[pick(std::size(kSpace))];
  }

  void value(std::string& out, int depth, bool top = false) {
    space(out);
    const std::size_t kind = top ? 0 : pick(depth > 6 ? 5 : 7);
    switch (kind) {
      case 0: object(out, depth); break;
      case 1: string(out); break;
      case 2: number(out); break;
      case 3: out += chance(50) ? "true" : "false"; break;
      case 4: out += "null"; break;
      case 5: array(out, depth); break;
      default: object(out, depth); break;
    }
    space(out);
  }

  void object(std::string& out, int depth) {
    static constexpr std::string_view kKeys[] = {"model", "messages", "content", "text", "prompt", "stream",
                                                 "max_tokens", "user", "stream_options", "include_usage",
                                                 "mod\\u0065l", "role", "k\\\"ey", "\\u00e9t\\u00e9"};
    out += '{';
    const std::size_t n = pick(6);
    for (std::size_t i = 0; i < n; ++i) {
      if (i) out += ',';
      space(out);
      out += '"';
      out += kKeys[pick(std::size(kKeys))];
      out += '"';
      space(out);
      out += ':';
      value(out, depth + 1);
    }
    out += '}';
  }

  void array(std::string& out, int depth) {
    out += '[';
    const std::size_t n = pick(6);
    for (std::size_t i = 0; i < n; ++i) {
      if (i) out += ',';
      value(out, depth + 1);
    }
    out += ']';
  }

  void string(std::string& out) {
    out += '"';
    const std::size_t pieces = chance(10) ? 100 + pick(300) : pick(8);
    for (std::size_t i = 0; i < pieces; ++i) piece(out);
    out += '"';
  }

  void piece(std::string& out) {
    static constexpr std::string_view kEscapes[] = {"\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t",
                                                    "\\u0041", "\\u00e9", "\\u07ff", "\\u0800", "\\uFFFF",
                                                    "\\u0000", "\\ud83d\\ude00", "\\uD800\\uDC00", "\\udbff\\udfff"};
    static constexpr std::string_view kUtf8[] = {"\xc3\xa9", "\xdf\xbf", "\xe2\x82\xac", "\xef\xbf\xbd",
                                                 "\xe0\xa0\x80", "\xed\x9f\xbf", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf"};
    // Wrong in Boost.JSON's reading.
    static constexpr std::string_view kBad[] = {
        "\\ud800", "\\udc00", "\\ud800\\u0041", "\\ud800x", "\\x", "\\u12g4", "\x01", "\x1f", "\xc0\xaf",
        "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xf8\x88\x80\x80\x80", "\x80", "\xc3", "\xe2\x82",
        "\xff", "\\"};
    switch (pick(valid_ ? 4 : 5)) {
      case 0: {  // ASCII text, often long
        const std::size_t n = chance(3) ? pick(70000) : pick(40);
        for (std::size_t i = 0; i < n; ++i) {
          const char c = static_cast<char>(' ' + pick(95));
          out += c == '"' || c == '\\' ? 'a' : c;
        }
        break;
      }
      case 1: out += kEscapes[pick(std::size(kEscapes))]; break;
      case 2: out += kUtf8[pick(std::size(kUtf8))]; break;
      case 3: out += "The quick brown fox jumps over the lazy dog. "; break;
      default: out += kBad[pick(std::size(kBad))]; break;
    }
  }

  void number(std::string& out) {
    static constexpr std::string_view kNumbers[] = {
        "0", "-0", "7", "-7", "4096", "0.5", "-0.25", "1e5", "1E+5", "2.5e-3", "1e250", "1e-250", "1e0001",
        "9223372036854775807", "9223372036854775808", "-9223372036854775808", "18446744073709551615",
        "123456789012345678", "0.12345678901234567", "3.14159"};
    // Valid, but left to Boost.JSON: past uint64, or a double it may not read as finite.
    static constexpr std::string_view kEdgeNumbers[] = {"-9223372036854775809", "18446744073709551616", "1e400",
                                                        "-1e400", "0e615", "1e00001", "1.5e251",
                                                        "1234567890.1234567890", "0.123456789012345678"};
    static constexpr std::string_view kBadNumbers[] = {"01", "-", "1.", ".5", "1e", "1e+", "--1", "+1", "0x10", "1.e5"};
    if (!valid_ && chance(30)) {
      out += kBadNumbers[pick(std::size(kBadNumbers))];
    } else if (chance(5)) {
      out += kEdgeNumbers[pick(std::size(kEdgeNumbers))];
    } else {
      out += kNumbers[pick(std::size(kNumbers))];
    }
  }

  std::mt19937 rng_;
  bool valid_ = true;
};

void damage(std::string& body, std::mt19937& rng) {
  static const std::string kAlphabet = R"({}[]:,"\ 0123456789-.eEtrufalsnu)" "\x01\xc3\xa9\xed\xa0\xff";
  const int edits = 1 + static_cast<int>(rng() % 3);
  for (int e = 0; e < edits && !body.empty(); ++e) {
    const std::size_t at = rng() % body.size();
    switch (rng() % 3) {
      case 0: body[at] = kAlphabet[rng() % kAlphabet.size()]; break;
      case 1: body.insert(body.begin() + static_cast<std::ptrdiff_t>(at), kAlphabet[rng() % kAlphabet.size()]); break;
      default: body.erase(at, 1); break;
    }
  }
}

// Compares one text; returns whether the scan accepted it.
bool expect_agreement(const std::string& text, std::size_t max_depth = kDefaultMaxJsonDepth) {
  const Outcome fast = fast_scan(text, max_depth);
  if (!fast.ok) return false;
  const Outcome reference = boost_scan(text, max_depth);
  EXPECT_TRUE(reference.ok) << "accepted what Boost.JSON refuses: " << text.substr(0, 400);
  EXPECT_FALSE(reference.non_finite) << text.substr(0, 400);
  EXPECT_EQ(fast.log, reference.log) << text.substr(0, 400);
  return true;
}

TEST(JsonFastScan, GeneratedBodiesReadAsBoostJsonReadsThem) {
  Generator gen(17);
  std::mt19937 rng(4242);
  int valid = 0, fast_valid = 0, damaged_fast = 0;
  for (int i = 0; i < 3000 && !HasFailure(); ++i) {
    const std::string body = gen.body(/*valid=*/i % 2 == 0);
    const bool fast = expect_agreement(body);
    if (boost_scan(body, kDefaultMaxJsonDepth).ok) {
      ++valid;
      fast_valid += fast;
    }
    std::string damaged = body;
    damage(damaged, rng);
    damaged_fast += expect_agreement(damaged);
  }
  // Valid bodies the scan declines hold an edge number (1e400, past
  // uint64...): most take the fast path.
  EXPECT_GT(valid, 1000);
  EXPECT_GT(fast_valid, valid * 3 / 4);
  EXPECT_GT(damaged_fast, 100);  // damage that leaves JSON valid is compared too
}

TEST(JsonFastScan, CommonBodiesAreNotDeclined) {
  // A chat request with a long prompt, escapes and non-ASCII text: the
  // whole point is that it takes the fast path.
  std::string prompt;
  for (int i = 0; i < 2000; ++i) prompt += "Summarise: caf\xc3\xa9 \\u00e9 \\\"quoted\\\" line\\n \xf0\x9f\x98\x80 ";
  const std::string body = R"({"model":"meta-llama\/Llama-3","stream":true,"temperature":0.7,"max_tokens":512,)"
                           R"("messages":[{"role":"system","content":"be brief"},{"role":"user","content":")" +
                           prompt + R"("}],"user":"u\u00e9","logit_bias":{"50256":-100}})";
  EXPECT_TRUE(expect_agreement(body));
}

TEST(JsonFastScan, DeclinesWhatBoostJsonMustDecide) {
  for (const std::string text : {"", " ", "{", "{}x", "[1,]", "{\"a\":1,}", "\"\\ud800\"", "\"\\udc00\"", "1e400",
                                 "0e615", "18446744073709551616", "-9223372036854775809", "01", "\"\x01\"",
                                 "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "tru", "nul", "[1 2]", "{\"a\" 1}", "{1:2}"}) {
    SCOPED_TRACE(text);
    EXPECT_FALSE(fast_scan(text, kDefaultMaxJsonDepth).ok);
  }
  // Nesting at the limit is left to Boost.JSON's verdict.
  const std::string deep = std::string(5, '[') + std::string(5, ']');
  EXPECT_TRUE(fast_scan(deep, 8).ok);
  EXPECT_FALSE(fast_scan(deep, 5).ok);
  EXPECT_FALSE(fast_scan(std::string(600, '[') + std::string(600, ']'), 1000).ok);
}

TEST(JsonFastScan, RequestFieldsAreTheSameEitherWay) {
  // scan_request_fields takes the fast path here, and Boost.JSON's after a
  // lone surrogate sends it there (then read as U+FFFD): same figures.
  const std::string text = R"({"model":"m","messages":[{"role":"user","content":"ab\u00e9\ud83d\ude00cd"}],"max_tokens":9})";
  std::string lone = text;
  lone.replace(lone.find("\\ud83d\\ude00"), 12, "\\ud83d\\u0041");  // a lone leading surrogate, then 'A'
  RequestFields fast, slow;
  ASSERT_FALSE(scan_request_fields(text, fast));
  ASSERT_FALSE(scan_request_fields(lone, slow));
  EXPECT_EQ(fast.model_name, "m");
  EXPECT_EQ(fast.message_tokens, 4 + 3);  // "ab" + 2 + 4 + "cd": 10 bytes
  EXPECT_EQ(slow.message_tokens, 4 + 3);  // "ab" + 2 + 3 + 1 + "cd": 10 bytes
  EXPECT_EQ(fast.max_tokens.span.offset, text.find("9}"));
  EXPECT_EQ(fast.messages_at, text.find("messages"));
}

}  // namespace
}  // namespace arbiter
