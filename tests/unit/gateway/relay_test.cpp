// The relay against a scriptable fake upstream on loopback, writing to
// test sinks: streams and whole answers arrive byte-exact, a tee hands the
// same bytes on, a discarding sink takes a shadow's answer, and a consumer
// that leaves mid-stream closes the upstream connection (the engine aborts).
#include "gateway/relay/upstream_relay.hpp"

#include <gtest/gtest.h>

#include "http/discard_sink.hpp"
#include "http/tee_sink.hpp"
#include "recording_sink.hpp"
#include "support/fake_upstream.hpp"

namespace arbiter {
namespace {

using testing::RecordingCopy;
using testing::RecordingSink;

// Relays one /v1/chat/completions request to `pool`'s upstream into `sink`,
// on `ioc`, which outlives the pool: a connection the relay keeps for reuse
// is a socket of that io_context (AddressSanitizer caught the reverse).
RelayOutcome relay_through(net::io_context& ioc, UpstreamPool& pool, ResponseSink& sink) {
  Deadline deadline;
  Interrupt interrupt;
  const TimeoutsConfig timeouts;
  const LimitsConfig limits;
  const std::vector<std::pair<std::string, std::string>> headers{{"x-request-id", "r1"}};
  const UpstreamRequest up{.target = "/v1/chat/completions", .host = "127.0.0.1", .request_id = "r1",
                           .accept = {}, .body = R"({"model":"m1"})"};
  const RelayRequest request{.pool = pool, .upstream_request = up, .sink = sink, .deadline = deadline,
                             .timeouts = timeouts, .limits = limits, .response_headers = headers,
                             .interrupt = interrupt};
  RelayOutcome outcome;
  net::co_spawn(ioc, [&]() -> Task<void> { outcome = co_await relay(request); }, net::detached);
  ioc.run_for(std::chrono::seconds(10));
  return outcome;
}

RelayOutcome relay_to(test::FakeUpstream& upstream, ResponseSink& sink) {
  net::io_context ioc;
  UpstreamPool pool("127.0.0.1", upstream.port(), 4);
  return relay_through(ioc, pool, sink);
}

TEST(Relay, AStreamReachesTheSinkByteExact) {
  test::FakeUpstream upstream;
  const test::Stream stream{.payloads = test::chat_chunks(6)};
  upstream.push(stream);
  RecordingSink sink;
  const RelayOutcome outcome = relay_to(upstream, sink);
  EXPECT_EQ(outcome.status, 200);
  EXPECT_TRUE(outcome.stream);
  EXPECT_TRUE(sink.streamed);
  EXPECT_EQ(sink.content_type, "text/event-stream");
  EXPECT_EQ(sink.body, stream.wire());
  EXPECT_TRUE(sink.ended);
}

TEST(Relay, AWholeAnswerReachesTheSinkUnchanged) {
  test::FakeUpstream upstream;
  const std::string body = test::chat_completion_body("m1", "hello there");
  upstream.push(test::Respond{.body = body});
  RecordingSink sink;
  const RelayOutcome outcome = relay_to(upstream, sink);
  EXPECT_EQ(outcome.status, 200);
  EXPECT_FALSE(sink.streamed);
  EXPECT_EQ(sink.body, body);
}

TEST(Relay, ATeeHandsOnTheBytesTheClientGets) {
  test::FakeUpstream upstream;
  const test::Stream stream{.payloads = test::chat_chunks(4)};
  upstream.push(stream);
  RecordingSink client;
  RecordingCopy copy;
  TeeSink tee(client, copy);
  EXPECT_EQ(relay_to(upstream, tee).status, 200);
  EXPECT_EQ(client.body, stream.wire());
  EXPECT_EQ(copy.bytes_seen, client.body);
  EXPECT_EQ(copy.status, 200u);
  EXPECT_EQ(copy.ends, 1);
  EXPECT_TRUE(copy.complete);
}

TEST(Relay, ADiscardingSinkTakesAShadowsAnswer) {
  test::FakeUpstream upstream;
  const test::Stream stream{.payloads = test::chat_chunks(5)};
  upstream.push(stream);
  DiscardSink shadow;
  EXPECT_EQ(relay_to(upstream, shadow).status, 200);
  EXPECT_EQ(shadow.status(), 200u);
  EXPECT_EQ(shadow.body_bytes(), stream.wire().size());
  EXPECT_TRUE(shadow.ended());
}

TEST(Relay, AConsumerLeavingMidStreamClosesTheUpstream) {
  test::FakeUpstream upstream;
  upstream.push(test::Stream{.payloads = test::chat_chunks(50), .interval = std::chrono::milliseconds(20)});
  RecordingSink sink;
  sink.leave_after_writes = 2;
  net::io_context ioc;
  UpstreamPool pool("127.0.0.1", upstream.port(), 4);  // alive: a connection kept for reuse stays open
  const RelayOutcome outcome = relay_through(ioc, pool, sink);
  EXPECT_EQ(outcome.status, 499);
  EXPECT_TRUE(upstream.wait_for_peer_close(0, std::chrono::milliseconds(500)).has_value())
      << "the stream goes on for a second unless the relay closes it: " << upstream.describe();
}

}  // namespace
}  // namespace arbiter
