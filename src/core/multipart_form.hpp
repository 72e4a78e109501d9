// A multipart/form-data body (RFC 7578), as file uploads send it (the
// OpenAI clients' POST /v1/files): its parts by name, with the filename a
// part gives. Views into the body, which must outlive them.
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <vector>

namespace arbiter {

struct FormPart {
  std::string name;
  std::string filename;  // empty: not a file
  std::string_view content;
};

// The boundary a Content-Type names ("multipart/form-data; boundary=..."),
// or why there is none.
std::expected<std::string, std::string> form_boundary(std::string_view content_type);

// The parts of `body`, or why it is not a well-formed form.
std::expected<std::vector<FormPart>, std::string> parse_form(std::string_view body, std::string_view boundary);

}  // namespace arbiter
