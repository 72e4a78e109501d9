// Where a response goes. The relay, the dispatcher and the request
// pipeline write through this, never to a socket: the client's connection
// (ClientConnection), a sink that drops everything (DiscardSink: a shadow
// request's answer), or a tee that also hands the bytes to another
// consumer (TeeSink: e.g. filling a cache). Views passed in are valid only
// during the call; the client's path stays zero-copy.
#pragma once

#include <functional>
#include <span>
#include <string_view>

#include "http/asio.hpp"
#include "http/http_head.hpp"

namespace arbiter {

class ResponseSink {
 public:
  virtual ~ResponseSink() = default;

  // A whole response: gateway-made (an error, an admin answer) or relayed.
  // False when the consumer is gone.
  virtual Task<bool> send(http::response<http::string_body>& res) = 0;
  virtual Task<bool> send(const ResponseHead& head, std::string_view body) = 0;
  // A chunked stream: the head, chunks, the end. One chunk holds `parts`
  // back to back (what one upstream read brought: every event it
  // completed), written at once.
  virtual Task<bool> start_stream(const ResponseHead& head) = 0;
  virtual Task<bool> send_chunk(std::span<const std::string_view> parts) = 0;
  virtual Task<bool> end_stream() = 0;
  // The three in one write where the sink can: the stream's head first when
  // `head` is set, then one chunk of `parts` (none when they hold no bytes),
  // then the stream's end when `last`. The relay sends the head with the
  // events that came in the same read, and the last events with the end.
  // By default the steps one after another.
  virtual Task<bool> write_stream(const ResponseHead* head, std::span<const std::string_view> parts, bool last);

  // The consumer went away (a client that closed): work for it can stop.
  virtual bool client_gone() const = 0;
  // Runs once when the consumer goes away while it is set; nullptr clears it.
  virtual void set_abort_hook(std::function<void()> hook) = 0;
  // false: the connection ends after this response (a stream cut short).
  virtual void set_keep_alive(bool keep_alive) = 0;
};

}  // namespace arbiter
