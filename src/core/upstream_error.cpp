#include "core/upstream_error.hpp"

#include <algorithm>
#include <cstdint>

#include <boost/json.hpp>
#include <boost/json/detail/utf8.hpp>

#include "core/ascii_text.hpp"

namespace arbiter {

namespace {

constexpr std::string_view kCut = "...";
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
// The engine's own type, param and code, when lifted from its flat shape:
// names, not prose.
constexpr std::size_t kFieldBytes = 128;

// Length of the well-formed UTF-8 sequence at text[i] (RFC 3629: no
// overlong forms, surrogates or code points past U+10FFFF), 0 if none.
// Boost.JSON's own check, as core/json_fast_scan uses it.
std::size_t utf8_length(std::string_view text, std::size_t i) {
  const char c = text[i];
  if (static_cast<unsigned char>(c) < 0x80) return 1;
  const uint16_t first = boost::json::detail::classify_utf8(c);
  const std::size_t n = first & 0xff;
  if (n == 0 || text.size() - i < n || !boost::json::detail::is_valid_utf8(text.data() + i, first)) return 0;
  return n;
}

// The body as a JSON object; nullopt for anything else (text, HTML, a JSON
// array, invalid JSON or UTF-8). Only a body that starts like an object is
// parsed.
std::optional<boost::json::object> parse_object(std::string_view body) {
  const std::string_view text = trim_ascii(body);
  if (text.empty() || text.front() != '{') return std::nullopt;
  boost::system::error_code ec;
  boost::json::value value = boost::json::parse(text, ec);
  if (ec || !value.is_object()) return std::nullopt;
  return std::move(value.as_object());
}

bool is_openai_error(const boost::json::object& object) {
  const auto* error = object.if_contains("error");
  if (!error || !error->is_object()) return false;
  const auto* message = error->as_object().if_contains("message");
  return message && message->is_string();
}

const boost::json::string* string_member(const boost::json::object& object, std::string_view name) {
  const auto* value = object.if_contains(name);
  return value && value->is_string() ? &value->get_string() : nullptr;
}

std::string_view view(const boost::json::string& s) { return {s.data(), s.size()}; }

}  // namespace

std::string_view upstream_error_type(unsigned status) {
  if (status == 401) return "authentication_error";
  if (status == 403) return "permission_error";
  if (status == 429) return "rate_limit_error";
  if (status >= 400 && status < 500) return "invalid_request_error";
  return "server_error";
}

bool is_openai_error(std::string_view body) {
  const auto object = parse_object(body);
  return object && is_openai_error(*object);
}

std::string bounded_message(std::string_view text, std::size_t max_bytes) {
  text = trim_ascii(text);
  std::string out;
  out.reserve(std::min(text.size(), max_bytes) + kCut.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_length(text, i);
    const std::string_view piece = n > 0 ? text.substr(i, n) : kReplacement;
    if (out.size() + piece.size() > max_bytes) {
      out.append(kCut);
      break;
    }
    out.append(piece);
    i += std::max<std::size_t>(n, 1);
  }
  return out;
}

std::optional<std::string> openai_error_body(unsigned status, std::string_view body) {
  const auto object = parse_object(body);
  if (object && is_openai_error(*object)) return std::nullopt;

  boost::json::object error;
  error["message"] = nullptr;  // first in the object, as in the gateway's own
  error["type"] = upstream_error_type(status);
  error["param"] = nullptr;
  error["code"] = "upstream_error";
  const boost::json::string* message = nullptr;
  if (object) {
    message = string_member(*object, "message");
    if (message) {
      // vLLM's and SGLang's flat shape: its own fields, lifted.
      if (const auto* type = string_member(*object, "type"); type && !type->empty()) {
        error["type"] = bounded_message(view(*type), kFieldBytes);
      }
      if (const auto* param = string_member(*object, "param"))
        error["param"] = bounded_message(view(*param), kFieldBytes);
      if (const auto* code = object->if_contains("code")) {
        if (code->is_string())
          error["code"] = bounded_message(view(code->get_string()), kFieldBytes);
        if (code->is_number()) error["code"] = *code;
      }
    } else if (!(message = string_member(*object, "error"))) {
      message = string_member(*object, "detail");
    }
  }
  std::string text = bounded_message(message ? view(*message) : body);
  if (text.empty()) {
    text = "the backend answered HTTP " + std::to_string(status) +
           (message ? " with an empty message" : " with an empty body");
  }
  error["message"] = std::move(text);
  boost::json::object outer;
  outer["error"] = std::move(error);
  return boost::json::serialize(outer);
}

}  // namespace arbiter
