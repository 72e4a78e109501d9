// HTTP/1.1 message heads written by hand into a reusable string: the request
// path's two heads (the upstream request, the client's response) cost a few
// appends instead of Beast's serializer (a buffer-sequence state machine per
// write; the largest single item in the request path's profile).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "http/asio.hpp"

namespace arbiter {

// Header fields as views (name, value).
using HeaderViews = std::span<const std::pair<std::string_view, std::string_view>>;

// What the gateway sends a backend. Views stay valid until the write ends.
struct UpstreamRequest {
  std::string_view target;      // e.g. /v1/chat/completions
  std::string_view host;        // Host header: "host:port"
  std::string_view request_id;  // x-request-id
  std::string_view accept;      // the client's Accept, passed on; empty: none
  std::string_view body;        // JSON
  // Bytes sent inside the body after its first `insert_at` bytes (the
  // usage ask, core/stream_usage): a change to the client's body that
  // costs no copy of it. Empty: the body as it is.
  std::string_view body_insert;
  std::size_t insert_at = 0;
  std::string_view authorization;  // the backend's own credential ("Bearer ..."); empty: none
  HeaderViews forwarded;        // the client's end-to-end headers (ServerRequest::end_to_end)
};

// Replaces `out` with the request line and header block of `r`, ending with
// the blank line. Always keep-alive, Content-Type: application/json.
void write_request_head(const UpstreamRequest& r, std::string& out);

using HeaderPairs = std::span<const std::pair<std::string, std::string>>;

// A response head by parts: what the relay answers with, written without
// building a Beast message (whose fields cost an allocation each).
struct ResponseHead {
  unsigned status = 200;
  std::string_view content_type;   // omitted when empty
  std::string_view cache_control;  // omitted when empty
  HeaderPairs upstream;            // passed on from the backend
  HeaderPairs gateway;             // x-request-id, x-arbiter-*
};

// How a body without a Content-Length ends: with its last chunk, or with
// the connection (HTTP/1.0 clients, which know no chunks).
enum class BodyFraming { kChunked, kUntilClose };

// Replaces `out` with the status line, `head`'s fields and the framing:
// Content-Length when `content_length` is set, else chunked; Connection:
// close unless `keep_alive`. Ends with the blank line.
void write_response_head(const ResponseHead& head, std::optional<std::size_t> content_length,
                         bool keep_alive, std::string& out);
// The same for a body of unknown length, framed as `framing` says
// (kUntilClose writes no framing field; `keep_alive` must then be false).
void write_response_head(const ResponseHead& head, BodyFraming framing, bool keep_alive, std::string& out);

// Replaces `out` with the status line and every field of `head`, in order,
// ending with the blank line. The caller has set Content-Length or
// Transfer-Encoding and Connection (Beast's prepare_payload / chunked /
// keep_alive).
void write_response_head(const http::response_header<>& head, std::string& out);

}  // namespace arbiter
