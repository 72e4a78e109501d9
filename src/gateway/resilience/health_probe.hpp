// An active health probe: the whole request path of one backend, not its
// /health page. A 1-token completion (POST /v1/completions) on a fresh
// connection; ok only for a 200 within the timeout. A backend can answer
// /health while it fails every request (a broken model, a full disk): this
// is what a client would see.
#pragma once

#include <chrono>
#include <string>

#include "core/config.hpp"
#include "http/asio.hpp"
#include "http/tls_context.hpp"

namespace arbiter {

struct ProbeTarget {
  std::string host;
  uint16_t port = 0;
  std::string model;          // the model it serves, as the engine names it
  std::string authorization;  // BackendConfig::authorization ("" for none)
  TlsContext tls;             // an https:// backend's; null: plain HTTP
};

// Runs on the caller's executor. Why it failed, or "" when it succeeded.
Task<std::string> probe_backend(const ProbeTarget& target, std::chrono::milliseconds timeout);

}  // namespace arbiter
