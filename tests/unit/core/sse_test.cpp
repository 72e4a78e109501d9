#include "core/sse.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace arbiter {
namespace {

// Feeds each piece as the relay does: from a read buffer that the next read
// overwrites, the completed events copied out before that, release() after.
std::vector<std::string> feed_all(SseFramer& s, const std::vector<std::string>& pieces) {
  std::vector<std::string> out;
  std::string read;
  for (const auto& p : pieces) {
    read = p;
    s.feed(read, [&out](std::string_view e) { out.emplace_back(e); });
    read.assign(read.size(), '#');  // the buffer's next read
    s.release();
  }
  return out;
}

bool within(std::string_view inner, std::string_view outer) {
  return inner.data() >= outer.data() && inner.data() + inner.size() <= outer.data() + outer.size();
}

TEST(SseFramer, EventsOfOneReadAreViewsIntoIt) {
  SseFramer s;
  const std::string read = "data: {\"a\":1}\n\ndata: {\"b\":2}\n\nda";
  std::vector<std::string_view> events;
  s.feed(read, [&events](std::string_view e) { events.push_back(e); });
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0], "data: {\"a\":1}\n\n");
  EXPECT_EQ(events[1], "data: {\"b\":2}\n\n");
  // Not copied: the relay writes the read's own bytes, one run of them.
  EXPECT_EQ(events[0].data(), read.data());
  EXPECT_EQ(events[1].data(), events[0].data() + events[0].size());
  EXPECT_EQ(s.pending(), "da");
  EXPECT_EQ(s.events(), 2u);
}

TEST(SseFramer, FindsTerminatorsSplitAcrossReadsAtEveryOffset) {
  const std::string stream =
      "data: one\n\nevent: x\r\ndata: two\r\n\r\ndata: three\n\r\n: c\n\ndata: [DONE]\n\n";
  const std::vector<std::string> expected{"data: one\n\n", "event: x\r\ndata: two\r\n\r\n", "data: three\n\r\n",
                                          ": c\n\n", "data: [DONE]\n\n"};
  for (std::size_t cut1 = 0; cut1 <= stream.size(); ++cut1) {
    for (std::size_t cut2 = cut1; cut2 <= stream.size(); ++cut2) {
      SseFramer s;
      const auto events = feed_all(
          s, {stream.substr(0, cut1), stream.substr(cut1, cut2 - cut1), stream.substr(cut2)});
      ASSERT_EQ(events, expected) << cut1 << "," << cut2;
      EXPECT_TRUE(s.saw_done());
      EXPECT_TRUE(s.pending().empty());
    }
  }
}

TEST(SseFramer, ALoneCrOrCrCrIsNoEventEnd) {
  // As before the framer: a blank line is "\n" then an optional "\r" then "\n".
  SseFramer s;
  const auto events = feed_all(s, {"data: a\n\r\rdata: b\r\r", "\n", "x\n\n"});
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0], "data: a\n\r\rdata: b\r\r\nx\n\n");
}

TEST(SseFramer, ByteAtATime) {
  const std::string stream = "data: a\r\n\r\n: comment\n\ndata: b\n\n";
  SseFramer s;
  std::vector<std::string> pieces;
  for (char c : stream) pieces.emplace_back(1, c);
  const auto events = feed_all(s, pieces);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0], "data: a\r\n\r\n");
  EXPECT_EQ(events[1], ": comment\n\n");
  EXPECT_FALSE(s.saw_done());
  EXPECT_EQ(s.events(), 3u);
}

TEST(SseFramer, EventsSplitInSeveralPiecesOfOneReadStayValidUntilRelease) {
  // A chunked answer: one read holds several chunk bodies, each a piece, and
  // two of them end an event the one before began. Every view must still
  // hold its event when the read's chunk is written, after the last piece.
  const std::vector<std::string> pieces{"data: 1\n\ndata: tw", "o\n\ndata: thr", "ee\n\ndata: 4", "\n\n"};
  SseFramer s;
  std::vector<std::string_view> views;
  for (const auto& p : pieces) s.feed(p, [&views](std::string_view e) { views.push_back(e); });
  ASSERT_EQ(views.size(), 4u);
  EXPECT_EQ(views[0], "data: 1\n\n");
  EXPECT_EQ(views[1], "data: two\n\n");
  EXPECT_EQ(views[2], "data: three\n\n");
  EXPECT_EQ(views[3], "data: 4\n\n");
  EXPECT_TRUE(within(views[0], pieces[0]));
  s.release();
  // Held storage is reused after release, without a new allocation.
  const char* held = views[1].data();
  std::vector<std::string_view> next;
  s.feed("data: 5", [](std::string_view) {});
  s.feed("\n\n", [&next](std::string_view e) { next.push_back(e); });
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0], "data: 5\n\n");
  EXPECT_EQ(next[0].data(), held);
}

TEST(SseFramer, DoneMarkerDetection) {
  EXPECT_TRUE(is_done_event("data: [DONE]\n\n"));
  EXPECT_TRUE(is_done_event("data:[DONE]\n\n"));
  EXPECT_FALSE(is_done_event("data: {\"x\":\"[DONE]\"}\n\n"));
}

TEST(SseEventData, FirstDataAndEventLinesWithoutPrefixSpaceOrCr) {
  EXPECT_EQ(event_data("data: {\"a\":1}\n\n"), "{\"a\":1}");
  EXPECT_EQ(event_data("data:{\"a\":1}\r\n\r\n"), "{\"a\":1}");
  EXPECT_EQ(event_data(": keep-alive\nevent: chunk\ndata: x\n\n"), "x");
  EXPECT_EQ(event_data(": comment only\n\n"), "");
  EXPECT_EQ(event_data("data: [DONE]\n\n"), "[DONE]");
  EXPECT_EQ(event_name("event: response.output_text.delta\ndata: {}\n\n"), "response.output_text.delta");
  EXPECT_EQ(event_name(": c\nevent:chunk\r\ndata: x\r\n\r\n"), "chunk");
  EXPECT_EQ(event_name("data: {\"event\":1}\n\n"), "");
}

}  // namespace
}  // namespace arbiter
