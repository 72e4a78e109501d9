// DiscardSink on its own: what a shadow's sink counts and how abandoning
// it stops the work. (The leader's sink of a coalesced answer, which
// copies what its client gets: tests/unit/gateway/flight_test.cpp.)
#include <gtest/gtest.h>

#include "../gateway/recording_sink.hpp"
#include "http/discard_sink.hpp"

namespace arbiter {
namespace {

using testing::RecordingSink;

// Runs `t` to completion on a fresh io_context.
template <class T>
T run(Task<T> t) {
  net::io_context ioc;
  T result{};
  net::co_spawn(ioc, [&]() -> Task<void> { result = co_await std::move(t); }, net::detached);
  ioc.run();
  return result;
}

Task<bool> stream_three(ResponseSink& sink) {
  const ResponseHead head{.status = 200, .content_type = "text/event-stream"};
  if (!co_await sink.start_stream(head)) co_return false;
  for (const std::string_view event : {"data: 1\n\n", "data: 2\n\n", "data: 3\n\n"}) {
    if (!co_await sink.send_chunk(std::span(&event, 1))) co_return false;
  }
  co_return co_await sink.end_stream();
}

TEST(DiscardSink, CountsWhatItDropsAndStopsWhenAbandoned) {
  DiscardSink sink;
  EXPECT_TRUE(run(stream_three(sink)));
  EXPECT_EQ(sink.status(), 200u);
  EXPECT_EQ(sink.body_bytes(), 27u);
  EXPECT_TRUE(sink.ended());
  bool aborted = false;
  DiscardSink abandoned;
  abandoned.set_abort_hook([&] { aborted = true; });
  abandoned.abandon();
  EXPECT_TRUE(aborted);
  EXPECT_TRUE(abandoned.client_gone());
  EXPECT_FALSE(run(stream_three(abandoned)));
}

}  // namespace
}  // namespace arbiter
