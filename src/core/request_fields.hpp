// One pass over a request body's JSON (core/json_fast_scan, or Boost.JSON's
// SAX parser for what it declines; no document) that records what
// parse_request checks: the kind and value of the top-level fields it reads,
// and the prompt's size. The checks and their order stay in request_parser.cpp.
//
// Semantics follow the document parser's: the last of duplicate keys wins,
// strings count their unescaped characters, numbers are int64, uint64 or
// double exactly as boost::json::parse types them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/system/error_code.hpp>

namespace arbiter {

enum class JsonKind : uint8_t { kAbsent, kNull, kBool, kInt64, kUint64, kDouble, kString, kArray, kObject };

// Where a value's text lies in the scanned body.
struct TextSpan {
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::size_t offset = kNone;  // kNone: not known
  std::size_t size = 0;
};

// A scalar top-level field: its kind, for bool and int64 the value, and for
// numbers where its text lies.
struct JsonScalar {
  JsonKind kind = JsonKind::kAbsent;
  bool boolean = false;
  int64_t int64 = 0;
  double real = 0;  // a double's value
  TextSpan span;
};

// Where each top-level key of the body starts (the offset of its first
// character, after the quote), in order: the members between them, for a
// result-cache key that ignores their order (core/cache/cache_key.hpp).
struct TopKeys {
  static constexpr std::size_t kMax = 32;
  std::array<uint32_t, kMax> at{};
  uint8_t count = 0;
  bool complete = true;  // false: more than kMax, or one not found in the text
};

struct RequestFields {
  JsonKind root = JsonKind::kAbsent;
  JsonKind model = JsonKind::kAbsent;
  std::string model_name;  // when `model` is a string
  std::optional<std::string> user;  // `user`, when a string
  JsonScalar stream;
  bool include_usage = false;  // stream_options.include_usage, when a bool
  JsonScalar max_tokens;
  JsonScalar max_completion_tokens;
  JsonScalar n;  // answers asked for
  // What makes an answer repeatable (a result cache's rule): the sampling
  // temperature, a seed, tools (or the older `functions`) and log
  // probabilities asked for.
  JsonScalar temperature;
  JsonScalar seed;
  JsonKind tools = JsonKind::kAbsent;
  JsonScalar logprobs;
  TopKeys top_keys;

  // Chat: `messages`, its length, whether an element is not an object, and
  // the characters of text in each message's content (kept as tokens).
  JsonKind messages = JsonKind::kAbsent;
  std::size_t message_count = 0;
  bool message_not_object = false;
  int64_t message_tokens = 0;

  // Completions: `prompt`; a string's estimate, or an array's summed over
  // its strings (estimate), integers (1) and arrays of token ids (length).
  JsonKind prompt = JsonKind::kAbsent;
  bool prompt_bad_element = false;
  int64_t prompt_tokens = 0;
  // How many prompts: a string `prompt` is one; in an array each string and
  // each token-id array is one, and integers directly in it one together.
  int64_t prompt_count = 0;

  // Where the top-level `messages` and `prompt` keys start in the text
  // (TextSpan::kNone: absent, or a key split across parser buffers): the
  // prompt's bytes for prefix affinity run from there (core/prefix_blocks.hpp).
  std::size_t messages_at = TextSpan::kNone;
  std::size_t prompt_at = TextSpan::kNone;

  // A number anywhere in the body that Boost.JSON 1.81 reads as no finite
  // double: too large (1e400, infinity) or 0e615 (NaN), which it writes back
  // as `Infinity` or `NaN`, not JSON.
  bool number_out_of_range = false;
};

// JSON nesting accepted by default (limits.max_json_depth): deep tool schemas
// reach 32 levels.
inline constexpr std::size_t kDefaultMaxJsonDepth = 128;

// Scans `text`; the error is the JSON parser's (syntax, nesting deeper than
// `max_depth`, extra data). A lone escaped surrogate ("\ud800"), which
// engines accept, is read as U+FFFD.
// `input_is_prompt`: an embeddings body, whose `input` is recorded as
// `prompt` is (and a `prompt` key is not).
boost::system::error_code scan_request_fields(std::string_view text, RequestFields& out,
                                              std::size_t max_depth = kDefaultMaxJsonDepth,
                                              bool input_is_prompt = false);

// Rewrites each lone escaped surrogate in JSON text as \ufffd (the same
// length); true when there was one.
bool replace_lone_surrogates(std::string& text);

}  // namespace arbiter
