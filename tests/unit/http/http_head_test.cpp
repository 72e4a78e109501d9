// The hand-written HTTP heads and the in-place upstream response parser.
#include <gtest/gtest.h>

#include <string>

#include "http/http_head.hpp"
#include "http/upstream_response.hpp"

namespace arbiter {
namespace {

TEST(HttpHead, RequestHeadCarriesHostTypeAcceptIdAndLength) {
  const std::string body(1234, 'x');
  UpstreamRequest r{.target = "/v1/chat/completions",
                    .host = "10.0.0.7:8000",
                    .request_id = "req-1",
                    .accept = "text/event-stream",
                    .body = body};
  std::string out = "left over from the last request";
  write_request_head(r, out);
  EXPECT_EQ(out,
            "POST /v1/chat/completions HTTP/1.1\r\n"
            "Host: 10.0.0.7:8000\r\n"
            "Content-Type: application/json\r\n"
            "Accept: text/event-stream\r\n"
            "x-request-id: req-1\r\n"
            "Content-Length: 1234\r\n\r\n");
  r.accept = {};
  write_request_head(r, out);
  EXPECT_EQ(out.find("Accept"), std::string::npos);
}

TEST(HttpHead, WholeResponseHeadFramesWithLengthAndClosesWhenAsked) {
  const std::vector<std::pair<std::string, std::string>> upstream{{"retry-after", "3"}};
  const std::vector<std::pair<std::string, std::string>> gateway{{"x-request-id", "r"}, {"x-arbiter-class", "chat"}};
  const ResponseHead head{
      .status = 429, .content_type = "application/json", .cache_control = {}, .upstream = upstream, .gateway = gateway};
  std::string out;
  write_response_head(head, 17, /*keep_alive=*/false, out);
  EXPECT_EQ(out,
            "HTTP/1.1 429 Too Many Requests\r\n"
            "Content-Type: application/json\r\n"
            "retry-after: 3\r\n"
            "x-request-id: r\r\n"
            "x-arbiter-class: chat\r\n"
            "Content-Length: 17\r\n"
            "Connection: close\r\n\r\n");
}

TEST(HttpHead, StreamHeadIsChunkedAndKeepsTheConnection) {
  const ResponseHead head{
      .status = 200, .content_type = "text/event-stream", .cache_control = "no-cache", .upstream = {}, .gateway = {}};
  std::string out;
  write_response_head(head, std::nullopt, /*keep_alive=*/true, out);
  EXPECT_EQ(out,
            "HTTP/1.1 200 OK\r\n"
            "Content-Type: text/event-stream\r\n"
            "Cache-Control: no-cache\r\n"
            "Transfer-Encoding: chunked\r\n\r\n");
}

TEST(HttpHead, StreamHeadToAnHttp10ClientHasNoFramingAndCloses) {
  const ResponseHead head{
      .status = 200, .content_type = "text/event-stream", .cache_control = "no-cache", .upstream = {}, .gateway = {}};
  std::string out;
  write_response_head(head, BodyFraming::kUntilClose, /*keep_alive=*/false, out);
  EXPECT_EQ(out,
            "HTTP/1.1 200 OK\r\n"
            "Content-Type: text/event-stream\r\n"
            "Cache-Control: no-cache\r\n"
            "Connection: close\r\n\r\n");
  write_response_head(head, BodyFraming::kChunked, /*keep_alive=*/true, out);
  EXPECT_NE(out.find("Transfer-Encoding: chunked\r\n"), std::string::npos);
}

TEST(HttpHead, BeastResponseHeadWritesEveryFieldInOrder) {
  http::response<http::string_body> res{http::status::not_found, 11};
  res.set(http::field::content_type, "application/json");
  res.set("x-extra", "1");
  res.body() = "{}";
  res.prepare_payload();
  std::string out;
  write_response_head(res, out);
  EXPECT_EQ(out, "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nx-extra: 1\r\nContent-Length: 2\r\n\r\n");
}

// Feeds `wire` to a parser `step` bytes at a time, as reads would; returns the body.
std::string parse_in_steps(UpstreamResponseParser& p, std::string_view wire, std::size_t step) {
  beast::flat_buffer buffer;
  std::string body;
  for (std::size_t at = 0; at < wire.size() && !p.is_done(); at += step) {
    const auto piece = wire.substr(at, step);
    buffer.commit(net::buffer_copy(buffer.prepare(piece.size()), net::buffer(piece.data(), piece.size())));
    const auto ec = p.parse(buffer);
    EXPECT_FALSE(ec) << ec.message();
    for (const auto b : p.body_pieces()) body.append(b);
  }
  return body;
}

TEST(UpstreamResponseParser, KeepsStatusTypeRetryHeadersAndTheBody) {
  const std::string wire =
      "HTTP/1.1 503 Service Unavailable\r\nServer: x\r\nContent-Type: application/json\r\n"
      "Retry-After: 2\r\nX-RateLimit-Remaining-Requests: 0\r\nContent-Length: 11\r\n\r\n{\"error\":1}";
  for (const std::size_t step : {wire.size(), std::size_t{7}, std::size_t{1}}) {
    UpstreamResponseParser p;
    EXPECT_EQ(parse_in_steps(p, wire, step), "{\"error\":1}") << "step " << step;
    EXPECT_TRUE(p.is_done());
    EXPECT_TRUE(p.keep_alive());
    EXPECT_EQ(p.status(), 503u);
    EXPECT_EQ(p.content_type(), "application/json");
    ASSERT_EQ(p.forwarded().size(), 2u);
    EXPECT_EQ(p.forwarded()[0].first, "Retry-After");
    EXPECT_EQ(p.forwarded()[1].second, "0");
  }
}

TEST(UpstreamResponseParser, DecodesChunkedStreams) {
  const std::string wire =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
      "f\r\ndata: {\"a\":1}\n\n\r\n"
      "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n";
  for (const std::size_t step : {wire.size(), std::size_t{5}}) {
    UpstreamResponseParser p;
    EXPECT_EQ(parse_in_steps(p, wire, step), "data: {\"a\":1}\n\ndata: [DONE]\n\n");
    EXPECT_TRUE(p.is_done());
    EXPECT_TRUE(p.forwarded().empty());
  }
}

TEST(UpstreamResponseParser, BodyEndingAtCloseCompletesAtEofAndNothingIsAnError) {
  UpstreamResponseParser p;
  EXPECT_EQ(parse_in_steps(p, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nhello", 64), "hello");
  EXPECT_FALSE(p.is_done());
  EXPECT_FALSE(p.parse_eof());
  EXPECT_TRUE(p.is_done());
  EXPECT_FALSE(p.keep_alive());

  UpstreamResponseParser nothing;
  EXPECT_EQ(nothing.parse_eof(), http::error::end_of_stream);
  UpstreamResponseParser partial;
  parse_in_steps(partial, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf", 64);
  EXPECT_EQ(partial.parse_eof(), http::error::partial_message);
}

TEST(UpstreamResponseParser, RejectsAMalformedHead) {
  UpstreamResponseParser p;
  beast::flat_buffer buffer;
  const std::string_view wire = "NOT HTTP AT ALL\r\n\r\n";
  buffer.commit(net::buffer_copy(buffer.prepare(wire.size()), net::buffer(wire.data(), wire.size())));
  EXPECT_TRUE(p.parse(buffer));
}

}  // namespace
}  // namespace arbiter
