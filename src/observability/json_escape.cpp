#include "observability/json_escape.hpp"

#include <cstring>

namespace arbiter {
namespace {

char* put(char* p, std::string_view text) {
  std::memcpy(p, text.data(), text.size());
  return p + text.size();
}

}  // namespace

char* put_json_escaped(char* p, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  const char* run = text.data();  // bytes copied as they are, in runs
  const char* const end = text.data() + text.size();
  for (const char* c = run; c != end; ++c) {
    const auto byte = static_cast<unsigned char>(*c);
    if (byte >= 0x20 && byte != '"' && byte != '\\') continue;
    p = put(p, {run, static_cast<std::size_t>(c - run)});
    run = c + 1;
    *p++ = '\\';
    switch (byte) {
      case '"': *p++ = '"'; break;
      case '\\': *p++ = '\\'; break;
      case '\b': *p++ = 'b'; break;
      case '\t': *p++ = 't'; break;
      case '\n': *p++ = 'n'; break;
      case '\f': *p++ = 'f'; break;
      case '\r': *p++ = 'r'; break;
      default: {
        const char u[] = {'u', '0', '0', kHex[byte >> 4], kHex[byte & 15]};
        p = put(p, {u, sizeof u});
      }
    }
  }
  return put(p, {run, static_cast<std::size_t>(end - run)});
}

void append_json_string(std::string& out, std::string_view text) {
  const std::size_t at = out.size();
  out.resize(at + 2 + kJsonEscapedMaxPerByte * text.size());
  char* p = out.data() + at;
  *p++ = '"';
  p = put_json_escaped(p, text);
  *p++ = '"';
  out.resize(static_cast<std::size_t>(p - out.data()));
}

}  // namespace arbiter
