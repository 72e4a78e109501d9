#include "core/request_fields.hpp"

#include <array>
#include <charconv>
#include <cmath>

#include <boost/json/basic_parser_impl.hpp>

#include "core/json_fast_scan.hpp"
#include "core/request_parser.hpp"

namespace arbiter {

namespace {

using boost::system::error_code;

// Per-message overhead of chat templates (role markers), in tokens.
constexpr int64_t kTokensPerMessage = 4;

// What the container open at a depth is, for the fields recorded.
enum class Role : uint8_t {
  kIgnored,        // nothing inside is recorded
  kTop,            // the body object
  kStreamOptions,  // body.stream_options
  kMessages,       // body.messages
  kMessage,        // body.messages[i]
  kParts,          // body.messages[i].content, an array of parts
  kPart,           // body.messages[i].content[j]
  kPrompt,         // body.prompt, an array
  kTokenIds,       // body.prompt[i], an array of token ids
};

// The keys that matter, by the object they appear in.
enum class Key : uint8_t {
  kOther,
  kModel,
  kStream,
  kStreamOptions,
  kMaxTokens,
  kMaxCompletionTokens,
  kN,
  kMessages,
  kPrompt,
  kUser,
  kTemperature,
  kSeed,
  kTools,
  kLogprobs,
  kInput,         // an embedding's input: the prompt when input_is_prompt
  kIncludeUsage,  // in stream_options
  kContent,       // in a message
  kText,          // in a content part
};

Key top_key(std::string_view k) {
  // By length first: one or two candidates each.
  switch (k.size()) {
    case 1: return k == "n" ? Key::kN : Key::kOther;
    case 4:
      if (k == "user") return Key::kUser;
      return k == "seed" ? Key::kSeed : Key::kOther;
    case 5:
      if (k == "model") return Key::kModel;
      if (k == "input") return Key::kInput;
      return k == "tools" ? Key::kTools : Key::kOther;
    case 6:
      if (k == "stream") return Key::kStream;
      return k == "prompt" ? Key::kPrompt : Key::kOther;
    case 8:
      if (k == "messages") return Key::kMessages;
      return k == "logprobs" ? Key::kLogprobs : Key::kOther;
    case 9: return k == "functions" ? Key::kTools : Key::kOther;
    case 11: return k == "temperature" ? Key::kTemperature : Key::kOther;
    case 10: return k == "max_tokens" ? Key::kMaxTokens : Key::kOther;
    case 14: return k == "stream_options" ? Key::kStreamOptions : Key::kOther;
    case 21: return k == "max_completion_tokens" ? Key::kMaxCompletionTokens : Key::kOther;
    default: return Key::kOther;
  }
}

// The Boost.JSON SAX handler. Every value, containers included, goes
// through value(): what it records depends on the container it is in and
// the key before it.
class Handler {
 public:
  static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);

