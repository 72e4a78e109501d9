#include "core/tracing/span.hpp"

#include <array>
#include <charconv>
#include <cstdio>

namespace arbiter::tracing {

namespace {

bool plain(char c) { return c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20; }

void append_string(std::string& out, std::string_view s) {
  out.push_back('"');
  // Runs of plain bytes appended at once; the rest escaped one by one.
  std::size_t from = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (plain(s[i])) continue;
    out.append(s.data() + from, i - from);
    from = i + 1;
    switch (s[i]) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(s[i]));
        out += buf;
      }
    }
  }
  out.append(s.data() + from, s.size() - from);
  out.push_back('"');
}

template <std::size_t N>
void append_hex(std::string& out, const std::array<uint8_t, N>& id) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (const uint8_t b : id) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 0xf]);
  }
}

template <class Int>
void append_int(std::string& out, Int v) {
  char buf[24];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, end);
}

void append_value(std::string& out, const AttributeValue& v) {
  if (const auto* s = std::get_if<std::string>(&v)) {
    out += "{\"stringValue\":";
    append_string(out, *s);
  } else if (const auto* i = std::get_if<int64_t>(&v)) {
    out += "{\"intValue\":\"";
    append_int(out, *i);
    out += '"';
  } else if (const auto* d = std::get_if<double>(&v)) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, *d);
    out += "{\"doubleValue\":";
    out.append(buf, end);
  } else {
    out += std::get<bool>(v) ? "{\"boolValue\":true" : "{\"boolValue\":false";
  }
  out += '}';
}

void append_span(std::string& out, const Span& s) {
  out += "{\"traceId\":\"";
  append_hex(out, s.trace_id);
  out += "\",\"spanId\":\"";
  append_hex(out, s.span_id);
  if (s.parent) {
    out += "\",\"parentSpanId\":\"";
    append_hex(out, *s.parent);
  }
  out += "\",\"name\":";
  append_string(out, s.name);
  out += ",\"kind\":";
  append_int(out, static_cast<int>(s.kind));
  out += ",\"startTimeUnixNano\":\"";
  append_int(out, s.start_ns);
  out += "\",\"endTimeUnixNano\":\"";
  append_int(out, s.end_ns);
  out += "\",\"attributes\":[";
  for (std::size_t i = 0; i < s.attributes.size(); ++i) {
    if (i > 0) out += ',';
    out += "{\"key\":";
    append_string(out, s.attributes[i].first);
    out += ",\"value\":";
    append_value(out, s.attributes[i].second);
    out += '}';
  }
  out += ']';
  if (s.error) {
    out += ",\"status\":{\"code\":2,\"message\":";
    append_string(out, s.error_message);
    out += '}';
  }
  out += '}';
}

}  // namespace

std::string otlp_json(std::span<const Span> spans, std::string_view service) {
  std::string out;
  out.reserve(256 + spans.size() * 640);
  out += "{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":\"service.name\",\"value\":{\"stringValue\":";
  append_string(out, service);
  out += "}}]},\"scopeSpans\":[{\"scope\":{\"name\":\"arbiter\"},\"spans\":[";
  for (std::size_t i = 0; i < spans.size(); ++i) {
    if (i > 0) out += ',';
    append_span(out, spans[i]);
  }
  out += "]}]}]}";
  return out;
}

}  // namespace arbiter::tracing
