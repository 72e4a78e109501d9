// Relay: what the client sends reaches the engine unchanged (bar the
// Authorization header), and what the engine answers reaches the client
// unchanged, streaming or not, over pooled upstream connections.
#include <gtest/gtest.h>

#include <thread>

#include "support/harness.hpp"
#include "support/http_client.hpp"
#include "support/requests.hpp"

namespace arbiter::test {
namespace {

// Odd spacing, key order and escapes: any re-serialisation would show.
constexpr const char* kOddRequest =
    R"({ "messages" : [ {"role":"user","content":"caf\u00e9 \"quoted\""} ],  "model":"m1", "temperature": 0.70 })";
constexpr const char* kOddResponse =
    "{\"id\":\"cmpl-1\",  \"object\":\"chat.completion\",\"choices\":[{\"index\":0,"
    "\"message\":{\"role\":\"assistant\",\"content\":\"h\\u00e9llo \xc3\xa9\"},\"finish_reason\":\"stop\"}],"
    "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"total_tokens\":5} }\n";

TEST(Relay, NonStreamingResponsePassesThroughByteExact) {
  Harness h;
  Respond r;
  r.body = kOddResponse;
  r.content_type = "application/json; charset=utf-8";
  h.upstream().push(r);

  auto req = chat_request(kOddRequest);
  req.headers.emplace_back("x-request-id", "itest-req-42");
  const auto res = http_call(h.port(), req);

  EXPECT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(res.body, kOddResponse);
  EXPECT_EQ(res.header("content-type"), "application/json; charset=utf-8");

  ASSERT_EQ(h.upstream().request_count(), 1u);
  const auto seen = h.upstream().requests()[0];
  EXPECT_EQ(seen.method, "POST");
  EXPECT_EQ(seen.target, "/v1/chat/completions");
  EXPECT_EQ(seen.body, kOddRequest) << "body must not be re-serialised when no cap applies";
  EXPECT_FALSE(seen.header("authorization").has_value()) << "the client's API key reached the engine";
  EXPECT_EQ(seen.header("x-request-id"), "itest-req-42");
}

// More than the kernel takes in one write on either hop: the gateway writes
// what it can at once and the rest as the socket drains.
TEST(Relay, ResponseLargerThanSocketBuffersArrivesWhole) {
  Harness h;
  Respond r;
  r.body.reserve(24u << 20);
  for (int i = 0; r.body.size() < (24u << 20); ++i) r.body += std::to_string(i) + ',';
  h.upstream().push(r);

  const auto res = http_call(h.port(), chat_request(chat_body()));
  EXPECT_EQ(res.status, 200);
  ASSERT_EQ(res.body.size(), r.body.size());
  EXPECT_TRUE(res.body == r.body) << "the body changed on the way";
}

TEST(Relay, UpstreamClientErrorPassesThroughUnchanged) {
  Harness h;
  Respond r;
  r.status = 400;
  r.body = R"({"error":{"message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","param":null,"code":400}})";
  h.upstream().push(r);

  const auto res = http_call(h.port(), chat_request(chat_body()));
  EXPECT_EQ(res.status, 400);
  EXPECT_EQ(res.body, r.body);
  EXPECT_EQ(res.header("content-type"), "application/json");
}

TEST(Relay, StreamingEventsPassThroughByteExact) {
  Harness h;
  Stream s;
  s.payloads = chat_chunks(20);
  s.interval = Millis(10);
  h.upstream().push(s);

  HttpConnection conn(h.port());
  conn.send(chat_request(chat_body(/*stream=*/true)));
  const auto head = conn.read_head();
  ASSERT_EQ(head.status, 200);
  EXPECT_EQ(head.header("content-type"), "text/event-stream");
  EXPECT_EQ(head.header("transfer-encoding"), "chunked");
  EXPECT_EQ(head.header("x-arbiter-class"), "chat");
  EXPECT_EQ(head.header("x-arbiter-backend").value_or("").empty(), false);
  EXPECT_EQ(head.header("x-request-id").value_or("").empty(), false);

  const auto body = conn.read_rest();
  EXPECT_FALSE(conn.error()) << *conn.error();
  EXPECT_TRUE(conn.complete());
  EXPECT_EQ(body, s.wire());
  EXPECT_EQ(split_sse_events(body).size(), 21u);
}

// Events must reach the client as they are produced, not when the stream
// ends: the first one arrives long before the last (events 300 ms apart).
TEST(Relay, StreamingEventsAreNotBuffered) {
  Harness h;
  Stream s;
  s.payloads = chat_chunks(5);
  s.interval = Millis(300);
  h.upstream().push(s);

  HttpConnection conn(h.port());
  conn.send(chat_request(chat_body(true)));
  ASSERT_EQ(conn.read_head().status, 200);
  ASSERT_GE(conn.read_events(1).size(), 1u);
  const auto first_event_at = Clock::now();
  const auto body = conn.read_rest();
  const auto done_at = Clock::now();
  EXPECT_EQ(body, s.wire());
  // The upstream needs 1.5 s after the first event; a buffering gateway
  // would deliver everything at once.
  EXPECT_GT(ms_between(first_event_at, done_at), 600.0);
}

