// ClientConnection::send_chunk on the wire: the parts of one call are one
// HTTP chunk, whether they go out gathered in place or copied into one
// buffer (many parts), and nothing at all is written for no bytes (an empty
// chunk would end the body); write_stream puts a head, a chunk and the end
// in one call.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../gateway/loopback.hpp"

namespace arbiter {
namespace {

using testing::Loopback;

// Runs `write` (a coroutine over the connection) on a loopback connection;
// returns all bytes on the wire.
template <class Write>
std::string on_the_wire(Write write) {
  net::io_context ioc;
  Loopback loop(ioc);
  bool done = false;
  net::co_spawn(ioc, [&]() -> Task<void> {
    co_await write(loop.conn());
    done = true;
    ioc.stop();
  }, net::detached);
  ioc.run_for(std::chrono::seconds(5));
  EXPECT_TRUE(done);
  return loop.received();
}

// Streams the head, then one send_chunk per entry of `chunks`; returns the
// body bytes on the wire (after the head).
std::string stream(const std::vector<std::vector<std::string_view>>& chunks) {
  const std::string wire = on_the_wire([&](ClientConnection& conn) -> Task<void> {
    const ResponseHead head{.status = 200, .content_type = "text/event-stream"};
    EXPECT_TRUE(co_await conn.start_stream(head));
    for (const auto& parts : chunks) EXPECT_TRUE(co_await conn.send_chunk(parts));
    EXPECT_TRUE(co_await conn.end_stream());
  });
  const std::size_t body = wire.find("\r\n\r\n");
  return body == std::string::npos ? wire : wire.substr(body + 4);
}

TEST(ChunkFraming, ThePartsOfOneCallAreOneChunk) {
  const std::vector<std::string_view> parts{"data: 1\n\n", "data: 2\n\ndata: 3\n\n", "data: 4\n\n"};
  EXPECT_EQ(stream({parts}), "24\r\ndata: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\n\r\n0\r\n\r\n");
}

TEST(ChunkFraming, ManyPartsAreCopiedIntoOneChunk) {
  std::vector<std::string> events;
  for (int i = 0; i < 40; ++i) events.push_back("data: " + std::to_string(i % 10) + "\n\n");
  const std::vector<std::string_view> parts(events.begin(), events.end());
  std::string joined;
  for (const auto& e : events) joined += e;
  EXPECT_EQ(stream({parts, parts}), "168\r\n" + joined + "\r\n168\r\n" + joined + "\r\n0\r\n\r\n");
}

TEST(ChunkFraming, NoBytesNoChunk) {
  EXPECT_EQ(stream({{}, {""}, {"data: x\n\n"}}), "9\r\ndata: x\n\n\r\n0\r\n\r\n");
}

TEST(ChunkFraming, AStreamInOneWriteIsHeadChunkAndEnd) {
  const std::string wire = on_the_wire([](ClientConnection& conn) -> Task<void> {
    const ResponseHead head{.status = 200, .content_type = "text/event-stream"};
    const std::vector<std::string_view> parts{"data: 1\n\n", "data: [DONE]\n\n"};
    EXPECT_TRUE(co_await conn.write_stream(&head, parts, true));
  });
  EXPECT_TRUE(wire.starts_with("HTTP/1.1 200 OK\r\n")) << wire;
  EXPECT_NE(wire.find("Transfer-Encoding: chunked\r\n"), std::string::npos) << wire;
  EXPECT_TRUE(wire.ends_with("\r\n\r\n17\r\ndata: 1\n\ndata: [DONE]\n\n\r\n0\r\n\r\n")) << wire;
}

}  // namespace
}  // namespace arbiter
