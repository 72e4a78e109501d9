// The relay against a scriptable fake upstream on loopback, writing to
// test sinks: streams and whole answers arrive byte-exact, a tee hands the
// same bytes on, a discarding sink takes a shadow's answer, and a consumer
// that leaves mid-stream closes the upstream connection (the engine aborts).
#include "gateway/relay/upstream_relay.hpp"

#include <gtest/gtest.h>

#include "http/discard_sink.hpp"
#include "gateway/stages/cache/flight.hpp"
#include "recording_sink.hpp"
#include "support/fake_upstream.hpp"

namespace arbiter::relay_test {
namespace {

using testing::RecordingSink;

const UpstreamRequest kChatRequest{.target = "/v1/chat/completions", .host = "127.0.0.1", .request_id = "r1",
                                   .accept = {}, .body = R"({"model":"m1"})"};

// Relays `up` (by default a /v1/chat/completions request) to `pool`'s
// upstream into `sink`, on `ioc`, which outlives the pool: a connection the
// relay keeps for reuse is a socket of that io_context (AddressSanitizer
// caught the reverse). `outcome` is what the caller's holds before the run
// (relay() writes into it).
RelayOutcome relay_through(net::io_context& ioc, UpstreamPool& pool, ResponseSink& sink,
                           RelayResume* resume = nullptr, RelayOutcome outcome = {},
                           const UpstreamRequest& up = kChatRequest, StreamGaps* gaps = nullptr) {
  Deadline deadline;
  Interrupt interrupt;
  const TimeoutsConfig timeouts;
  const LimitsConfig limits;
  const std::vector<std::pair<std::string, std::string>> headers{{"x-request-id", "r1"}};
  const RelayRequest request{.pool = pool, .upstream_request = up, .sink = sink, .deadline = deadline,
                             .timeouts = timeouts, .limits = limits, .response_headers = headers,
                             .interrupt = interrupt, .resume = resume, .gaps = gaps,
                             // With gaps: first tokens and abandoned runs counted.
                             .first_token_bound = gaps ? std::chrono::seconds(1) : std::chrono::seconds(0)};
  net::co_spawn(ioc, relay(request, outcome), net::detached);
  ioc.restart();  // a second run on the same io_context (and pool)
  ioc.run_for(std::chrono::seconds(10));
  return outcome;
}

RelayOutcome relay_to(test::FakeUpstream& upstream, ResponseSink& sink, RelayResume* resume = nullptr) {
  net::io_context ioc;
  UpstreamPool pool("127.0.0.1", upstream.port(), 4);
  return relay_through(ioc, pool, sink, resume);
}

// A whole SSE stream in one upstream write (a Content-Length answer): the
// relay reads it at once.
test::Respond sse_in_one_write(const std::string& wire) {
  return test::Respond{.body = wire, .content_type = "text/event-stream"};
}

std::string joined(const std::vector<std::string>& events) {
  std::string out;
  for (const auto& e : events) out += e;
  return out;
}

std::string chat_event(std::string_view id, std::string_view delta, std::string_view eol = "\n") {
  return "data: {\"id\":\"" + std::string(id) +
         "\",\"object\":\"chat.completion.chunk\",\"created\":7,\"model\":\"m1\",\"choices\":[{\"index\":0,"
         "\"delta\":" + std::string(delta) + ",\"finish_reason\":null}]}" + std::string(eol) + std::string(eol);
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

// Two content events, a usage chunk (11 prompt tokens, 2 completion
// tokens) and [DONE], as vLLM streams them.
std::string two_events_and_usage() {
  const std::string usage =
      "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":2,\"total_tokens\":13}}\n\n";
  return chat_event("c", R"({"content":"a"})") + chat_event("c", R"({"content":"b"})") + usage + "data: [DONE]\n\n";
}

// relay() writes into the caller's outcome, which a request keeps across
// the runs of a retry or a preemption: each run starts from a fresh one,
// so nothing of a failed run's is left in the run after it.
TEST(Relay, EachRunStartsFromAFreshOutcome) {
  test::FakeUpstream upstream;
  const std::string wire = two_events_and_usage();
  upstream.push(sse_in_one_write(wire));
  upstream.push(sse_in_one_write(wire));
  net::io_context ioc;
  UpstreamPool pool("127.0.0.1", upstream.port(), 4);
  RecordingSink first_sink, second_sink;
  const RelayOutcome fresh = relay_through(ioc, pool, first_sink);
  RelayOutcome failed_run;
  failed_run.preempted = true;
  failed_run.interrupted = true;
  failed_run.retried = true;
  failed_run.stream_open = true;
  failed_run.error = ApiError{ErrorCode::kUpstreamFailed, "an earlier run's", {}, {}};
  failed_run.upstream_error = "reset";
  failed_run.upstream_retry_after = std::chrono::milliseconds(5000);
  failed_run.held = HeldResponse{.status = 503, .content_type = "application/json", .body = "{}", .headers = {}};
  failed_run.usage = Usage{.prompt_tokens = 1000, .completion_tokens = 1000};
  failed_run.generated = 99;
  const RelayOutcome again = relay_through(ioc, pool, second_sink, nullptr, failed_run);
  ASSERT_EQ(fresh.status, 200);
  ASSERT_TRUE(fresh.usage);
  EXPECT_EQ(again.status, fresh.status);
  EXPECT_EQ(again.stream, fresh.stream);
  EXPECT_FALSE(again.preempted);
  EXPECT_FALSE(again.interrupted);
  EXPECT_FALSE(again.retried);
  EXPECT_FALSE(again.stream_open);
  EXPECT_FALSE(again.error);
  EXPECT_TRUE(again.upstream_error.empty());
  EXPECT_FALSE(again.upstream_retry_after);
  EXPECT_FALSE(again.held);
  ASSERT_TRUE(again.usage);
  EXPECT_EQ(again.usage->prompt_tokens, 11);
  EXPECT_EQ(again.usage->completion_tokens, 2);
  EXPECT_EQ(again.generated, fresh.generated);
  EXPECT_EQ(again.upstream_status, 200u);
}

// An insert (the usage ask) goes out inside the client's body, at its
// place, with a Content-Length that counts it: the engine reads one body.
TEST(Relay, AnInsertGoesOutInsideTheBody) {
  test::FakeUpstream upstream;
  upstream.push(test::Respond{.body = test::chat_completion_body("m1", "hi")});
  net::io_context ioc;
  UpstreamPool pool("127.0.0.1", upstream.port(), 4);
  UpstreamRequest up = kChatRequest;
  up.body = R"({"model":"m1","stream":true})";
  up.body_insert = R"("inserted":1,)";
  up.insert_at = 1;
  RecordingSink sink;
  const RelayOutcome outcome = relay_through(ioc, pool, sink, nullptr, {}, up);
  EXPECT_EQ(outcome.status, 200);
  const auto received = upstream.requests();
  ASSERT_EQ(received.size(), 1u);
  const std::string expected = R"({"inserted":1,"model":"m1","stream":true})";
  EXPECT_EQ(received[0].body, expected);
  EXPECT_EQ(received[0].header("content-length"), std::to_string(expected.size()));
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

TEST(Relay, AFlightTeeHandsOnTheBytesTheClientGets) {
  test::FakeUpstream upstream;
  const test::Stream stream{.payloads = test::chat_chunks(4)};
  upstream.push(stream);
  RecordingSink client;
  net::io_context leader;
  auto flight = std::make_shared<Flight>("tenant:a", "m1", leader.get_executor());
  FlightTee tee(client, flight);
  EXPECT_EQ(relay_to(upstream, tee).status, 200);
  EXPECT_EQ(client.body, stream.wire());
  const Flight::State state = flight->state();
  EXPECT_EQ(state.status, 200u);
  EXPECT_TRUE(state.stream);
  EXPECT_TRUE(state.ended && state.complete);
  EXPECT_EQ(flight->take_bytes(), client.body);
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

// Adaptive capacity hears of a client that left a run the engine had
// (StreamGaps::count_abandoned), and of no other end.
TEST(Relay, AClientLeavingARunningStreamCountsAsAbandonedForAdaptiveCapacity) {
  const auto relay_counting = [](RecordingSink& sink, StreamGaps& gaps) {
    test::FakeUpstream upstream;
    upstream.push(test::Stream{.payloads = test::chat_chunks(10), .interval = std::chrono::milliseconds(5)});
    net::io_context ioc;
    UpstreamPool pool("127.0.0.1", upstream.port(), 4);
    return relay_through(ioc, pool, sink, nullptr, {}, kChatRequest, &gaps).status;
  };
  StreamGaps gaps;
  RecordingSink left;
  left.leave_after_writes = 2;
  EXPECT_EQ(relay_counting(left, gaps), 499);
  sched::GapCounts seen = gaps.take();
  EXPECT_EQ(seen.abandoned, 1u);
  EXPECT_EQ(seen.firsts, 1u);
  RecordingSink stayed;
  EXPECT_EQ(relay_counting(stayed, gaps), 200);
  seen = gaps.take();
  EXPECT_EQ(seen.abandoned, 0u);
  EXPECT_EQ(seen.firsts, 1u);
}

TEST(Relay, TheEventsOfOneReadGoOutAsOneChunk) {
  test::FakeUpstream upstream;
  const test::Stream stream{.payloads = test::chat_chunks(20)};
  upstream.push(sse_in_one_write(stream.wire()));
  RecordingSink sink;
  const RelayOutcome outcome = relay_to(upstream, sink);
  EXPECT_EQ(outcome.status, 200);
  EXPECT_EQ(sink.body, stream.wire());
  ASSERT_EQ(sink.chunks.size(), 1u) << "one write for the read, not one per event";
  EXPECT_EQ(outcome.generated, 20) << "every data event counted, [DONE] not";
}

TEST(Relay, AStreamThatCameInOneReadGoesOutInOneWrite) {
  // The head with the events that came with it and the stream's end with
  // the last of them: nothing is waited for, so one write.
  test::FakeUpstream upstream;
  const test::Stream stream{.payloads = test::chat_chunks(8)};
  upstream.push(sse_in_one_write(stream.wire()));
  RecordingSink sink;
  EXPECT_EQ(relay_to(upstream, sink).status, 200);
  EXPECT_EQ(sink.body, stream.wire());
  EXPECT_TRUE(sink.streamed);
  EXPECT_TRUE(sink.ended);
  EXPECT_EQ(sink.stream_writes, 1) << "head, events and end in one write";
}

TEST(Relay, AnEventCutAcrossReadsGoesOutWholeAndByteExact) {
  test::FakeUpstream upstream;
  const test::Stream stream{.interval = std::chrono::milliseconds(30),
                            .raw = {"data: {\"a\":", "1}\r\n\r\ndata: 2\n\nda", "ta: 3\n", "\r\n: x\n\n", "data: [DONE]\n\n"}};
  upstream.push(stream);
  RecordingSink sink;
  const RelayOutcome outcome = relay_to(upstream, sink);
  EXPECT_EQ(outcome.status, 200);
  EXPECT_EQ(sink.body, stream.wire());
  for (const std::string& chunk : sink.chunks) {
    EXPECT_TRUE(chunk.ends_with("\n\n") || chunk.ends_with("\n\r\n")) << "a chunk ends an event: " << chunk;
  }
  EXPECT_EQ(outcome.generated, 3);
}

TEST(Relay, UsageInACoalescedReadIsFound) {
  test::FakeUpstream upstream;
  const std::string wire = two_events_and_usage();
  upstream.push(sse_in_one_write(wire));
  RecordingSink sink;
  const RelayOutcome outcome = relay_to(upstream, sink);
  EXPECT_EQ(sink.body, wire);
  ASSERT_TRUE(outcome.usage.has_value());
  EXPECT_EQ(outcome.usage->prompt_tokens, 11);
  EXPECT_EQ(outcome.usage->completion_tokens, 2);
}

TEST(Relay, TheCheckpointTakesEveryEventOfACoalescedRead) {
  test::FakeUpstream upstream;
  const test::Stream stream{.payloads = test::chat_chunks(12)};
  upstream.push(sse_in_one_write(stream.wire()));
  RecordingSink sink;
  RelayResume resume;
  resume.checkpoint.begin_run();
  EXPECT_EQ(relay_to(upstream, sink, &resume).status, 200);
  EXPECT_EQ(sink.body, stream.wire()) << "a first run is forwarded as it came";
  EXPECT_EQ(sink.chunks.size(), 1u);
  EXPECT_EQ(resume.checkpoint.tokens, 12);
  std::string text;
  for (int i = 0; i < 12; ++i) text += "tok" + std::to_string(i) + " ";
  EXPECT_EQ(resume.checkpoint.text, text);
  EXPECT_EQ(resume.checkpoint.finish_reason, "stop");
  EXPECT_TRUE(resume.client_stream_started);
}

TEST(Relay, AResumedRunsRewrittenAndDroppedEventsKeepTheirPlaceInOneChunk) {
  // The second run of a preempted chat stream: its role preamble is dropped,
  // its events get the first run's id, [DONE] and a comment pass as they
  // are; each event as if it came alone (track_event), all in one write.
  const std::vector<std::string> events{chat_event("run2", R"({"role":"assistant"})", "\r\n"),
                                        chat_event("run2", R"({"content":"c"})"), ": keep-alive\n\n",
                                        chat_event("run2", R"({"content":"d"})", "\r\n"), "data: [DONE]\n\n"};
  RelayResume resume;
  resume.client_stream_started = true;
  resume.checkpoint.begin_run();
  for (const char* first : {R"({"role":"assistant"})", R"({"content":"a"})", R"({"content":"b"})"}) {
    track_event(chat_event("run1", first), Route::kChatCompletions, resume.checkpoint);
  }
  resume.checkpoint.begin_run();
  Checkpoint expected_checkpoint = resume.checkpoint;
  std::string expected;
  for (const auto& e : events) {
    EventResult r = track_event(e, Route::kChatCompletions, expected_checkpoint);
    if (r.fate == EventFate::kForward) expected += e;
    if (r.fate == EventFate::kRewritten) expected += r.rewritten;
  }
  ASSERT_NE(expected.find("\"id\":\"run1\""), std::string::npos);
  ASSERT_EQ(expected.find("run2"), std::string::npos);

  test::FakeUpstream upstream;
  upstream.push(sse_in_one_write(joined(events)));
  RecordingSink sink;
  EXPECT_EQ(relay_to(upstream, sink, &resume).status, 200);
  EXPECT_EQ(sink.body, expected);
  EXPECT_EQ(sink.chunks.size(), 1u);
  EXPECT_EQ(resume.checkpoint.text, "abcd");
  EXPECT_EQ(resume.checkpoint.tokens, 4);
  EXPECT_EQ(resume.checkpoint.id, "run1");
}

}  // namespace
}  // namespace arbiter::relay_test
