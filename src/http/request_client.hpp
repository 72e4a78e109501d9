// Who a request came from, as the request pipeline sees it: where its answer
// goes (a ResponseSink) and what the pipeline reads of its client. A
// client's connection (ClientConnection) is one; a gateway-internal client
// is the other (a batch job's line, gateway/batch/line_client.hpp), which
// runs the same pipeline on behalf of a tenant named at its creation.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/asio.hpp"
#include "http/deadline.hpp"
#include "http/response_sink.hpp"

namespace arbiter {

class RequestClient : public ResponseSink {
 public:
  // The thread (io_context) the request runs on: its upstream connections'.
  virtual net::any_io_executor executor() = 0;
  // The request's I/O deadline, armed around upstream operations too.
  virtual Deadline& deadline() = 0;
  // The client's IP address as text; empty when unknown.
  virtual const std::string& remote_address() = 0;
  // The names of a verified TLS client certificate; empty without one.
  virtual const std::vector<std::string>& peer_names() const = 0;
  // Bytes of response body written so far, and when the first one was.
  virtual std::size_t body_bytes_sent() const = 0;
  virtual std::optional<std::chrono::steady_clock::time_point> first_body_byte_at() const = 0;

  // A gateway-internal client acts for a tenant, by its name (not by a
  // key: only keys' hashes are kept); empty for a real client, which
  // authenticates.
  virtual std::string_view acting_tenant() const { return {}; }
  // The latest time its request may still start on an engine (a batch's
  // completion window); the scheduler answers 503 after it. None: only its
  // class's queue deadline applies.
  virtual std::optional<std::chrono::steady_clock::time_point> start_by() const { return std::nullopt; }
};

}  // namespace arbiter
