#include "bench/live_request.hpp"

#include <boost/json.hpp>
#include <cstdio>

#include "bench/prompt_text.hpp"

namespace arbiter::bench {
namespace json = boost::json;

std::string tenant_api_key(const std::string& tenant) { return "sk-bench-" + tenant; }

const char* request_path(const Scenario& scenario, const RequestSpec& spec) {
  return scenario.classes[spec.klass].traffic.kind == TrafficKind::kTyping ? "/v1/completions"
                                                                           : "/v1/chat/completions";
}

std::string request_body(const Scenario& scenario, const RequestSpec& spec,
                         const LiveRequestOptions& options) {
  json::object body;
  body["model"] = options.model;
  const std::string prefix = prefix_text(spec, options.text_salt);
  std::string rest = body_text(spec, options.text_salt);
  if (scenario.classes[spec.klass].traffic.kind == TrafficKind::kTyping) {
    body["prompt"] = prefix + rest;
  } else {
    // Engines render messages in order; the system prompt is the shared prefix.
    json::array messages;
    if (!prefix.empty()) messages.push_back({{"role", "system"}, {"content", prefix}});
    if (rest.empty()) rest = " ";  // a user turn is never empty
    messages.push_back({{"role", "user"}, {"content", rest}});
    body["messages"] = std::move(messages);
  }
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  if (options.exact_lengths) {
    body["max_tokens"] = spec.output_tokens;
    body["min_tokens"] = spec.output_tokens;
  } else {
    body["max_tokens"] = spec.max_tokens;
  }
  return json::serialize(body);
}

std::string raw_request(const Scenario& scenario, const RequestSpec& spec,
                        const LiveRequestOptions& options) {
  const std::string body = request_body(scenario, spec, options);
  std::string out = std::string("POST ") + request_path(scenario, spec) +
                    " HTTP/1.1\r\nHost: " + options.host +
                    "\r\nContent-Type: application/json\r\nAccept: " +
                    "text/event-stream\r\nAuthorization: Bearer " +
                    tenant_api_key(scenario.tenants[spec.tenant].name) + "\r\n";
  if (options.gateway_headers) {
    const ClassSpec& c = scenario.classes[spec.klass];
    out += "x-arbiter-class: " + (c.scheduler_class.empty() ? c.name : c.scheduler_class) + "\r\n";
    if (spec.supersede_key != 0) {
      char key[32];
      std::snprintf(key, sizeof key, "%016llx",
                    static_cast<unsigned long long>(spec.supersede_key));
      out += std::string("x-arbiter-supersede-key: ") + key + "\r\n";
    }
  }
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  return out;
}

}  // namespace arbiter::bench
