// Coalescing's parts (gateway/stages/cache/flight.hpp): the leader's sink
// copies every byte its client gets into the Flight and ends it once; with
// nobody following, a leaving client aborts the work at once; followed, the
// work goes on and is aborted when the last follower leaves; a follower
// replays the leader's answer from its start, then live; it does not
// follow a leader refused.
#include "gateway/stages/cache/flight.hpp"

#include <gtest/gtest.h>

#include "recording_sink.hpp"

namespace arbiter {
namespace {

using testing::RecordingSink;

Task<bool> stream_events(ResponseSink& sink, std::vector<std::string_view> events) {
  const ResponseHead head{.status = 200, .content_type = "text/event-stream"};
  if (!co_await sink.start_stream(head)) co_return false;
  for (const std::string_view& event : events) {
    if (!co_await sink.send_chunk(std::span(&event, 1))) co_return false;
  }
  co_return co_await sink.end_stream();
}

bool run_stream(ResponseSink& sink, net::io_context& ioc, std::vector<std::string_view> events) {
  bool result = false;
  net::co_spawn(ioc, [&]() -> Task<void> { result = co_await stream_events(sink, events); }, net::detached);
  ioc.run();
  ioc.restart();
  return result;
}

TEST(Flight, TheLeadersSinkCopiesWhatItsClientGetsAndEndsOnce) {
  net::io_context ioc;
  RecordingSink client;
  auto flight = std::make_shared<Flight>("tenant:a", "m1", ioc.get_executor());
  FlightTee tee(client, flight);
  EXPECT_TRUE(run_stream(tee, ioc, {"data: 1\n\n", "data: 2\n\n", "data: [DONE]\n\n"}));
  const Flight::State s = flight->state();
  EXPECT_TRUE(s.ended && s.complete && s.stream);
  EXPECT_EQ(s.status, 200u);
  EXPECT_EQ(flight->take_bytes(), client.body);
}

TEST(Flight, WithNobodyFollowingALeavingClientAbortsTheWorkAtOnce) {
  net::io_context ioc;
  RecordingSink client;
  client.leave_after_writes = 1;
  auto flight = std::make_shared<Flight>("tenant:a", "m1", ioc.get_executor());
  FlightTee tee(client, flight);
  bool aborted = false;
  tee.set_abort_hook([&] { aborted = true; });
  EXPECT_FALSE(run_stream(tee, ioc, {"data: 1\n\n", "data: 2\n\n"}));
  EXPECT_TRUE(aborted);
  EXPECT_TRUE(tee.client_gone());
  EXPECT_TRUE(flight->state().ended);
  EXPECT_FALSE(flight->state().complete);
}

TEST(Flight, AFollowedLeaderGoesOnWithoutItsClientUntilTheLastFollowerLeaves) {
  net::io_context ioc;
  RecordingSink client;
  client.leave_after_writes = 1;
  auto flight = std::make_shared<Flight>("tenant:a", "m1", ioc.get_executor());
  ASSERT_TRUE(flight->join("tenant:a", "m1"));
  FlightTee tee(client, flight);
  bool aborted = false;
  tee.set_abort_hook([&] { aborted = true; });
  EXPECT_TRUE(run_stream(tee, ioc, {"data: 1\n\n", "data: 2\n\n", "data: [DONE]\n\n"}));
  EXPECT_FALSE(aborted);  // handed to the follower
  EXPECT_FALSE(tee.client_gone());
  EXPECT_TRUE(flight->state().complete);
  EXPECT_EQ(client.body, "data: 1\n\n");  // its client got what came before it left
  flight->leave();
  ioc.run();
  EXPECT_TRUE(aborted);  // nobody wants it now
  // A relay that let go first (hook cleared) is not aborted later.
  auto second = std::make_shared<Flight>("tenant:a", "m1", ioc.get_executor());
  ASSERT_TRUE(second->join("tenant:a", "m1"));
  bool late = false;
  second->leader_gone([&] { late = true; });
  second->clear_abort();
  second->leave();
  ioc.restart();
  ioc.run();
  EXPECT_FALSE(late);
}

TEST(Flight, AFollowerReplaysTheAnswerFromItsStartThenLive) {
  net::io_context ioc;
  RecordingSink client, follower_sink;
  auto flight = std::make_shared<Flight>("tenant:a", "m1", ioc.get_executor());
  FlightTee tee(client, flight);
  ASSERT_TRUE(flight->join("tenant:a", "m1"));
  EXPECT_FALSE(flight->join("tenant:b", "m1"));  // another scope never follows
  int status = 0;
  bool followed = false;
  net::co_spawn(ioc, [&]() -> Task<void> {
    const ResponseHead head{.status = 200, .content_type = "text/event-stream"};
    co_await tee.start_stream(head);
    const std::string_view first = "data: 1\n\n";
    co_await tee.send_chunk(std::span(&first, 1));
    // The follower starts now: it gets the first event at once.
    net::co_spawn(ioc, [&]() -> Task<void> {
      followed = co_await follow(flight, follower_sink, ResponseHead{.status = 200}, status);
    }, net::detached);
    net::steady_timer later(ioc, std::chrono::milliseconds(20));
    co_await later.async_wait(kAsTuple);
    for (const std::string_view event : {std::string_view("data: 2\n\n"), std::string_view("data: [DONE]\n\n")}) {
      co_await tee.send_chunk(std::span(&event, 1));
    }
    co_await tee.end_stream();
  }, net::detached);
  ioc.run();
  EXPECT_TRUE(followed);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(follower_sink.body, client.body);
  EXPECT_EQ(follower_sink.content_type, "text/event-stream");
  EXPECT_TRUE(follower_sink.ended);
  EXPECT_GE(follower_sink.chunks.size(), 2u);  // what was there, then the rest as it came
  EXPECT_FALSE(flight->followed());
}

TEST(Flight, ALeaderRefusedIsNotFollowed) {
  net::io_context ioc;
  RecordingSink client, follower_sink;
  auto flight = std::make_shared<Flight>("tenant:a", "m1", ioc.get_executor());
  FlightTee tee(client, flight);
  ASSERT_TRUE(flight->join("tenant:a", "m1"));
  int status = 0;
  bool followed = true;
  net::co_spawn(ioc, [&]() -> Task<void> {
    co_await tee.send(ResponseHead{.status = 429, .content_type = "application/json"}, "{\"error\":{}}");
    followed = co_await follow(flight, follower_sink, ResponseHead{.status = 200}, status);
  }, net::detached);
  ioc.run();
  EXPECT_FALSE(followed);
  EXPECT_TRUE(follower_sink.body.empty());
  EXPECT_FALSE(flight->join("tenant:a", "m1"));  // a refused flight takes no one else
}

}  // namespace
}  // namespace arbiter