  Handler(std::string_view text, RequestFields& out, bool input_is_prompt = false)
      : text_(text), out_(out), input_is_prompt_(input_is_prompt) {}

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_object_begin(error_code& ec) { return open(JsonKind::kObject, ec); }
  bool on_object_end(std::size_t, error_code&) { return close(0); }
  bool on_array_begin(error_code& ec) { return open(JsonKind::kArray, ec); }
  bool on_array_end(std::size_t n, error_code&) { return close(n); }
  bool on_key_part(boost::json::string_view s, std::size_t, error_code&) {
    if (keyed()) key_buffer_.append(s.data(), s.size());
    return true;
  }
  bool on_key(boost::json::string_view s, std::size_t, error_code&) {
    if (!keyed()) return true;
    std::string_view k(s.data(), s.size());
    const bool whole = key_buffer_.empty();
    if (!whole) {
      key_buffer_.append(s.data(), s.size());
      k = key_buffer_;
    }
    set_key(k);
    key_buffer_.clear();
    if (role() == Role::kTop) {
      const bool inside = whole && s.data() >= text_.data() && s.data() <= text_.data() + text_.size();
      const std::size_t at = inside ? static_cast<std::size_t>(s.data() - text_.data()) : TextSpan::kNone;
      note_top_key(at);
      if (key_ == Key::kMessages || key_ == Key::kPrompt) (key_ == Key::kMessages ? out_.messages_at : out_.prompt_at) = at;
    }
    return true;
  }
  bool on_string_part(boost::json::string_view s, std::size_t, error_code&) {
    if (taking_string()) string_buffer_.append(s.data(), s.size());
    return true;
  }
  bool on_string(boost::json::string_view s, std::size_t n, error_code&) {
    if (taking_string()) {
      string_buffer_.append(s.data(), s.size());
      if (key_ == Key::kModel) {
        out_.model_name = std::move(string_buffer_);
      } else {
        out_.user = std::move(string_buffer_);
      }
      string_buffer_.clear();
    }
    value(JsonKind::kString, {}, n);
    return true;
  }
  bool on_number_part(boost::json::string_view, error_code&) {
    number_in_parts_ = true;
    return true;
  }
  bool on_int64(int64_t i, boost::json::string_view s, error_code&) {
    value(JsonKind::kInt64, {.kind = JsonKind::kInt64, .int64 = i, .span = span_of(s)}, 0);
    return true;
  }
  bool on_uint64(uint64_t, boost::json::string_view s, error_code&) {
    value(JsonKind::kUint64, {.kind = JsonKind::kUint64, .span = span_of(s)}, 0);
    return true;
  }
  bool on_double(double d, boost::json::string_view s, error_code&) {
    if (!std::isfinite(d)) out_.number_out_of_range = true;
    value(JsonKind::kDouble, {.kind = JsonKind::kDouble, .real = d, .span = span_of(s)}, 0);
    return true;
  }
  bool on_bool(bool b, error_code&) {
    value(JsonKind::kBool, {.kind = JsonKind::kBool, .boolean = b}, 0);
    return true;
  }
  bool on_null(error_code&) {
    value(JsonKind::kNull, {}, 0);
    return true;
  }
  bool on_comment_part(boost::json::string_view, error_code&) { return true; }
  bool on_comment(boost::json::string_view, error_code&) { return true; }
  // For json_fast::scan: whether the next string value's text is read (it
  // unescapes only those).
  bool wants_text() const { return taking_string(); }

 private:
  // Containers deeper than roles_ hold nothing the scan records.
  Role role() const { return depth_ < roles_.size() ? roles_[depth_] : Role::kIgnored; }
  // Where a number's text lies: known when the parser handed it over whole
  // and from the scanned text (always, with the text given in one piece).
  TextSpan span_of(boost::json::string_view s) {
    const bool whole = !number_in_parts_ && s.data() >= text_.data() && s.data() + s.size() <= text_.data() + text_.size();
    number_in_parts_ = false;
    if (!whole) return {};
    return {.offset = static_cast<std::size_t>(s.data() - text_.data()), .size = s.size()};
  }

  void note_top_key(std::size_t at) {
    TopKeys& keys = out_.top_keys;
    if (at == TextSpan::kNone || keys.count == TopKeys::kMax || at > UINT32_MAX) {
      keys.complete = false;
      return;
    }
    keys.at[keys.count++] = static_cast<uint32_t>(at);
  }

  bool keyed() const {
    const Role r = role();
    return r == Role::kTop || r == Role::kStreamOptions || r == Role::kMessage || r == Role::kPart;
  }
  // The top-level strings kept whole: the model and the user.
  bool taking_string() const {
    return depth_ == 1 && role() == Role::kTop && (key_ == Key::kModel || key_ == Key::kUser);
  }

  void set_key(std::string_view k) {
    switch (role()) {
      case Role::kTop:
        key_ = top_key(k);
        if (key_ == Key::kInput) key_ = input_is_prompt_ ? Key::kPrompt : Key::kOther;
        else if (key_ == Key::kPrompt && input_is_prompt_) key_ = Key::kOther;
        break;
      case Role::kStreamOptions: key_ = k == "include_usage" ? Key::kIncludeUsage : Key::kOther; break;
      case Role::kMessage: key_ = k == "content" ? Key::kContent : Key::kOther; break;
      case Role::kPart: key_ = k == "text" ? Key::kText : Key::kOther; break;
      default: break;
    }
  }

  // A container opens: it is a value of its parent, then the role its
  // members are read in.
  bool open(JsonKind kind, error_code& ec) {
    const Role child = value(kind, {}, 0);
    if (++depth_ < roles_.size()) roles_[depth_] = child;  // the parser bounds the depth
    return true;
  }