TEST(Relay, SequentialRequestsReuseOneUpstreamConnection) {
  Harness h;
  HttpConnection conn(h.port());
  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    const auto res = conn.request(chat_request(chat_body()));
    ASSERT_EQ(res.status, 200) << res.body;
    EXPECT_EQ(res.body, chat_completion_body());
  }
  ASSERT_EQ(h.upstream().request_count(), 5u);
  EXPECT_EQ(h.upstream().total_connections(), 1u) << "upstream keep-alive pooling not used";
  for (const auto& r : h.upstream().requests()) EXPECT_EQ(r.connection_id, 0u);
}

// Back-to-back requests on one client keep-alive connection: each must be
// answered, however soon it follows the previous response.
TEST(Relay, ClientKeepAliveConnectionServesBackToBackRequests) {
  Harness h;
  HttpConnection conn(h.port());
  for (int i = 0; i < 1000; ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    HttpResponse res;
    ASSERT_NO_THROW(res = conn.request(chat_request(chat_body()), Millis(3'000)))
        << "request " << i << " on a reused client connection got no answer; upstream saw "
        << h.upstream().request_count() << " requests";
    ASSERT_EQ(res.status, 200) << res.body;
  }
}

TEST(Relay, StreamedThenPlainRequestsReuseOneUpstreamConnection) {
  Harness h;
  Stream s;
  s.payloads = chat_chunks(3);
  h.upstream().push(s);
  HttpConnection conn(h.port());
  const auto streamed = conn.request(chat_request(chat_body(true)));
  ASSERT_EQ(streamed.status, 200);
  EXPECT_EQ(streamed.body, s.wire());
  const auto plain = conn.request(chat_request(chat_body()));
  ASSERT_EQ(plain.status, 200);
  EXPECT_EQ(h.upstream().total_connections(), 1u)
      << "a connection whose stream ended cleanly should go back to the pool";
}

// A client that pipelines: the second request arrives while the first waits
// on the engine, so the disconnect watch reads it. It must be kept and
// answered after the first, not taken for the client leaving.
TEST(Relay, PipelinedRequestArrivingMidRequestIsAnsweredNext) {
  Harness h;
  Respond slow;
  slow.body = chat_completion_body("m1", "first");
  slow.header_delay = Millis(300);
  h.upstream().push(slow);
  Respond fast;
  fast.body = chat_completion_body("m1", "second");
  h.upstream().push(fast);

  const HttpRequest second = chat_request(chat_body());
  std::string wire = "POST " + second.target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (const auto& [k, v] : second.headers) wire += k + ": " + v + "\r\n";
  wire += "Content-Length: " + std::to_string(second.body.size()) + "\r\n\r\n" + second.body;

  HttpConnection conn(h.port());
  conn.send(chat_request(chat_body()));
  std::this_thread::sleep_for(Millis(100));  // the first request is upstream now
  conn.send_raw(wire);                       // pipelined before the first answer
  const auto first_head = conn.read_head();
  EXPECT_EQ(first_head.status, 200);
  EXPECT_EQ(conn.read_rest(), slow.body);
  conn.send_raw("");  // nothing to send: a fresh parser for the pipelined answer
  const auto second_head = conn.read_head();
  EXPECT_EQ(second_head.status, 200);
  EXPECT_EQ(conn.read_rest(), fast.body);
  EXPECT_EQ(h.upstream().request_count(), 2u);
}

// A body that arrives in pieces, and a 900 KiB prompt (larger than the socket
// buffers, with escapes and multi-byte text), is read whole by the server's
// own scan (read straight into its buffer, not handed to Beast) and reaches
// the engine as sent; the connection then serves the next request.
TEST(Relay, BodiesInPiecesAndLargePromptsReachTheEngineAsSent) {
  Harness h;
  std::string prompt;
  while (prompt.size() < 900 * 1024) prompt += R"(Caf\u00e9 caf)" "\xc3\xa9" R"( \"quoted\" line\n )";
  const std::vector<std::string> bodies = {
      chat_body(), R"({"model":")" + std::string(kModel) + R"(","messages":[{"role":"user","content":")" + prompt + R"("}]})",
      chat_body()};
  HttpConnection conn(h.port());
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    const HttpRequest req = chat_request(bodies[i]);
    std::string wire = "POST " + req.target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    for (const auto& [k, v] : req.headers) wire += k + ": " + v + "\r\n";
    wire += "Content-Length: " + std::to_string(req.body.size()) + "\r\n\r\n";
    const std::size_t head = wire.size();
    wire += req.body;
    // The head with a few body bytes, then the rest in two parts.
    const std::size_t cuts[] = {0, head + 5, head + (wire.size() - head) / 2, wire.size()};
    for (std::size_t c = 0; c + 1 < std::size(cuts); ++c) {
      conn.send_raw(std::string_view(wire).substr(cuts[c], cuts[c + 1] - cuts[c]));
      if (i < 2) std::this_thread::sleep_for(Millis(50));  // the last one whole, after the others
    }
    const auto res = conn.read_head();
    ASSERT_EQ(res.status, 200);
    conn.read_rest();
    ASSERT_TRUE(h.upstream().wait_for_requests(i + 1, Millis(5'000)));
    EXPECT_TRUE(h.upstream().requests()[i].body == req.body) << "the body reached the engine changed";
  }
}

}  // namespace
}  // namespace arbiter::test
