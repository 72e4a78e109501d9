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

namespace {

// exact_lengths: min_tokens = max_tokens = the answer's length.
Budget request_budget(const RequestSpec& spec, const LiveRequestOptions& options) {
  if (options.exact_lengths) return {.max_tokens = spec.output_tokens, .min_tokens = spec.output_tokens};
  return {.max_tokens = spec.max_tokens, .min_tokens = 0};
}

}  // namespace

Keystroke own_keystroke(const RequestSpec& spec, const LiveRequestOptions& options) {
  return {.prompt = prefix_text(spec, options.text_salt) + body_text(spec, options.text_salt),
          .budget = request_budget(spec, options)};
}

std::string request_body(const Scenario& scenario, const RequestSpec& spec,
                         const LiveRequestOptions& options, const Keystroke* keystroke) {
  json::object body;
  body["model"] = options.model;
  Budget budget = request_budget(spec, options);
  if (scenario.classes[spec.klass].traffic.kind == TrafficKind::kTyping) {
    const Keystroke k = keystroke ? *keystroke : own_keystroke(spec, options);
    body["prompt"] = k.prompt;
    budget = k.budget;
  } else {
    // Engines render messages in order; the system prompt is the shared prefix.
    const std::string prefix = prefix_text(spec, options.text_salt);
    std::string rest = body_text(spec, options.text_salt);
    json::array messages;
    if (!prefix.empty()) messages.push_back({{"role", "system"}, {"content", prefix}});
    if (rest.empty()) rest = " ";  // a user turn is never empty
    messages.push_back({{"role", "user"}, {"content", rest}});
    body["messages"] = std::move(messages);
  }
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  body["max_tokens"] = budget.max_tokens;
  if (budget.min_tokens > 0) body["min_tokens"] = budget.min_tokens;
  return json::serialize(body);
}

std::string raw_request(const Scenario& scenario, const RequestSpec& spec,
                        const LiveRequestOptions& options, const Keystroke* keystroke) {
  const std::string body = request_body(scenario, spec, options, keystroke);
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
