// The client's request head: the strict scan (http/head_scan), Beast's parser
// for what it declines (as the server drives it, http/parse_buffered), the
// ServerRequest built from either, and the upstream head written from it
// (http/http_head). Properties:
// - what the scan accepts, Beast accepts and reads the same way (method,
//   target, fields, body, keep-alive, bytes consumed), under the same limits;
// - a ServerRequest from the scan and one from Beast agree (fields, the
//   end-to-end fields passed upstream);
// - the upstream head written with the client's end-to-end fields parses back
//   (Beast) to exactly those fields: no field can smuggle another;
// - the server's own reading (http/beast_request) gives one verdict however
//   the bytes are split across reads; the head's limit is exact (a request
//   is accepted only when its head, up to the first empty line, fits the
//   limit, and refused header_limit when it does not); a chunked body's
//   trailer never shows among the request's fields (they are those of the
//   head alone, as Beast reads the head by itself).
// Input: one byte choosing the header and body limits and the split points,
// then the bytes as they came from the client.
#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fuzz_check.hpp"
#include "http_fields.hpp"
#include "http/beast_request.hpp"
#include "http/head_scan.hpp"
#include "http/http_head.hpp"
#include "http/parse_buffered.hpp"
#include "http/server_request.hpp"

namespace arbiter {
namespace {

using fuzz::by_name;
using fuzz::fields_of;
using fuzz::OwnedFields;

using Fields = std::vector<std::pair<std::string_view, std::string_view>>;

struct BeastRead {
  std::optional<http::request<http::string_body>> message;
  std::size_t used = 0;
};

BeastRead beast_read(std::string_view wire, std::size_t header_limit, std::size_t body_limit) {
  http::request_parser<http::string_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(header_limit));
  parser.body_limit(body_limit);
  parser.eager(true);
  beast::flat_buffer buffer;
  const auto n = net::buffer_copy(buffer.prepare(wire.size()), net::buffer(wire.data(), wire.size()));
  buffer.commit(n);
  const beast::error_code ec = parse_buffered(parser, buffer);
  BeastRead out;
  if (ec || !parser.is_done()) return out;
  out.used = wire.size() - buffer.size();
  out.message = parser.release();
  return out;
}

Fields end_to_end(const ServerRequest& r) {
  ForwardedHeaders out;
  r.end_to_end(out);
  return Fields(out.begin(), out.end());
}

// The upstream head with `forwarded`, read back by Beast.
void check_upstream_head(const ServerRequest& r, const Fields& forwarded) {
  const UpstreamRequest up{.target = "/v1/chat/completions",
                           .host = "engine:8000",
                           .request_id = "req-1",
                           .accept = r["accept"],
                           .body = r.body(),
                           .authorization = "Bearer engine-key",
                           .forwarded = forwarded};
  std::string head;
  write_request_head(up, head);
  const std::string wire = head + r.body();
  const BeastRead back = beast_read(wire, 1 << 24, 1 << 24);
  FUZZ_CHECK(back.message);
  FUZZ_CHECK(back.used == wire.size());
  const auto& m = *back.message;
  FUZZ_CHECK(m.body() == r.body());
  FUZZ_CHECK(m.target() == "/v1/chat/completions");
  // Beast sees the gateway's fields and exactly the forwarded ones.
  OwnedFields sent = {{"Host", "engine:8000"}, {"Content-Type", "application/json"}};
  if (!up.accept.empty()) sent.emplace_back("Accept", up.accept);
  sent.emplace_back("x-request-id", "req-1");
  sent.emplace_back("Authorization", "Bearer engine-key");
  sent.insert(sent.end(), forwarded.begin(), forwarded.end());
  sent.emplace_back("Content-Length", std::to_string(r.body().size()));
  FUZZ_CHECK(by_name(fields_of(m)) == by_name(sent));
}

void check_request(std::string_view wire, std::size_t header_limit, std::size_t body_limit) {
  ScannedRequest scanned;
  const bool took = scan_request(wire, header_limit, body_limit, scanned);
  BeastRead beast = beast_read(wire, header_limit, body_limit);

  std::optional<ServerRequest> from_scan;
  if (took) {
    FUZZ_CHECK(scanned.size <= wire.size());
    FUZZ_CHECK(beast.message);
    const auto& m = *beast.message;
    FUZZ_CHECK(beast.used == scanned.size);
    FUZZ_CHECK(m.method() == scanned.method);
    FUZZ_CHECK(m.target() == scanned.target);
    FUZZ_CHECK(m.version() == 11);
    FUZZ_CHECK(m.body() == scanned.body);
    FUZZ_CHECK(m.keep_alive() == scanned.keep_alive);
    OwnedFields scanned_fields;
    for (const HeadField& f : scanned.head.fields()) scanned_fields.emplace_back(f.name, f.value);
    FUZZ_CHECK(by_name(fields_of(m)) == by_name(scanned_fields));
    from_scan.emplace(scanned);
  }
  if (!beast.message) return;
  const ServerRequest from_beast(http::request<http::string_body>(*beast.message));
  if (from_scan) {
    FUZZ_CHECK(from_scan->method() == from_beast.method());
    FUZZ_CHECK(from_scan->method_string() == from_beast.method_string());
    FUZZ_CHECK(from_scan->target() == from_beast.target());
    FUZZ_CHECK(from_scan->keep_alive() == from_beast.keep_alive());
    FUZZ_CHECK(from_scan->body() == from_beast.body());
    FUZZ_CHECK(by_name(end_to_end(*from_scan)) == by_name(end_to_end(from_beast)));
    for (const char* name : {"host", "connection", "authorization", "x-arbiter-class", "accept"}) {
      FUZZ_CHECK(from_scan->field(name) == from_beast.field(name));
    }
  }
  check_upstream_head(from_beast, end_to_end(from_beast));
}

struct ServerRead {
  beast::error_code ec;
  std::optional<ServerRequest> request;
};

// As the server reads: the bytes delivered in pieces cut after the offsets
// `seed` picks (none when 0), parsed by BeastRequest after each.
ServerRead server_read(std::string_view wire, std::size_t header_limit, std::size_t body_limit, uint8_t seed) {
  BeastRequest parser(header_limit, body_limit);
  beast::flat_buffer buffer;
  ServerRead out;
  std::size_t given = 0;
  uint32_t state = seed * 2654435761u + 1;
  while (given < wire.size()) {
    std::size_t piece = wire.size() - given;
    if (seed != 0) {
      state = state * 1103515245u + 12345u;
      piece = std::min<std::size_t>(piece, 1 + (state >> 16) % 97);
    }
    buffer.commit(net::buffer_copy(buffer.prepare(piece), net::buffer(wire.data() + given, piece)));
    given += piece;
    out.ec = parser.parse(buffer, /*whole=*/true);
    if (out.ec || parser.done()) break;
  }
  if (!out.ec && parser.done()) out.request.emplace(parser.release());
  return out;
}

// The head's bytes: up to and with the first empty line (what an accepted
// request's head is: Beast takes no bare LF).
std::optional<std::size_t> head_size(std::string_view wire) {
  const std::size_t end = wire.find("\r\n\r\n");
  if (end == std::string_view::npos) return std::nullopt;
  return end + 4;
}

// The first `head` bytes of `wire` read by Beast as a head alone, no limits:
// its header, or nullopt when Beast refuses it.
std::optional<http::request_header<>> head_alone(std::string_view wire, std::size_t head) {
  http::request_parser<http::empty_body> parser;
  parser.header_limit(std::numeric_limits<std::uint32_t>::max());
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  beast::error_code ec;
  parser.put(net::buffer(wire.data(), head), ec);
  if (!parser.is_header_done()) return std::nullopt;
  return http::request_header<>(parser.get().base());
}

void check_server_read(std::string_view wire, std::size_t header_limit, std::size_t body_limit, uint8_t seed) {
  const ServerRead whole = server_read(wire, header_limit, body_limit, 0);
  const ServerRead split = server_read(wire, header_limit, body_limit, seed);
  const std::optional<std::size_t> head = head_size(wire);
  for (const ServerRead* read : {&whole, &split}) {
    if (read->request) {
      FUZZ_CHECK(head && *head <= header_limit);
      // The head alone, read by Beast: the request's fields are its fields.
      std::optional<http::request_header<>> alone = head_alone(wire, *head);
      FUZZ_CHECK(alone);
      const ServerRequest from_head(http::request<http::string_body>(std::move(*alone)));
      FUZZ_CHECK(by_name(end_to_end(*read->request)) == by_name(end_to_end(from_head)));
      for (const char* name : {"host", "authorization", "x-arbiter-class", "x-arbiter-tenant", "content-type"}) {
        FUZZ_CHECK(read->request->field(name) == from_head.field(name));
      }
    } else if (read->ec == http::error::header_limit) {
      // A head within the limit is refused for its size only when it is not
      // a head at all: Beast's own limit (the backstop) asks for a version's
      // 8 bytes before it looks at them, so a malformed start line ending
      // near the limit is refused as too long rather than as malformed.
      FUZZ_CHECK(!head || *head > header_limit || !head_alone(wire, *head));
    }
  }
  // Accepted whatever the reads, and read the same, or refused either way
  // (which error may differ: a malformed field past the limit is one or
  // the other, depending on where the read that brought it ended).
  FUZZ_CHECK(whole.request.has_value() == split.request.has_value());
  if (whole.request) {
    FUZZ_CHECK(whole.request->body() == split.request->body());
    FUZZ_CHECK(by_name(end_to_end(*whole.request)) == by_name(end_to_end(*split.request)));
  }
}

}  // namespace
}  // namespace arbiter

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  arbiter::fuzz::Input in(data, size);
  const uint8_t limits = in.byte();  // bits 0-3: the limits; 4-7: where the server's reads end
  // The server's defaults, and limits small enough for the fuzzer to cross.
  static constexpr std::size_t kHeaderLimits[] = {16 * 1024, 64, 200, 1024};
  static constexpr std::size_t kBodyLimits[] = {1 << 20, 0, 16, 100};
  arbiter::check_request(in.rest(), kHeaderLimits[limits & 3], kBodyLimits[(limits >> 2) & 3]);
  arbiter::check_server_read(in.rest(), kHeaderLimits[limits & 3], kBodyLimits[(limits >> 2) & 3],
                             static_cast<uint8_t>(limits >> 4));
  return 0;
}
