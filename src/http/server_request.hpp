// A request as the server hands it to its handler: the head's bytes in one
// string with the fields as offsets into it, and the body. Beast's message
// allocated an element per field (and its target and method); the request
// path reads five fields at most, by a short scan.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "http/asio.hpp"

namespace arbiter {

struct ScannedRequest;

// A request's end-to-end fields (ServerRequest::end_to_end), views into it:
// room for eight in place, so the usual request allocates nothing for them.
using ForwardedHeaders = boost::container::small_vector<std::pair<std::string_view, std::string_view>, 8>;

class ServerRequest {
 public:
  ServerRequest() = default;
  // From the strict scan (http/head_scan): copies the head and the body.
  explicit ServerRequest(const ScannedRequest& scanned);
  // From Beast's parser, for what the scan declines. `head_fields`, when
  // given, replace the message's fields: those of the head alone, when Beast
  // added a chunked body's trailer to them (http/beast_request.hpp).
  explicit ServerRequest(http::request<http::string_body>&& parsed,
                         const std::vector<std::pair<std::string, std::string>>* head_fields = nullptr);

  http::verb method() const { return method_; }
  std::string_view method_string() const { return slice(method_string_); }
  std::string_view target() const { return slice(target_); }
  // The first field named `name` (given in lowercase; matched in any case),
  // as Beast's find.
  std::optional<std::string_view> field(std::string_view name) const;
  // Its value, or empty when absent.
  std::string_view operator[](std::string_view name) const { return field(name).value_or(std::string_view{}); }
  // The client keeps the connection after this request (HTTP/1.1 unless
  // `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`).
  bool keep_alive() const { return keep_alive_; }
  // An HTTP/1.0 request: its response may not be chunked (RFC 9112 6.1).
  // The strict scan takes only HTTP/1.1, so only Beast's parser sets it.
  bool http10() const { return http10_; }
  // The fields a proxy passes on (RFC 9110 7.6.1), in order, appended to
  // `out`: all but the hop-by-hop ones (Connection, the fields it names,
  // Keep-Alive, Proxy-*, TE, Trailer, Transfer-Encoding, Upgrade), those the
  // gateway writes itself (Host, Content-Length, Content-Type, Accept,
  // x-request-id, Expect), the client's Authorization (its key for the
  // gateway, not the engine) and the gateway's own x-arbiter-* controls.
  // W3C traceparent / tracestate pass through. Views into this request.
  void end_to_end(ForwardedHeaders& out) const;
  std::string& body() { return body_; }
  const std::string& body() const { return body_; }

 private:
  struct Slice {
    uint32_t offset = 0;
    uint32_t size = 0;
  };
  struct Field {
    Slice name;
    Slice value;
  };
  Slice add(std::string_view bytes);  // appended to head_
  void add_field(Slice name, Slice value);
  // A name size's bit in name_sizes_ (sizes of 63 and more share one).
  static uint64_t size_bit(std::size_t size) { return uint64_t{1} << std::min<std::size_t>(size, 63); }
  std::string_view slice(Slice s) const { return std::string_view(head_).substr(s.offset, s.size); }

  http::verb method_ = http::verb::unknown;
  Slice method_string_;
  Slice target_;
  bool keep_alive_ = true;
  bool http10_ = false;
  std::string head_;
  std::vector<Field> fields_;
  uint64_t name_sizes_ = 0;  // size_bit of every field name's size
  std::string body_;
};

}  // namespace arbiter
