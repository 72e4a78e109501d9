#include "core/batch/batch_input.hpp"

#include <unordered_set>

#include <boost/json.hpp>

namespace arbiter::batch {

bool batch_route(std::string_view url) {
  return url == "/v1/chat/completions" || url == "/v1/completions" || url == "/v1/responses" || url == "/v1/embeddings";
}

namespace {

// The line's request, or why not.
std::string check_line(const boost::json::value& v, InputLine& out) {
  if (!v.is_object()) return "is not a JSON object";
  const boost::json::object& o = v.get_object();
  const auto* id = o.if_contains("custom_id");
  if (id == nullptr || !id->is_string() || id->get_string().empty()) return "custom_id must be a non-empty string";
  out.custom_id = std::string(id->get_string());
  const auto* method = o.if_contains("method");
  if (method == nullptr || !method->is_string() || method->get_string() != "POST") return "method must be \"POST\"";
  const auto* url = o.if_contains("url");
  if (url == nullptr || !url->is_string() || !batch_route(url->get_string())) {
    return "url must be \"/v1/chat/completions\", \"/v1/completions\", \"/v1/responses\" or \"/v1/embeddings\"";
  }
  out.url = std::string(url->get_string());
  const auto* body = o.if_contains("body");
  if (body == nullptr || !body->is_object()) return "body must be a JSON object (the request)";
  const auto* model = body->get_object().if_contains("model");
  if (model == nullptr || !model->is_string() || model->get_string().empty()) return "body.model must name a model";
  if (const auto* stream = body->get_object().if_contains("stream"); stream && stream->is_bool() && stream->get_bool()) {
    return "body.stream must not be true: a batch's answers are written whole";
  }
  out.body = boost::json::serialize(*body);
  return {};
}

}  // namespace

Input read_input(std::string_view text, std::size_t max_lines) {
  Input in;
  std::unordered_set<std::string> ids;
  auto fail = [&](std::size_t line, std::string message) {
    if (in.errors.size() < kMaxErrors) in.errors.push_back({line, std::move(message)});
  };
  std::size_t line_no = 0;
  std::size_t requests = 0;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    if (++requests > max_lines) {
      fail(line_no, "the file holds more than " + std::to_string(max_lines) + " requests (batches.max_lines)");
      break;
    }
    boost::system::error_code ec;
    const boost::json::value v = boost::json::parse(line, ec);
    if (ec) {
      fail(line_no, "is not valid JSON (" + ec.message() + ")");
      continue;
    }
    InputLine out;
    if (std::string why = check_line(v, out); !why.empty()) {
      fail(line_no, std::move(why));
      continue;
    }
    if (!ids.insert(out.custom_id).second) {
      fail(line_no, "custom_id '" + out.custom_id + "' is used by an earlier line");
      continue;
    }
    in.lines.push_back(std::move(out));
  }
  if (requests == 0 && in.errors.empty()) fail(1, "the file holds no request");
  return in;
}

std::string describe(const std::vector<LineError>& errors, std::size_t shown) {
  std::string out;
  for (std::size_t i = 0; i < errors.size() && i < shown; ++i) {
    if (!out.empty()) out += "; ";
    out += "line " + std::to_string(errors[i].line) + ": " + errors[i].message;
  }
  if (errors.size() > shown) out += "; and " + std::to_string(errors.size() - shown) + " more";
  return out;
}

}  // namespace arbiter::batch
