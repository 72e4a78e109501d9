// JSON string escaping for the log lines the gateway writes (the access log,
// the event log): `"` and `\` escaped, control bytes as \n, \t... or \u00XX,
// every other byte copied, as Boost.JSON's serializer escapes a string.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace arbiter {

// Most bytes put_json_escaped writes per byte of its input.
inline constexpr std::size_t kJsonEscapedMaxPerByte = 6;

// `text` escaped (no quotes) at `p`, which has room for
// kJsonEscapedMaxPerByte * text.size() bytes; returns the end.
char* put_json_escaped(char* p, std::string_view text);

// `text` as a JSON string, quotes included, appended to `out`.
void append_json_string(std::string& out, std::string_view text);

}  // namespace arbiter
