#include "gateway/stages/cache/embedder.hpp"

#include <boost/json.hpp>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "http/io_pool.hpp"

namespace arbiter {

namespace {

namespace json = boost::json;

constexpr uint64_t kMaxAnswerBytes = 4u << 20;  // a vector of 16k floats as JSON text, with room

void append_line(std::string& out, std::string_view text) {
  if (!out.empty()) out += '\n';
  out += text;
}

// A message's content: its text, or its text parts'.
void append_content(std::string& out, const json::value& content) {
  if (const json::string* s = content.if_string()) return append_line(out, *s);
  if (const json::array* parts = content.if_array()) {
    for (const json::value& part : *parts) {
      const json::object* o = part.if_object();
      const json::value* text = o ? o->if_contains("text") : nullptr;
      if (text && text->is_string()) append_line(out, text->get_string());
    }
  }
}

// The answer's first vector, or none when it is not an embeddings list.
std::vector<float> first_vector(std::string_view body) {
  boost::system::error_code ec;
  const json::value v = json::parse(body, ec);
  const json::object* o = ec ? nullptr : v.if_object();
  const json::value* data = o ? o->if_contains("data") : nullptr;
  if (!data || !data->is_array() || data->get_array().empty()) return {};
  const json::object* first = data->get_array()[0].if_object();
  const json::value* embedding = first ? first->if_contains("embedding") : nullptr;
  if (!embedding || !embedding->is_array()) return {};
  std::vector<float> out;
  out.reserve(embedding->get_array().size());
  for (const json::value& x : embedding->get_array()) {
    if (!x.is_number()) return {};
    out.push_back(static_cast<float>(x.to_number<double>()));
  }
  return out;
}

// Built outside the coroutine (GCC 12 miscompiles JSON initializer lists
// inside one).
http::request<http::string_body> embeddings_request(const BackendConfig& backend, const std::string& model,
                                                    std::string text, int64_t dimensions) {
  json::object body{{"model", model}, {"input", std::move(text)}};
  if (dimensions > 0) body["dimensions"] = dimensions;
  http::request<http::string_body> req{http::verb::post, "/v1/embeddings", 11};
  req.set(http::field::host, backend.host + ":" + std::to_string(backend.port));
  req.set(http::field::content_type, "application/json");
  if (!backend.authorization.empty()) req.set(http::field::authorization, backend.authorization);
  req.body() = json::serialize(body);
  req.prepare_payload();
  return req;
}

}  // namespace

std::string_view embedder_result_name(Embedder::Result result) {
  switch (result) {
    case Embedder::Result::kOk: return "ok";
    case Embedder::Result::kFailed: return "failed";
    case Embedder::Result::kTimeout: return "timeout";
    case Embedder::Result::kNoBackend: return "no_backend";
  }
  return "failed";
}

EmbeddedPrompt embedded_prompt(std::string_view prompt_json) {
  boost::system::error_code ec;
  const json::value v = json::parse(prompt_json, ec);
  if (ec) return {.text = std::string(prompt_json)};
  if (const json::string* s = v.if_string()) return {.text = std::string(*s)};
  const json::array* items = v.if_array();
  if (!items || items->empty()) return {.text = json::serialize(v)};
  if (items->back().is_object()) {  // chat messages: the last by meaning, the rest exactly
    EmbeddedPrompt out;
    const json::object& last = items->back().get_object();
    if (const json::value* content = last.if_contains("content")) append_content(out.text, *content);
    json::array before(items->begin(), items->end() - 1);
    const std::string context = json::serialize(before);
    out.context = XXH3_64bits(context.data(), context.size());
    return out;
  }
  EmbeddedPrompt out;
  for (const json::value& item : *items) {
    if (!item.is_string()) return {.text = json::serialize(v)};  // token ids
    append_line(out.text, item.get_string());
  }
  return out;
}

Task<Embedder::Embedding> Embedder::embed(const Runtime& runtime, std::string text) {
  const cache::CacheConfig& settings = runtime.config.cache;
  const auto pools = runtime.pool_index.find(settings.semantic_model);
  if (pools == runtime.pool_index.end() || pools->second.empty()) co_return Embedding{.result = Result::kNoBackend};
  const ModelConfig& model = runtime.config.models[pools->second.front()];
  if (model.backends.empty()) co_return Embedding{.result = Result::kNoBackend};
  const BackendConfig& backend = model.backends[next_.fetch_add(1, std::memory_order_relaxed) % model.backends.size()];
  const auto req = embeddings_request(backend, model.name, std::move(text), settings.semantic_dimensions);
  std::string key = backend.host + ":" + std::to_string(backend.port);
  std::shared_ptr<OutboundConnection> connection = take(key);
  if (!connection) {
    connection = std::make_shared<OutboundConnection>(co_await net::this_coro::executor, backend.host, backend.port,
                                                      client_tls_for(backend));
  }
  const OutboundResponse answer = co_await connection->request(req, settings.semantic_timeout, kMaxAnswerBytes);
  // Kept whatever the answer: a connection a failure closed opens again
  // with its next request.
  give_back(std::move(key), std::move(connection));
  Embedding out{.result = Result::kFailed, .connected = answer.connected};
  if (answer.failure == OutboundFailure::kTimeout) {
    out.result = Result::kTimeout;
  } else if (answer.failure == OutboundFailure::kNone && answer.response.result_int() == 200) {
    out.vector = first_vector(answer.response.body());
    if (!out.vector.empty()) out.result = Result::kOk;
  }
  co_return out;
}

std::shared_ptr<OutboundConnection> Embedder::take(const std::string& backend) {
  const std::size_t thread = IoPool::current_index();
  std::lock_guard lock(mutex_);
  if (thread >= idle_.size()) return nullptr;
  std::vector<Idle>& idle = idle_[thread];
  for (auto it = idle.rbegin(); it != idle.rend(); ++it) {  // the most recently used first
    if (it->backend != backend) continue;
    std::shared_ptr<OutboundConnection> connection = std::move(it->connection);
    idle.erase(std::next(it).base());
    return connection;
  }
  return nullptr;
}

void Embedder::give_back(std::string backend, std::shared_ptr<OutboundConnection> connection) {
  const std::size_t thread = IoPool::current_index();
  std::lock_guard lock(mutex_);
  if (thread >= idle_.size()) idle_.resize(thread + 1);
  std::vector<Idle>& idle = idle_[thread];
  if (idle.size() == kIdlePerThread) {
    idle.front().connection->close();  // the least recently used
    idle.erase(idle.begin());
  }
  idle.push_back({std::move(backend), std::move(connection)});
}

}  // namespace arbiter
