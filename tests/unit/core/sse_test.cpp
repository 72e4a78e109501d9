#include "core/sse.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace arbiter {
namespace {

std::vector<std::string> feed_all(SseSplitter& s, const std::vector<std::string>& pieces) {
  std::vector<std::string> out;
  for (const auto& p : pieces) {
    for (auto e : s.feed(p)) out.emplace_back(e);
  }
  return out;
}

TEST(SseSplitter, SplitsWholeEventsByteExact) {
  SseSplitter s;
  const auto events = feed_all(s, {"data: {\"a\":1}\n\ndata: {\"b\":2}\n\nda"});
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0], "data: {\"a\":1}\n\n");
  EXPECT_EQ(events[1], "data: {\"b\":2}\n\n");
  EXPECT_EQ(s.pending(), "da");
}

TEST(SseSplitter, FindsTerminatorsSplitAcrossReadsAtEveryOffset) {
  const std::string stream =
      "data: one\n\nevent: x\r\ndata: two\r\n\r\ndata: three\n\ndata: [DONE]\n\n";
  for (std::size_t cut1 = 0; cut1 <= stream.size(); ++cut1) {
    for (std::size_t cut2 = cut1; cut2 <= stream.size(); cut2 += 3) {
      SseSplitter s;
      const auto events = feed_all(
          s, {stream.substr(0, cut1), stream.substr(cut1, cut2 - cut1), stream.substr(cut2)});
      ASSERT_EQ(events.size(), 4u) << cut1 << "," << cut2;
      std::string joined;
      for (const auto& e : events) joined += e;
      EXPECT_EQ(joined, stream);
      EXPECT_TRUE(s.saw_done());
      EXPECT_TRUE(s.pending().empty());
    }
  }
}

TEST(SseSplitter, ByteAtATime) {
  const std::string stream = "data: a\n\n: comment\n\ndata: b\n\n";
  SseSplitter s;
  std::vector<std::string> pieces;
  for (char c : stream) pieces.emplace_back(1, c);
  const auto events = feed_all(s, pieces);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[1], ": comment\n\n");
  EXPECT_FALSE(s.saw_done());
  EXPECT_EQ(s.events(), 3u);
}

TEST(SseSplitter, DoneMarkerDetection) {
  EXPECT_TRUE(is_done_event("data: [DONE]\n\n"));
  EXPECT_TRUE(is_done_event("data:[DONE]\n\n"));
  EXPECT_FALSE(is_done_event("data: {\"x\":\"[DONE]\"}\n\n"));
}

TEST(SseEventData, FirstDataLineWithoutPrefixSpaceOrCr) {
  EXPECT_EQ(event_data("data: {\"a\":1}\n\n"), "{\"a\":1}");
  EXPECT_EQ(event_data("data:{\"a\":1}\r\n\r\n"), "{\"a\":1}");
  EXPECT_EQ(event_data(": keep-alive\nevent: chunk\ndata: x\n\n"), "x");
  EXPECT_EQ(event_data(": comment only\n\n"), "");
  EXPECT_EQ(event_data("data: [DONE]\n\n"), "[DONE]");
}

}  // namespace
}  // namespace arbiter
