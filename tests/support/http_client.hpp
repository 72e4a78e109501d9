// A small HTTP/1.1 client for tests (Beast). Every operation has a deadline
// (the io_context runs for at most that long), so a gateway that hangs makes
// a test fail rather than block. HttpConnection also reads a body piece by
// piece, so a test can stop after k SSE events and drop the connection to
// play a client that goes away.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "support/fake_upstream.hpp"  // Headers
#include "support/test_clock.hpp"

namespace arbiter::test {

inline constexpr Millis kDefaultTimeout{10'000};

struct HttpRequest {
  std::string method = "GET";
  std::string target = "/";
  Headers headers;
  std::string body;
};

struct HttpResponse {
  int status = 0;
  Headers headers;  // names lower-cased
  std::string body;

  std::optional<std::string> header(std::string_view name) const;
  // The body parsed as JSON; throws when it is not JSON.
  boost::json::value json() const;
};

// An operation did not finish before its deadline.
struct TimeoutError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class HttpConnection {
 public:
  explicit HttpConnection(uint16_t port, Millis connect_timeout = kDefaultTimeout);
  // From `source` (another loopback address, e.g. "127.0.0.2": a different client machine).
  HttpConnection(uint16_t port, const std::string& source, Millis connect_timeout = kDefaultTimeout);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // Sends a request (Host, Content-Length filled in) and prepares to read
  // its response.
  void send(const HttpRequest& request, Millis timeout = kDefaultTimeout);
  // Sends bytes as they are (malformed or hand-built requests).
  void send_raw(std::string_view bytes, Millis timeout = kDefaultTimeout);

  // Status and headers of the response to the last request (body empty).
  HttpResponse read_head(Millis timeout = kDefaultTimeout);
  // The next piece of body as it arrives (chunk framing removed); nullopt
  // once the body is complete or the connection failed (see error()).
  std::optional<std::string> read_some(Millis timeout = kDefaultTimeout);
  // Reads until the body holds at least n complete SSE events ("...\n\n")
  // or ends; returns the complete events read so far.
  std::vector<std::string> read_events(std::size_t n, Millis timeout = kDefaultTimeout);
  // Reads the body to its end; returns the whole body.
  std::string read_rest(Millis timeout = kDefaultTimeout);
  // send + read_head + read_rest.
  HttpResponse request(const HttpRequest& request, Millis timeout = kDefaultTimeout);

  // Everything of the body received so far.
  const std::string& body() const;
  // True when the body ended as the framing says (Content-Length reached or
  // the final chunk seen).
  bool complete() const;
  // The read error that ended the body early, if any (e.g. "partial message").
  const std::optional<std::string>& error() const { return error_; }

  // Drops the connection without a goodbye: FIN, or RST when reset is set.
  void close_abruptly(bool reset = false);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::optional<std::string> error_;
  std::size_t returned_ = 0;  // body bytes already handed out by read_some
};

// One request on a fresh connection.
HttpResponse http_call(uint16_t port, const HttpRequest& request, Millis timeout = kDefaultTimeout);
HttpResponse http_get(uint16_t port, std::string target, Headers headers = {},
                      Millis timeout = kDefaultTimeout);
HttpResponse http_post(uint16_t port, std::string target, std::string body, Headers headers = {},
                       Millis timeout = kDefaultTimeout);

// Splits an SSE body into its events, each with its "\n\n" terminator; a
// trailing incomplete event is left out.
std::vector<std::string> split_sse_events(std::string_view body);

}  // namespace arbiter::test
