#include "http/http_head.hpp"

#include <charconv>

namespace arbiter {

namespace {
void append_field(std::string& out, std::string_view name, std::string_view value) {
  out.append(name).append(": ").append(value).append("\r\n");
}
void append_number(std::string& out, std::size_t n) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, n).ptr;
  out.append(digits, end);
}
}  // namespace

void write_request_head(const UpstreamRequest& r, std::string& out) {
  out.clear();
  out.append("POST ").append(r.target).append(" HTTP/1.1\r\n");
  append_field(out, "Host", r.host);
  append_field(out, "Content-Type", "application/json");
  if (!r.accept.empty()) append_field(out, "Accept", r.accept);
  append_field(out, "x-request-id", r.request_id);
  out.append("Content-Length: ");
  append_number(out, r.body.size());
  out.append("\r\n\r\n");
}

void write_response_head(const ResponseHead& head, std::optional<std::size_t> content_length,
                         bool keep_alive, std::string& out) {
  out.clear();
  out.append("HTTP/1.1 ");
  append_number(out, head.status);
  out.push_back(' ');
  const std::string_view reason = http::obsolete_reason(static_cast<http::status>(head.status));
  out.append(reason).append("\r\n");
  if (!head.content_type.empty()) append_field(out, "Content-Type", head.content_type);
  if (!head.cache_control.empty()) append_field(out, "Cache-Control", head.cache_control);
  for (const auto& [name, value] : head.upstream) append_field(out, name, value);
  for (const auto& [name, value] : head.gateway) append_field(out, name, value);
  if (content_length) {
    out.append("Content-Length: ");
    append_number(out, *content_length);
    out.append("\r\n");
  } else {
    out.append("Transfer-Encoding: chunked\r\n");
  }
  if (!keep_alive) out.append("Connection: close\r\n");
  out.append("\r\n");
}

void write_response_head(const http::response_header<>& head, std::string& out) {
  out.clear();
  out.append(head.version() == 10 ? "HTTP/1.0 " : "HTTP/1.1 ");
  append_number(out, head.result_int());
  out.push_back(' ');
  out.append(head.reason());
  out.append("\r\n");
  for (const auto& f : head) append_field(out, f.name_string(), f.value());
  out.append("\r\n");
}

}  // namespace arbiter