  bool close(std::size_t members) {
    switch (role()) {
      case Role::kMessages: out_.message_count = members; break;
      case Role::kMessage: out_.message_tokens += estimate_tokens(content_chars_); break;
      case Role::kParts: content_chars_ = parts_chars_; break;
      case Role::kPart: parts_chars_ += part_chars_; break;
      case Role::kTokenIds: out_.prompt_tokens += static_cast<int64_t>(members); break;
      case Role::kPrompt: out_.prompt_count += prompt_ids_ ? 1 : 0; break;  // the integers: one prompt
      default: break;
    }
    --depth_;
    return true;
  }

  // Records one value; returns the role its members (if a container) have.
  Role value(JsonKind kind, JsonScalar scalar, std::size_t string_size) {
    switch (role()) {
      case Role::kIgnored:
      case Role::kTokenIds:
        return Role::kIgnored;
      case Role::kTop:
        return top_value(kind, scalar, string_size);
      case Role::kStreamOptions:
        if (key_ == Key::kIncludeUsage) out_.include_usage = kind == JsonKind::kBool && scalar.boolean;
        return Role::kIgnored;
      case Role::kMessages:
        if (kind != JsonKind::kObject) {
          out_.message_not_object = true;
          return Role::kIgnored;
        }
        out_.message_tokens += kTokensPerMessage;
        content_chars_ = 0;
        return Role::kMessage;
      case Role::kMessage:
        if (key_ != Key::kContent) return Role::kIgnored;
        content_chars_ = kind == JsonKind::kString ? string_size : 0;
        if (kind != JsonKind::kArray) return Role::kIgnored;
        parts_chars_ = 0;
        return Role::kParts;
      case Role::kParts:
        if (kind != JsonKind::kObject) return Role::kIgnored;
        part_chars_ = 0;
        return Role::kPart;
      case Role::kPart:
        if (key_ == Key::kText) part_chars_ = kind == JsonKind::kString ? string_size : 0;
        return Role::kIgnored;
      case Role::kPrompt:
        if (kind == JsonKind::kString) {
          out_.prompt_tokens += estimate_tokens(string_size);
          ++out_.prompt_count;
        } else if (kind == JsonKind::kInt64 || kind == JsonKind::kUint64) {
          out_.prompt_tokens += 1;
          prompt_ids_ = true;
        } else if (kind == JsonKind::kArray) {
          ++out_.prompt_count;
          return Role::kTokenIds;
        } else {
          out_.prompt_bad_element = true;
        }
        return Role::kIgnored;
    }
    return Role::kIgnored;
  }

  Role top_value(JsonKind kind, JsonScalar scalar, std::size_t string_size) {
    scalar.kind = kind;
    if (depth_ == 0) {
      out_.root = kind;
      return kind == JsonKind::kObject ? Role::kTop : Role::kIgnored;
    }
    switch (key_) {
      case Key::kModel:
        out_.model = kind;
        if (kind != JsonKind::kString) out_.model_name.clear();
        return Role::kIgnored;
      case Key::kUser:
        if (kind != JsonKind::kString) out_.user.reset();
        return Role::kIgnored;
      case Key::kStream:
        out_.stream = scalar;
        return Role::kIgnored;
      case Key::kStreamOptions:
        out_.include_usage = false;  // a later stream_options replaces an earlier one
        return kind == JsonKind::kObject ? Role::kStreamOptions : Role::kIgnored;
      case Key::kMaxTokens:
        out_.max_tokens = scalar;
        return Role::kIgnored;
      case Key::kMaxCompletionTokens:
        out_.max_completion_tokens = scalar;
        return Role::kIgnored;
      case Key::kN:
        out_.n = scalar;
        return Role::kIgnored;
      case Key::kTemperature:
        // The fast scan hands doubles over as text only.
        if (kind == JsonKind::kDouble && scalar.span.offset != TextSpan::kNone) {
          const char* first = text_.data() + scalar.span.offset;
          std::from_chars(first, first + scalar.span.size, scalar.real);
        }
        out_.temperature = scalar;
        return Role::kIgnored;
      case Key::kSeed:
        out_.seed = scalar;
        return Role::kIgnored;
      case Key::kTools:
        out_.tools = kind;
        return Role::kIgnored;
      case Key::kLogprobs:
        out_.logprobs = scalar;
        return Role::kIgnored;
      case Key::kMessages:
        out_.messages = kind;
        out_.message_count = 0;
        out_.message_not_object = false;
        out_.message_tokens = 0;
        return kind == JsonKind::kArray ? Role::kMessages : Role::kIgnored;
      case Key::kPrompt:
        out_.prompt = kind;
        out_.prompt_bad_element = false;
        out_.prompt_tokens = kind == JsonKind::kString ? estimate_tokens(string_size) : 0;
        out_.prompt_count = kind == JsonKind::kString ? 1 : 0;
        prompt_ids_ = false;
        return kind == JsonKind::kArray ? Role::kPrompt : Role::kIgnored;
      default:
        return Role::kIgnored;
    }
  }

