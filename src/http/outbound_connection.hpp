// The gateway's own requests to a backend: the engine-metrics scrape and the
// health probe. One connection, opened on demand (the host resolved, its
// addresses tried one at a time, the TLS handshake for https://) and kept
// alive across requests; a request written and its response read by Beast
// (the body at most `body_limit`), the whole exchange within one deadline, a
// timer that closes the socket. A reused connection the engine closed while
// idle (it fails before any response byte) is opened again once: the engine
// never saw the request.
//
// The relay's requests go through UpstreamPool instead (its own head writer
// and parser, and the server's deadline sweeper rather than a timer per
// operation); it finds a backend's addresses with the same helpers
// (literal_endpoint, outbound_endpoints) and shakes hands the same way
// (http/tls_context).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/asio.hpp"
#include "http/tls_context.hpp"

namespace arbiter {

enum class OutboundFailure : uint8_t {
  kNone,
  kTimeout,  // the deadline passed (connect, handshake, write or read)
  kResolve,  // the host name did not resolve
  kConnect,  // every address refused or failed
  kTls,      // the handshake failed
  kClosed,   // the connection closed before the response (or close() was called)
  kRead,     // the response was malformed or over the body limit
};

// "timeout", "resolve", "connect", "tls", "closed", "read"; "" for kNone.
std::string_view outbound_failure_name(OutboundFailure failure);

struct OutboundResponse {
  OutboundFailure failure = OutboundFailure::kNone;
  std::string tls_detail;                      // kTls: why the handshake failed
  bool connected = false;                      // a new connection was opened for this request
  http::response<http::string_body> response;  // failure kNone
};

// The address of `host`:`port` when the host is an IP literal (an IPv6 one
// in brackets, as a URL writes it, or bare); nullopt for a name (resolved
// per connection).
std::optional<tcp::endpoint> literal_endpoint(const std::string& host, uint16_t port);

// The addresses to try: the literal one, or the name resolved by
// `resolver`; nullopt when it did not resolve.
Task<std::optional<std::vector<tcp::endpoint>>> outbound_endpoints(tcp::resolver& resolver, const std::string& host,
                                                                   uint16_t port,
                                                                   const std::optional<tcp::endpoint>& literal);

class OutboundConnection : public std::enable_shared_from_this<OutboundConnection> {
 public:
  // Held by shared_ptr: the deadline's timer reaches it through a weak one.
  // `tls`: an https:// backend's context; null: plain HTTP.
  OutboundConnection(const net::any_io_executor& executor, std::string host, uint16_t port, TlsContext tls);

  // One request and its response within `timeout`, on the connection's
  // executor. `Body`: http::empty_body or http::string_body.
  template <class Body>
  Task<OutboundResponse> request(const http::request<Body>& req, std::chrono::milliseconds timeout,
                                 uint64_t body_limit);

  // Ends every pending operation now (the request fails kClosed or
  // kTimeout) and the connection. A later request opens a new one.
  void close();

 private:
  // Opens the connection within the request's deadline; false (with `out`'s
  // failure) when it could not.
  Task<bool> open(OutboundResponse& out);
  Task<bool> handshake(OutboundResponse& out);
  // Arms the deadline for the request numbered `request_`.
  void arm(std::chrono::milliseconds timeout);
  template <class Body>
  Task<beast::error_code> write(const http::request<Body>& req);
  Task<beast::error_code> read(http::response_parser<http::string_body>& parser);

  std::string host_;
  uint16_t port_;
  TlsContext tls_;
  std::optional<tcp::endpoint> literal_;
  tcp::socket socket_;                                     // the keep-alive connection; closed between failures
  std::unique_ptr<ssl::stream<tcp::socket&>> tls_stream_;  // over socket_, new per connection
  tcp::resolver resolver_;                                 // cancelled by the deadline
  net::steady_timer deadline_;                             // closes the socket when a request overruns
  beast::flat_buffer buffer_;                              // read buffer, kept across keep-alive responses
  uint64_t request_ = 0;                                   // number of the request in progress (the timer's check)
  bool timed_out_ = false;                                 // the deadline fired during this request
  bool closed_ = false;                                    // close() ran during this request
};

}  // namespace arbiter
