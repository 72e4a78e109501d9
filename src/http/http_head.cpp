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