  std::string_view text_;
  RequestFields& out_;
  bool input_is_prompt_ = false;
  bool number_in_parts_ = false;
  // Role of the container open at each depth; [0] is the document. The
  // recorded fields lie within the first few levels: deeper ones are ignored.
  std::array<Role, 16> roles_{Role::kTop};
  std::size_t depth_ = 0;
  Key key_ = Key::kOther;    // the last key read in a keyed role
  std::string key_buffer_;   // a key that came in parts
  std::string string_buffer_;  // the model or user string, when it came in parts
  std::size_t content_chars_ = 0;  // the current message's content
  std::size_t parts_chars_ = 0;    // its parts so far
  std::size_t part_chars_ = 0;     // the current part's text
  bool prompt_ids_ = false;        // the prompt array holds integers (counted at its end)
};

}  // namespace

namespace {
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
// The code unit of the \uXXXX escape at `at` (pointing at the backslash), or -1.
int escaped_unit(std::string_view text, std::size_t at) {
  if (at + 6 > text.size() || text[at] != '\\' || text[at + 1] != 'u') return -1;
  int unit = 0;
  for (std::size_t i = at + 2; i < at + 6; ++i) {
    const int d = hex_value(text[i]);
    if (d < 0) return -1;
    unit = unit * 16 + d;
  }
  return unit;
}
bool is_leading(int unit) { return unit >= 0xd800 && unit <= 0xdbff; }
bool is_trailing(int unit) { return unit >= 0xdc00 && unit <= 0xdfff; }

error_code scan(std::string_view text, RequestFields& out, std::size_t max_depth, bool input_is_prompt) {
  // The common body at vector speed; whatever it declines (errors
  // included) is read again by Boost.JSON, which has the last word.
  Handler fast(text, out, input_is_prompt);
  if (json_fast::scan(text, fast, max_depth)) return {};
  out = RequestFields{};
  boost::json::parse_options options;
  options.max_depth = max_depth;
  boost::json::basic_parser<Handler> parser(options, text, out, input_is_prompt);
  error_code ec;
  const std::size_t used = parser.write_some(false, text.data(), text.size(), ec);
  if (!ec && used < text.size()) ec = boost::json::error::extra_data;
  return ec;
}
}  // namespace

bool replace_lone_surrogates(std::string& text) {
  bool replaced = false;
  for (std::size_t at = text.find('\\'); at != std::string::npos && at + 1 < text.size();
       at = text.find('\\', at)) {
    const int unit = escaped_unit(text, at);
    if (unit < 0) {
      at += 2;  // another escape (\\, \", \n, ...), skipped whole
      continue;
    }
    if (is_leading(unit) && is_trailing(escaped_unit(text, at + 6))) {
      at += 12;  // a pair: a valid character
      continue;
    }
    if (is_leading(unit) || is_trailing(unit)) {
      text.replace(at + 2, 4, "fffd");
      replaced = true;
    }
    at += 6;
  }
  return replaced;
}

error_code scan_request_fields(std::string_view text, RequestFields& out, std::size_t max_depth,
                               bool input_is_prompt) {
  const error_code ec = scan(text, out, max_depth, input_is_prompt);
  if (!ec || text.find("\\u") == std::string_view::npos) return ec;
  // Boost.JSON refuses a lone escaped surrogate; engines (Python's json)
  // take it. Read as U+FFFD, an escape of the same length: offsets hold.
  std::string clean(text);
  if (!replace_lone_surrogates(clean)) return ec;
  out = RequestFields{};
  return scan(clean, out, max_depth, input_is_prompt);
}

}  // namespace arbiter
