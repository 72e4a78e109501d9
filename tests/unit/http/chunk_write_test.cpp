// frame_chunk_write: one write of a chunked stream holds the head, one chunk
// and the last chunk, whichever are given, in that order; gathered where
// the bytes lie, or copied into one buffer for TLS and for many parts.
#include "http/chunk_write.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace arbiter {
namespace {

std::string bytes_of(const ChunkWrite& w) {
  std::string out;
  for (const net::const_buffer& b : w.span()) out.append(static_cast<const char*>(b.data()), b.size());
  return out;
}

TEST(ChunkWrite, HeadChunkAndEndAreOneWriteInOrder) {
  const std::vector<std::string_view> parts{"data: 1\n\n", "data: 2\n\n"};
  const std::string expected = "HEAD\r\n\r\n12\r\ndata: 1\n\ndata: 2\n\n\r\n0\r\n\r\n";
  std::string copy;
  ChunkWrite w;
  frame_chunk_write("HEAD\r\n\r\n", parts, true, false, copy, w);
  EXPECT_EQ(bytes_of(w), expected);
  EXPECT_EQ(w.count, 6u) << "head, size line, two parts, CRLF, last chunk: gathered in place";
  EXPECT_EQ(w.body_bytes, 18u);
  frame_chunk_write("HEAD\r\n\r\n", parts, true, true, copy, w);
  EXPECT_EQ(bytes_of(w), expected) << "TLS: the same bytes";
  EXPECT_EQ(w.count, 1u) << "TLS: one buffer, one record";
}

TEST(ChunkWrite, ManyPartsAreCopied) {
  std::vector<std::string_view> parts(ChunkWrite::kMaxGathered + 1, "x");
  std::string copy;
  ChunkWrite w;
  frame_chunk_write({}, parts, false, false, copy, w);
  EXPECT_EQ(bytes_of(w), "11\r\n" + std::string(ChunkWrite::kMaxGathered + 1, 'x') + "\r\n");
  EXPECT_EQ(w.count, 1u);
}

TEST(ChunkWrite, NoBytesNoChunk) {
  const std::vector<std::string_view> empty{"", ""};
  std::string copy;
  ChunkWrite w;
  frame_chunk_write({}, empty, false, false, copy, w);
  EXPECT_EQ(w.count, 0u) << "an empty chunk would end the body";
  frame_chunk_write({}, empty, true, false, copy, w);
  EXPECT_EQ(bytes_of(w), "0\r\n\r\n");
  frame_chunk_write("HEAD\r\n\r\n", {}, false, true, copy, w);
  EXPECT_EQ(bytes_of(w), "HEAD\r\n\r\n");
}

// To an HTTP/1.0 client (no chunks): the parts as they are, and nothing at
// the end, whose mark is the connection closing.
TEST(ChunkWrite, UnchunkedIsThePartsAloneGatheredOrCopied) {
  const std::vector<std::string_view> parts{"data: 1\n\n", "data: 2\n\n"};
  std::string copy;
  ChunkWrite w;
  frame_chunk_write("HEAD\r\n\r\n", parts, true, false, copy, w, /*chunked=*/false);
  EXPECT_EQ(bytes_of(w), "HEAD\r\n\r\ndata: 1\n\ndata: 2\n\n");
  EXPECT_EQ(w.count, 3u);
  EXPECT_EQ(w.body_bytes, 18u);
  frame_chunk_write("HEAD\r\n\r\n", parts, true, true, copy, w, /*chunked=*/false);
  EXPECT_EQ(bytes_of(w), "HEAD\r\n\r\ndata: 1\n\ndata: 2\n\n");
  EXPECT_EQ(w.count, 1u);
  frame_chunk_write({}, {}, true, false, copy, w, /*chunked=*/false);
  EXPECT_EQ(w.count, 0u) << "no last chunk";
}

}  // namespace
}  // namespace arbiter
