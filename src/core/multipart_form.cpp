#include "core/multipart_form.hpp"

#include <algorithm>
#include <cctype>

namespace arbiter {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A parameter's value in a header value ("form-data; name=\"file\"").
std::string param(std::string_view value, std::string_view key) {
  while (!value.empty()) {
    const std::size_t semi = value.find(';');
    std::string_view item = trim(value.substr(0, semi));
    value.remove_prefix(semi == std::string_view::npos ? value.size() : semi + 1);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos || !iequals(trim(item.substr(0, eq)), key)) continue;
    std::string_view v = trim(item.substr(eq + 1));
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    return std::string(v);
  }
  return {};
}

}  // namespace

std::expected<std::string, std::string> form_boundary(std::string_view content_type) {
  const std::size_t semi = content_type.find(';');
  if (!iequals(trim(content_type.substr(0, semi)), "multipart/form-data")) {
    return std::unexpected("the body must be multipart/form-data (a file upload)");
  }
  std::string boundary = semi == std::string_view::npos ? std::string() : param(content_type.substr(semi + 1), "boundary");
  if (boundary.empty() || boundary.size() > 70) return std::unexpected("multipart/form-data without a valid boundary");
  return boundary;
}

std::expected<std::vector<FormPart>, std::string> parse_form(std::string_view body, std::string_view boundary) {
  const std::string delimiter = "--" + std::string(boundary);
  std::size_t at = body.find(delimiter);
  if (at == std::string_view::npos) return std::unexpected("the form's boundary is not in its body");
  std::vector<FormPart> parts;
  for (;;) {
    at += delimiter.size();
    if (body.substr(at, 2) == "--") return parts;  // the closing delimiter
    if (body.substr(at, 2) != "\r\n") return std::unexpected("a form part's delimiter is not followed by CRLF");
    at += 2;
    const std::size_t head_end = body.find("\r\n\r\n", at);
    if (head_end == std::string_view::npos) return std::unexpected("a form part's headers do not end");
    FormPart part;
    std::string_view headers = body.substr(at, head_end - at);
    while (!headers.empty()) {
      const std::size_t eol = headers.find("\r\n");
      const std::string_view line = headers.substr(0, eol);
      headers.remove_prefix(eol == std::string_view::npos ? headers.size() : eol + 2);
      const std::size_t colon = line.find(':');
      if (colon == std::string_view::npos || !iequals(trim(line.substr(0, colon)), "content-disposition")) continue;
      const std::string_view value = line.substr(colon + 1);
      part.name = param(value, "name");
      part.filename = param(value, "filename");
    }
    const std::size_t content_at = head_end + 4;
    const std::size_t next = body.find("\r\n" + delimiter, content_at);
    if (next == std::string_view::npos) return std::unexpected("a form part does not end with the boundary");
    if (part.name.empty()) return std::unexpected("a form part has no name (Content-Disposition: form-data; name=...)");
    part.content = body.substr(content_at, next - content_at);
    parts.push_back(std::move(part));
    at = next + 2;
  }
}

}  // namespace arbiter
