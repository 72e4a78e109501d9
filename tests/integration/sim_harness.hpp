// Shared by the sim_*_test.cpp integration tests: runs build/arbiter-sim as
// a child process on ephemeral ports (--port 0 --port-file) and talks to it.
#pragma once

#include <csignal>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>

#include "support/child_process.hpp"
#include "support/http_client.hpp"
#include "support/metrics_text.hpp"
#include "support/temp_dir.hpp"

namespace arbiter::test {

// build/arbiter-sim, next to build/arbiter (ARBITER_SIM_BINARY overrides).
inline std::string sim_binary() {
  if (const char* env = std::getenv("ARBITER_SIM_BINARY")) return env;
  std::string path = ARBITER_BINARY;
  return path.substr(0, path.rfind("arbiter")) + "arbiter-sim";
}

class SimProcess {
 public:
  // `flags` come after --port 0 --port-file; `engines` must match --engines.
  explicit SimProcess(std::vector<std::string> flags = {}, std::size_t engines = 1,
                      Millis start_timeout = Millis(20'000))
      : dir_("arbiter-sim") {
    std::vector<std::string> argv = {sim_binary(), "--port", "0", "--port-file", dir_.file("ports")};
    argv.insert(argv.end(), flags.begin(), flags.end());
    child_ = std::make_unique<ChildProcess>(argv, dir_.file("stdout"), dir_.file("stderr"));
    const auto deadline = Clock::now() + start_timeout;
    for (;;) {
      // Written to a temporary file and renamed: once there, it is whole.
      std::istringstream in(read_file(dir_.file("ports")));
      std::vector<uint16_t> ports;
      for (unsigned p; in >> p;) ports.push_back(static_cast<uint16_t>(p));
      if (ports.size() >= engines) {
        ports_ = std::move(ports);
        return;
      }
      if (auto code = child_->poll()) {
        throw std::runtime_error("arbiter-sim exited with " + std::to_string(*code) + ": " + stderr_text());
      }
      if (Clock::now() >= deadline) throw std::runtime_error("arbiter-sim wrote no port file: " + stderr_text());
      std::this_thread::sleep_for(Millis(10));
    }
  }

  uint16_t port(std::size_t engine = 0) const { return ports_.at(engine); }
  const std::vector<uint16_t>& ports() const { return ports_; }
  ChildProcess& child() { return *child_; }
  std::string stderr_text() const { return read_file(dir_.file("stderr")); }

  std::string metrics(std::size_t engine = 0) { return http_get(port(engine), "/metrics").body; }
  std::optional<double> metric(const std::string& name, const Labels& labels = {}, std::size_t engine = 0) {
    return metric_value(metrics(engine), name, labels);
  }
  // Polls /metrics until `pred` holds for the sample; the last value seen.
  template <class Pred>
  std::optional<double> wait_for_metric(const std::string& name, Pred pred, Millis timeout,
                                        const Labels& labels = {}, std::size_t engine = 0) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      const auto v = metric(name, labels, engine);
      if ((v && pred(*v)) || Clock::now() >= deadline) return v;
      std::this_thread::sleep_for(Millis(20));
    }
  }

  // POST /admin/faults with a JSON object; the answer's status.
  int set_faults(const std::string& json, std::size_t engine = 0) {
    return http_post(port(engine), "/admin/faults", json).status;
  }

 private:
  TempDir dir_;
  std::unique_ptr<ChildProcess> child_;
  std::vector<uint16_t> ports_;
};

// A request to the simulator (no auth needed).
inline HttpRequest sim_post(std::string target, std::string body) {
  return HttpRequest{.method = "POST",
                     .target = std::move(target),
                     .headers = {{"content-type", "application/json"}},
                     .body = std::move(body)};
}

// {"model":model,"messages":[{"role":"user","content":content}], ...extra}
// A POST to the gateway in front of the sim: tenant `key`, class claimed by header.
inline HttpRequest gateway_post(std::string target, std::string body, const std::string& key,
                                const std::string& cls) {
  HttpRequest r = sim_post(std::move(target), std::move(body));
  r.headers.emplace_back("authorization", "Bearer " + key);
  r.headers.emplace_back("x-arbiter-class", cls);
  return r;
}

// Words in a text: the sim's tokens are single words.
inline std::size_t word_count(const std::string& text) {
  std::istringstream in(text);
  std::size_t n = 0;
  for (std::string w; in >> w;) ++n;
  return n;
}

inline std::string sim_chat(const std::string& extra = "", const std::string& content = "Say hello.",
                            const std::string& model = "tiny") {
  boost::json::object body{{"model", model},
                           {"messages", boost::json::array{boost::json::object{{"role", "user"}, {"content", content}}}}};
  std::string out = boost::json::serialize(body);
  if (!extra.empty()) out.insert(out.size() - 1, "," + extra);
  return out;
}

// The JSON payloads of an SSE body's events, [DONE] left out.
inline std::vector<boost::json::object> sse_payloads(const std::string& body) {
  std::vector<boost::json::object> out;
  for (const auto& e : split_sse_events(body)) {
    if (e.starts_with("data: [DONE]")) continue;
    out.push_back(boost::json::parse(std::string_view(e).substr(6)).as_object());
  }
  return out;
}

// Prompt + completion tokens of an answer's `usage` object.
inline int64_t usage_tokens(const boost::json::value& usage) {
  return usage.at("prompt_tokens").as_int64() + usage.at("completion_tokens").as_int64();
}

// The same of a stream's usage chunk (stream_options.include_usage); -1
// when it has none.
inline int64_t stream_usage_tokens(const std::string& body) {
  for (const auto& p : sse_payloads(body)) {
    if (const auto* usage = p.if_contains("usage"); usage && usage->is_object()) return usage_tokens(*usage);
  }
  return -1;
}

// The generated text of a chat stream's payloads.
inline std::string stream_text(const std::vector<boost::json::object>& payloads) {
  std::string out;
  for (const auto& p : payloads) {
    for (const auto& c : p.at("choices").as_array()) {
      const auto& choice = c.as_object();
      if (const auto* delta = choice.if_contains("delta")) {
        if (const auto* content = delta->as_object().if_contains("content")) out += content->as_string();
      } else if (const auto* text = choice.if_contains("text")) {
        out += text->as_string();
      }
    }
  }
  return out;
}

}  // namespace arbiter::test
