#include "support/requests.hpp"

#include <boost/json.hpp>

namespace arbiter::test {

std::string chat_body(bool stream, std::optional<int> max_tokens, std::string_view model) {
  boost::json::object body{{"model", model},
                           {"messages", boost::json::array{boost::json::object{
                                            {"role", "user"}, {"content", "Say hello."}}}}};
  if (stream) body["stream"] = true;
  if (max_tokens) body["max_tokens"] = *max_tokens;
  return boost::json::serialize(body);
}

std::string completion_body(std::optional<int> max_tokens, bool stream, std::string_view model) {
  boost::json::object body{{"model", model}, {"prompt", "Once upon a time"}};
  if (stream) body["stream"] = true;
  if (max_tokens) body["max_tokens"] = *max_tokens;
  return boost::json::serialize(body);
}

Headers api_headers(const std::string& key) {
  return {bearer(key), {"content-type", "application/json"}};
}

namespace {
HttpRequest post(std::string target, std::string body, const std::string& key) {
  HttpRequest req;
  req.method = "POST";
  req.target = std::move(target);
  req.headers = api_headers(key);
  req.body = std::move(body);
  return req;
}
}  // namespace

HttpRequest chat_request(std::string body, const std::string& key) {
  return post("/v1/chat/completions", std::move(body), key);
}

HttpRequest completion_request(std::string body, const std::string& key) {
  return post("/v1/completions", std::move(body), key);
}

}  // namespace arbiter::test
