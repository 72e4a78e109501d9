// Sends one request to a backend and relays the answer to the client:
// SSE streams event by event as they arrive (byte-exact, never buffered),
// other answers whole and unchanged. Closes the upstream connection the
// moment the client goes away, so the engine aborts the work.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "http/client_connection.hpp"
#include "http/upstream_pool.hpp"

namespace arbiter {

// Lets the scheduler stop a running exchange (a newer request superseded
// it): fire() closes the upstream socket the relay registered.
struct Interrupt {
  bool requested = false;
  std::function<void()> hook;  // set by the relay while it holds a socket
  void fire() {
    requested = true;
    if (auto h = std::move(hook)) h();
  }
};

struct RelayRequest {
  UpstreamPool& pool;
  http::request<http::string_body>& upstream_request;
  ClientConnection& client;
  const TimeoutsConfig& timeouts;
  const LimitsConfig& limits;
  // Added to the client's response (x-arbiter-*, x-request-id).
  const std::vector<std::pair<std::string, std::string>>& response_headers;
  Interrupt& interrupt;
};

struct RelayOutcome {
  int status = 0;               // what the client got; 499 when it went away
  bool stream = false;          // answered as an SSE stream
  std::optional<ApiError> error;// the gateway-made error, if one was sent
  std::string upstream_error;   // failure kind for metrics: connect, timeout, reset, ...
  bool retried = false;         // resent after a pooled connection was found closed
  bool interrupted = false;     // stopped by Interrupt (superseded)
  double upstream_ms = -1;      // request sent -> response header received
};

Task<RelayOutcome> relay(const RelayRequest& r);

// Writes a gateway-made error as the whole response (with Retry-After when
// retryable). False when the client was gone.
Task<bool> send_error(ClientConnection& client, const ApiError& error,
                      const std::vector<std::pair<std::string, std::string>>& headers);

}  // namespace arbiter
