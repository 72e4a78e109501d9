// A backend's response as the relay reads it (http/upstream_response): the
// strict scan for Content-Length answers, Beast for the rest, the bytes
// arriving in reads of sizes the fuzzer picks. Properties:
// - the parser never reads past what it was given, and a response it
//   completes, Beast (given all the bytes at once) completes the same way:
//   status, body bytes, keep-alive, content type;
// - the head the relay answers the client with (http/http_head), from what
//   the parser kept, parses back (Beast) with exactly those fields.
// Input: one byte per read size (a zero byte ends the list), then the
// response bytes.
#include <algorithm>
#include <string>
#include <vector>

#include "fuzz_check.hpp"
#include "http_fields.hpp"
#include "http/http_head.hpp"
#include "http/parse_buffered.hpp"
#include "http/upstream_response.hpp"

namespace arbiter {
namespace {

void append(beast::flat_buffer& buffer, std::string_view bytes) {
  const auto n = net::buffer_copy(buffer.prepare(bytes.size()), net::buffer(bytes.data(), bytes.size()));
  buffer.commit(n);
}

// The reply head the relay writes from the parser's fields, read back.
void check_reply_head(const UpstreamResponseParser& p, const std::string& body) {
  if (p.status() < 100 || p.status() > 999) return;
  const ResponseHead head{.status = p.status(), .content_type = p.content_type(), .upstream = p.forwarded()};
  std::string wire;
  write_response_head(head, body.size(), true, wire);
  wire += body;
  http::response_parser<http::string_body> back;
  back.body_limit(boost::none);
  back.eager(true);
  beast::error_code ec;
  back.put(net::buffer(wire.data(), wire.size()), ec);
  if (p.status() / 100 == 1 || p.status() == 204 || p.status() == 304) return;  // no body by rule
  FUZZ_CHECK(!ec);
  FUZZ_CHECK(back.is_done());
  const auto& m = back.get();
  FUZZ_CHECK(m.result_int() == p.status());
  FUZZ_CHECK(m.body() == body);
  fuzz::OwnedFields sent;
  if (!p.content_type().empty()) sent.emplace_back("Content-Type", p.content_type());
  sent.insert(sent.end(), p.forwarded().begin(), p.forwarded().end());
  sent.emplace_back("Content-Length", std::to_string(body.size()));
  FUZZ_CHECK(fuzz::by_name(fuzz::fields_of(m)) == fuzz::by_name(sent));
}

void check_response(std::vector<std::size_t> reads, std::string_view wire) {
  UpstreamResponseParser parser;
  beast::flat_buffer buffer;
  std::string body;
  std::size_t at = 0;
  beast::error_code ec;
  bool eof = false;
  for (std::size_t i = 0; !ec && !parser.is_done(); ++i) {
    if (at == wire.size()) {
      ec = parser.parse_eof();
      for (const auto piece : parser.body_pieces()) body.append(piece);
      eof = true;
      break;
    }
    const std::size_t n = std::min(i < reads.size() ? reads[i] : wire.size(), wire.size() - at);
    append(buffer, wire.substr(at, n));
    at += n;
    const std::size_t before = buffer.size();
    ec = parser.parse(buffer);
    FUZZ_CHECK(buffer.size() <= before);
    for (const auto piece : parser.body_pieces()) body.append(piece);
  }
  if (ec || !parser.is_done()) return;

  // Beast, all bytes at once (the parser's fallback settings).
  http::response_parser<http::string_body> beast;
  beast.header_limit(8 * 1024);
  beast.body_limit(boost::none);
  beast.eager(true);
  beast::flat_buffer whole;
  append(whole, wire);
  beast::error_code bec = parse_buffered(beast, whole);
  if (!bec && !beast.is_done() && eof) bec = finish_at_eof(beast);
  FUZZ_CHECK(!bec);
  FUZZ_CHECK(beast.is_done());
  const auto& m = beast.get();
  FUZZ_CHECK(m.result_int() == parser.status());
  FUZZ_CHECK(m.body() == body);
  FUZZ_CHECK(beast.keep_alive() == parser.keep_alive());
  std::string content_type;
  for (const auto& f : m) {
    if (beast::iequals(f.name_string(), "content-type")) content_type = f.value();
  }
  FUZZ_CHECK(content_type == parser.content_type());
  check_reply_head(parser, body);
}

}  // namespace
}  // namespace arbiter

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  arbiter::fuzz::Input in(data, size);
  std::vector<std::size_t> reads;
  for (uint8_t b = in.byte(); b != 0 && reads.size() < 16; b = in.byte()) reads.push_back(b);
  arbiter::check_response(std::move(reads), in.rest());
  return 0;
}
