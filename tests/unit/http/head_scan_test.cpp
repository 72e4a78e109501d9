// The strict head scan (http/head_scan) must agree with Beast's parser on
// every message it accepts, and decline (leave to Beast) every message
// outside its narrow form. Each case is checked both ways: the scan's
// verdict, and Beast's reading of the same bytes.
#include "http/head_scan.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "http/server_request.hpp"
#include "http/upstream_response.hpp"

namespace arbiter {
namespace {

constexpr std::size_t kHeaderLimit = 16 * 1024;
constexpr std::size_t kBodyLimit = 1 << 20;

const std::string kBody = R"({"model":"m1","messages":[{"role":"user","content":"hi"}]})";

std::string request_with(std::string_view fields, std::string_view body = kBody) {
  return "POST /v1/chat/completions HTTP/1.1\r\n" + std::string(fields) +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + std::string(body);
}

// Beast's reading of a whole request in `wire`; nullopt when Beast rejects
// it or wants more bytes.
std::optional<http::request<http::string_body>> beast_request(std::string_view wire) {
  http::request_parser<http::string_body> parser;
  parser.header_limit(kHeaderLimit);
  parser.body_limit(kBodyLimit);
  parser.eager(true);
  beast::error_code ec;
  parser.put(net::buffer(wire.data(), wire.size()), ec);
  if (ec || !parser.is_done()) return std::nullopt;
  return parser.release();
}

// What the scan accepts, Beast reads the same way: method, target, fields in
// order (name as sent, value trimmed), body and the bytes consumed.
void expect_agrees_with_beast(std::string_view wire, const ScannedRequest& s) {
  http::request_parser<http::string_body> parser;
  parser.header_limit(kHeaderLimit);
  parser.body_limit(kBodyLimit);
  parser.eager(true);
  beast::error_code ec;
  const std::size_t used = parser.put(net::buffer(wire.data(), wire.size()), ec);
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(parser.is_done());
  EXPECT_EQ(used, s.size);
  const auto& req = parser.get();
  EXPECT_EQ(req.method(), s.method);
  EXPECT_EQ(req.target(), s.target);
  EXPECT_EQ(req.version(), 11u);
  EXPECT_EQ(req.body(), s.body);
  EXPECT_EQ(req.keep_alive(), s.keep_alive);
  std::vector<std::pair<std::string, std::string>> beast_fields;
  for (const auto& f : req) beast_fields.emplace_back(f.name_string(), f.value());
  std::vector<std::pair<std::string, std::string>> scanned_fields;
  for (const auto& f : s.head.fields()) scanned_fields.emplace_back(f.name, f.value);
  EXPECT_EQ(scanned_fields, beast_fields);
}

TEST(HeadScan, TakesTheCommonRequestAsBeastReadsIt) {
  const std::vector<std::string> accepted = {
      request_with("Host: a:1\r\nContent-Type: application/json\r\n"),
      request_with("host:a\r\nAuthorization:   Bearer k1  \r\nX-Empty:\r\nX-Tab:\tv\tw\t\r\n"),
      request_with("X-Obs-Text: caf\xc3\xa9\r\nX-Long: " + std::string(300, 'v') + "\r\n"),
      request_with("Connection: close\r\nx-arbiter-class: batch\r\n"),
      request_with("X_Rare.Tchars!#$%&'*+^`|~: v\r\nA-Name-Longer-Than-Sixteen-Bytes-9: v\r\n"),
      request_with("", ""),  // Content-Length: 0
      "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n",  // no body, no Content-Length
      "GET /v1/models?x=%20&y=[1] HTTP/1.1\r\n\r\n",
  };
  for (const auto& wire : accepted) {
    ScannedRequest s;
    ASSERT_TRUE(scan_request(wire, kHeaderLimit, kBodyLimit, s)) << wire;
    expect_agrees_with_beast(wire, s);
  }
}

TEST(HeadScan, LeavesBytesAfterTheRequestInPlace) {
  const std::string first = request_with("Host: a\r\n");
  const std::string wire = first + request_with("Host: b\r\n");
  ScannedRequest s;
  ASSERT_TRUE(scan_request(wire, kHeaderLimit, kBodyLimit, s));
  EXPECT_EQ(s.size, first.size());
  EXPECT_EQ(s.body, kBody);
}

TEST(HeadScan, DeclinesEverythingOutsideTheCommonForm) {
  const std::string head = "POST /v1/chat/completions HTTP/1.1\r\n";
  const std::vector<std::string> declined = {
      "POST /v1/chat/completions HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}",
      head + "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
      head + "Expect: 100-continue\r\nContent-Length: 2\r\n\r\n{}",
      head + "Upgrade: h2c\r\nConnection: upgrade\r\nContent-Length: 0\r\n\r\n",
      head + "X-Fold: a\r\n b\r\nContent-Length: 0\r\n\r\n",        // obs-fold
      head + "X-Bare: a\nContent-Length: 0\r\n\r\n",                // bare LF
      head + "X-Space : a\r\nContent-Length: 0\r\n\r\n",            // space before colon
      head + "X(Paren): a\r\nContent-Length: 0\r\n\r\n",            // a delimiter in a name
      head + "X@At: a\r\nContent-Length: 0\r\n\r\n",
      head + "X-Very-Long-Header-Name-With/Slash: a\r\nContent-Length: 0\r\n\r\n",
      head + ": no name\r\nContent-Length: 0\r\n\r\n",
      head + "Connection: clo@e\r\nContent-Length: 0\r\n\r\n",            // Beast: bad value
      head + "Connection: close\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
      head + "Proxy-Connection: close\r\nContent-Length: 0\r\n\r\n",
      head + "X-Ctl: a\x01" "b\r\nContent-Length: 0\r\n\r\n",       // control character
      head + "X-Del: a\x7f\r\nContent-Length: 0\r\n\r\n",           // DEL
      head + "Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}",    // duplicate framing
      head + "Content-Length: 1,1\r\n\r\n{",                        // a list
      head + "Content-Length: +2\r\n\r\n{}",
      head + "Content-Length: 99999999999999999999\r\n\r\n",       // over 19 digits
      head + "Content-Length: 10\r\n\r\n{}",                        // body not all here
      head + "Content-Length: 0\r\n",                               // head not complete
      "BREW /pot HTTP/1.1\r\n\r\n",                                 // unknown method
      "POST /a b HTTP/1.1\r\n\r\n",                                 // space in target
      "POST  /a HTTP/1.1\r\n\r\n",                                  // empty target
      "POST /caf\xc3\xa9 HTTP/1.1\r\n\r\n",                         // raw bytes in target
      "\r\nPOST /a HTTP/1.1\r\n\r\n",
  };
  for (const auto& wire : declined) {
    ScannedRequest s;
    EXPECT_FALSE(scan_request(wire, kHeaderLimit, kBodyLimit, s)) << wire;
  }
}

// Found by fuzz/fuzz_http_request (docs/security.md, "Fuzzing"): a request
// line with one space, the method's and the version's at once, was taken
// with "HTTP/1.1" as its target; Beast answers it "bad target".
TEST(HeadScan, DeclinesARequestLineWithoutATarget) {
  const std::vector<std::string> no_target = {
      "POST HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}",
      "GET HTTP/1.1\r\n\r\n",
      // The fuzzer's input, as it came.
      "POST HTTP/1.1\r\nHost:enn: keep-alive, X-Hop\r\nX-Hop: 1\r\ntr-Iop: 1\r\n"
      "traceparenn: keep-alive, X-Hop\r\nX-Hop: 1\r\ntraceparent: 00-1-2-01\r\n"
      "Propy-Authorization: x\r\nx-arbiter-class: batch\r\nAccept: text/event-stream\r\n"
      "TE: trailerr\r\nConteength: 58\r\n\r\n{\"model\":\"mi\"}]}",
  };
  for (const auto& wire : no_target) {
    ScannedRequest s;
    EXPECT_FALSE(scan_request(wire, kHeaderLimit, kBodyLimit, s)) << wire;
    EXPECT_FALSE(beast_request(wire)) << wire;
  }
}

TEST(HeadScan, SaysHowManyBytesABodyStillToComeNeeds) {
  const std::string wire = request_with("Host: a\r\n");
  ScannedRequest s;
  for (const std::size_t cut : {wire.size() - kBody.size(), wire.size() - 1}) {
    EXPECT_FALSE(scan_request(wire.substr(0, cut), kHeaderLimit, kBodyLimit, s));
    EXPECT_EQ(s.awaiting, wire.size());  // then read, and scanned again whole
  }
  ASSERT_TRUE(scan_request(wire, kHeaderLimit, kBodyLimit, s));
  EXPECT_EQ(s.awaiting, 0u);
  // Not for a body over the limit, a head not all there or one Beast decides.
  EXPECT_FALSE(scan_request(wire.substr(0, wire.size() - 1), kHeaderLimit, kBody.size() - 1, s));
  EXPECT_EQ(s.awaiting, 0u);
  EXPECT_FALSE(scan_request(wire.substr(0, 20), kHeaderLimit, kBodyLimit, s));
  EXPECT_EQ(s.awaiting, 0u);
  const std::string expect = "POST /v1/chat/completions HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n";
  EXPECT_FALSE(scan_request(expect, kHeaderLimit, kBodyLimit, s));
  EXPECT_EQ(s.awaiting, 0u);
}

TEST(HeadScan, DeclinesOverTheLimitsSoBeastReportsThem) {
  const std::string wire = request_with("X-Big: " + std::string(2000, 'x') + "\r\n");
  ScannedRequest s;
  EXPECT_FALSE(scan_request(wire, 1024, kBodyLimit, s));      // head over the limit
  EXPECT_FALSE(scan_request(wire, kHeaderLimit, 10, s));      // body over the limit
  EXPECT_TRUE(scan_request(wire, kHeaderLimit, kBody.size(), s));  // a body of exactly the limit

  std::string many;
  for (std::size_t i = 0; i <= kMaxScannedFields; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
  const std::string crowded = request_with(many);
  EXPECT_FALSE(scan_request(crowded, kHeaderLimit, kBodyLimit, s));
  EXPECT_TRUE(beast_request(crowded));  // Beast takes it: the server falls back
}

TEST(HeadScan, HeadLimitIsNeverLooserThanBeasts) {
  // Heads around the limit: whatever the scan takes, Beast takes too.
  for (std::size_t pad = 0; pad < 64; ++pad) {
    const std::string wire = "GET /a HTTP/1.1\r\nX-Pad: " + std::string(pad, 'p') + "\r\n\r\n";
    for (std::size_t limit = wire.size() - 8; limit <= wire.size() + 8; ++limit) {
      ScannedRequest s;
      if (!scan_request(wire, limit, kBodyLimit, s)) continue;
      http::request_parser<http::string_body> parser;
      parser.header_limit(static_cast<std::uint32_t>(limit));
      beast::error_code ec;
      parser.put(net::buffer(wire.data(), wire.size()), ec);
      EXPECT_FALSE(ec) << "limit " << limit << " head " << wire.size() << ": " << ec.message();
    }
  }
}

std::string response_with(std::string_view fields, std::string_view body) {
  return "HTTP/1.1 200 OK\r\n" + std::string(fields) + "Content-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + std::string(body);
}

TEST(HeadScan, TakesTheCommonResponse) {
  ScannedResponse r;
  const std::string wire =
      response_with("Server: nginx\r\nContent-Type: application/json\r\nConnection: keep-alive\r\n", "{}");
  ASSERT_TRUE(scan_response(wire, kHeaderLimit, r));
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.content_length, 2u);
  EXPECT_TRUE(r.keep_alive);
  EXPECT_EQ(r.head.size, wire.size() - 2);

  ASSERT_TRUE(scan_response(response_with("connection: Close\r\n", ""), kHeaderLimit, r));
  EXPECT_FALSE(r.keep_alive);
  ASSERT_TRUE(scan_response("HTTP/1.1 429 \r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n", kHeaderLimit, r));
  EXPECT_EQ(r.status, 429u);
  // The body need not have arrived: the parser takes it as it comes.
  EXPECT_TRUE(scan_response("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", kHeaderLimit, r));
}

TEST(HeadScan, DeclinesResponsesBeastMustFrame) {
  const std::vector<std::string> declined = {
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nclose-delimited",
      "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n",
      "HTTP/1.1 100 Continue\r\n\r\n",
      "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n",
      "HTTP/1.1 304 Not Modified\r\nContent-Length: 0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nConnection: keep-alive, x\r\nContent-Length: 0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nConnection: close\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
      "HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n",
      "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n",  // no SP after the code
      "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n",   // head not complete
  };
  for (const auto& wire : declined) {
    ScannedResponse r;
    EXPECT_FALSE(scan_response(wire, kHeaderLimit, r)) << wire;
  }
}

// The relay's parser gives the same answer whichever path reads a response
// (scan or Beast), in one read or split into small ones.
TEST(HeadScan, UpstreamParserAgreesWithBeastOnEveryResponse) {
  const std::vector<std::string> wires = {
      response_with("Server: nginx\r\nContent-Type: application/json\r\nRetry-After: 3\r\n", kBody),
      response_with("content-type: text/plain\r\nConnection: close\r\nx-should-retry: true\r\n", "abc"),
      "HTTP/1.1 503 Busy\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
      "2\r\n{}\r\n0\r\n\r\n",
      "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
      "HTTP/1.1 200 OK\r\nConnection: keep-alive, x\r\nContent-Length: 2\r\n\r\n{}",
  };
  for (const auto& wire : wires) {
    http::response_parser<http::string_body> beast;
    beast.eager(true);
    beast::error_code ec;
    beast.put(net::buffer(wire.data(), wire.size()), ec);
    ASSERT_FALSE(ec) << wire;
    ASSERT_TRUE(beast.is_done());
    const auto& expected = beast.get();
    for (const std::size_t step : {wire.size(), std::size_t{5}, std::size_t{1}}) {
      UpstreamResponseParser p;
      beast::flat_buffer buffer;
      std::string body;
      for (std::size_t at = 0; at < wire.size() && !p.is_done(); at += step) {
        const auto piece = std::string_view(wire).substr(at, step);
        buffer.commit(net::buffer_copy(buffer.prepare(piece.size()), net::buffer(piece.data(), piece.size())));
        ASSERT_FALSE(p.parse(buffer));
        for (const auto b : p.body_pieces()) body.append(b);
      }
      ASSERT_TRUE(p.is_done()) << wire << " step " << step;
      EXPECT_EQ(p.status(), expected.result_int());
      EXPECT_EQ(p.content_type(), expected[http::field::content_type]);
      EXPECT_EQ(p.keep_alive(), beast.keep_alive()) << wire;
      EXPECT_EQ(p.content_length().has_value(), beast.content_length().has_value());
      EXPECT_EQ(body, expected.body());
      EXPECT_EQ(buffer.size(), 0u);
    }
  }
}

TEST(HeadScan, UpstreamParserStopsAtTheEndOfAScannedBody) {
  // Bytes after the response stay in the buffer (the relay then drops the
  // connection instead of reading them as the next answer).
  const std::string wire = response_with("", "{}") + "HTTP/1.1";
  UpstreamResponseParser p;
  beast::flat_buffer buffer;
  buffer.commit(net::buffer_copy(buffer.prepare(wire.size()), net::buffer(wire.data(), wire.size())));
  ASSERT_FALSE(p.parse(buffer));
  ASSERT_TRUE(p.is_done());
  ASSERT_EQ(p.body_pieces().size(), 1u);
  EXPECT_EQ(p.body_pieces()[0], "{}");
  EXPECT_EQ(buffer.size(), 8u);
}

// The handler sees the same request whichever parser read it.
TEST(HeadScan, ServerRequestIsTheSameFromTheScanAndFromBeast) {
  const std::vector<std::pair<std::string, bool>> cases = {  // wire, keep-alive
      {request_with("Host: a\r\nAuthorization: Bearer k\r\nX-Arbiter-Class: batch\r\nx-arbiter-class: chat\r\n"), true},
      {request_with("Connection: close\r\n"), false},
      {request_with("Connection: keep-alive\r\nX-Empty:\r\n"), true},
  };
  for (const auto& [wire, keep_alive] : cases) {
    ScannedRequest scanned;
    ASSERT_TRUE(scan_request(wire, kHeaderLimit, kBodyLimit, scanned)) << wire;
    auto beast = beast_request(wire);
    ASSERT_TRUE(beast);
    const ServerRequest fast(scanned);
    const ServerRequest slow(std::move(*beast));
    for (const ServerRequest* r : {&fast, &slow}) {
      EXPECT_EQ(r->method(), http::verb::post);
      EXPECT_EQ(r->method_string(), "POST");
      EXPECT_EQ(r->target(), "/v1/chat/completions");
      EXPECT_EQ(r->body(), kBody);
      EXPECT_EQ(r->keep_alive(), keep_alive) << wire;
      EXPECT_FALSE(r->field("x-missing"));
    }
    for (const std::string_view name : {"authorization", "x-arbiter-class", "host", "x-empty"}) {
      EXPECT_EQ(fast.field(name), slow.field(name)) << name;
    }
  }
  const ServerRequest first(*beast_request(cases[0].first));
  EXPECT_EQ(first["authorization"], "Bearer k");  // sent as Authorization
  EXPECT_EQ(first["x-arbiter-class"], "batch");  // the first of two, as Beast's find
  // A Connection token list is Beast's to validate and read.
  const std::string listed = request_with("Connection: keep-alive, Close\r\n");
  ScannedRequest declined;
  EXPECT_FALSE(scan_request(listed, kHeaderLimit, kBodyLimit, declined));
  EXPECT_FALSE(ServerRequest(*beast_request(listed)).keep_alive());
  // HTTP/1.0 (Beast's path only) keeps the connection only when asked.
  EXPECT_FALSE(ServerRequest(*beast_request("GET /a HTTP/1.0\r\n\r\n")).keep_alive());
  EXPECT_TRUE(ServerRequest(*beast_request("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")).keep_alive());
}

TEST(HeadScan, LowerEqualsMatchesAnyCaseOnly) {
  EXPECT_TRUE(lower_equals("Content-Length", "content-length"));
  EXPECT_TRUE(lower_equals("X-RATELIMIT-RESET-TOKENS", "x-ratelimit-reset-tokens"));
  EXPECT_TRUE(lower_equals("Close", "close"));
  EXPECT_FALSE(lower_equals("Content-Lengths", "content-length"));
  EXPECT_FALSE(lower_equals("Content_Length", "content-length"));
  EXPECT_FALSE(lower_equals("content-lengtH1", "content-length2"));
  EXPECT_FALSE(lower_equals("keep-alivf", "keep-alive"));
  EXPECT_FALSE(lower_equals("caf\xc3\xa9", "cafe"));
}

// `wire` with one to three bytes replaced, inserted or removed, the bytes
// chosen from those that matter to HTTP framing.
std::string damaged(std::string wire, std::mt19937& rng) {
  static const std::string kBytes = std::string("\r\n\t :;,/\"()<>@[]{}=?\\\x7f\x00\x80\xff" "aZ09-_.!~", 31);
  const int edits = 1 + static_cast<int>(rng() % 3);
  for (int e = 0; e < edits; ++e) {
    const std::size_t at = rng() % wire.size();
    const char c = kBytes[rng() % kBytes.size()];
    switch (rng() % 3) {
      case 0: wire[at] = c; break;
      case 1: wire.insert(wire.begin() + static_cast<std::ptrdiff_t>(at), c); break;
      default: wire.erase(at, 1); break;
    }
  }
  return wire;
}

// Random damage to real requests (a fixed seed, 20k cases): whatever the
// scan still accepts, Beast must read identically.
TEST(HeadScan, MutatedRequestsTheScanAcceptsBeastReadsTheSame) {
  const std::vector<std::string> seeds = {
      request_with("Host: a:1\r\nContent-Type: application/json\r\nAuthorization: Bearer k\r\n"),
      request_with("X-A: 1\r\nConnection: close\r\n", "{}"),
      "GET /v1/models HTTP/1.1\r\nHost: h\r\n\r\n",
  };
  std::mt19937 rng(20261130);
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string wire = damaged(seeds[rng() % seeds.size()], rng);
    ScannedRequest s;
    if (!scan_request(wire, kHeaderLimit, kBodyLimit, s)) continue;
    ++accepted;
    SCOPED_TRACE(::testing::Message() << "case " << i << ": " << wire);
    expect_agrees_with_beast(wire.substr(0, s.size), s);
    if (HasFailure()) break;
  }
  EXPECT_GT(accepted, 1000);  // the damage left many requests valid: the check ran
}

// The same damage to upstream responses: whatever the scan accepts, Beast's
// response parser frames the same way (status, length, keep-alive).
TEST(HeadScan, MutatedResponsesTheScanAcceptsBeastFramesTheSame) {
  const std::vector<std::string> seeds = {
      response_with("Server: nginx\r\nContent-Type: application/json\r\nConnection: keep-alive\r\n", "{}"),
      response_with("Retry-After: 2\r\nConnection: close\r\n", "abc"),
  };
  std::mt19937 rng(1130);
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string wire = damaged(seeds[rng() % seeds.size()], rng);
    ScannedResponse r;
    if (!scan_response(wire, kHeaderLimit, r)) continue;
    ++accepted;
    SCOPED_TRACE(::testing::Message() << "case " << i << ": " << wire);
    http::response_parser<http::string_body> beast;
    beast.eager(true);
    beast::error_code ec;
    const std::size_t head = beast.put(net::buffer(wire.data(), r.head.size), ec);
    ASSERT_FALSE(ec) << ec.message();
    ASSERT_TRUE(beast.is_header_done());
    EXPECT_EQ(head, r.head.size);
    EXPECT_EQ(beast.get().result_int(), r.status);
    ASSERT_TRUE(beast.content_length());
    EXPECT_EQ(*beast.content_length(), r.content_length);
    EXPECT_EQ(beast.keep_alive(), r.keep_alive);
    if (HasFailure()) break;
  }
  EXPECT_GT(accepted, 1000);
}

}  // namespace
}  // namespace arbiter
