// The semantic mode's embeddings (docs/cache.md, "Semantic mode"): a
// prompt's text sent to a backend of `cache.semantic_model` (round robin
// over its backends) within `cache.semantic_timeout`. Its vector, or none:
// a failed, late or malformed answer is a miss, never the request's error.
// Connections are kept alive between embeddings, per I/O thread (a
// connection is used only by the thread whose reactor owns it, one
// embedding at a time), so a miss pays no connect or TLS handshake.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/runtime.hpp"
#include "http/asio.hpp"
#include "http/outbound_connection.hpp"

namespace arbiter {

class Embedder {
 public:
  enum class Result : uint8_t { kOk, kFailed, kTimeout, kNoBackend };
  struct Embedding {
    Result result = Result::kOk;
    std::vector<float> vector;  // kOk: not empty
    bool connected = false;     // a new connection was opened for it
  };
  Task<Embedding> embed(const Runtime& runtime, std::string text);

  // Idle connections kept per I/O thread (more are closed when given back).
  static constexpr std::size_t kIdlePerThread = 8;

 private:
  struct Idle {
    std::string backend;  // host:port
    std::shared_ptr<OutboundConnection> connection;
  };
  // This thread's idle connection to `backend`, or null.
  std::shared_ptr<OutboundConnection> take(const std::string& backend);
  void give_back(std::string backend, std::shared_ptr<OutboundConnection> connection);

  std::atomic<uint64_t> next_{0};
  std::mutex mutex_;
  std::vector<std::vector<Idle>> idle_;  // by IoPool::current_index(), grown as threads ask
};

std::string_view embedder_result_name(Embedder::Result result);

// What of a prompt is compared by meaning, and what must be the same: a
// chat's last message (its text parts) is embedded, and the messages before
// it (system prompt, retrieved context, the conversation so far) are hashed
// into `context`, which a semantic hit must match exactly; a completion's
// prompt strings are embedded whole (context 0). A prompt that is not one
// of these is embedded as its JSON. `prompt_json`: the prompt's raw value.
struct EmbeddedPrompt {
  std::string text;
  uint64_t context = 0;
};
EmbeddedPrompt embedded_prompt(std::string_view prompt_json);

}  // namespace arbiter
