#include "http/chunk_write.hpp"

#include <charconv>

namespace arbiter {

void frame_chunk_write(std::string_view head, std::span<const std::string_view> parts, bool last, bool flat,
                       std::string& copy, ChunkWrite& out, bool chunked) {
  static constexpr std::string_view kCrlf = "\r\n";
  static constexpr std::string_view kLastChunk = "0\r\n\r\n";
  out.count = 0;
  out.body_bytes = 0;
  for (const std::string_view part : parts) out.body_bytes += part.size();
  std::string_view size;
  if (out.body_bytes > 0 && chunked) {
    char* end = std::to_chars(out.size_line.data(), out.size_line.data() + 16, out.body_bytes, 16).ptr;
    *end++ = '\r';
    *end++ = '\n';
    size = std::string_view(out.size_line.data(), static_cast<std::size_t>(end - out.size_line.data()));
  }
  const std::string_view tail = last && chunked ? kLastChunk : std::string_view();
  const std::string_view crlf = chunked ? kCrlf : std::string_view();
  if (flat || parts.size() > ChunkWrite::kMaxGathered) {
    copy.assign(head);
    if (out.body_bytes > 0) {
      copy.append(size);
      for (const std::string_view part : parts) copy.append(part);
      copy.append(crlf);
    }
    copy.append(tail);
    if (!copy.empty()) out.buffers[out.count++] = net::buffer(copy);
    return;
  }
  if (!head.empty()) out.buffers[out.count++] = net::buffer(head);
  if (out.body_bytes > 0) {
    if (chunked) out.buffers[out.count++] = net::buffer(size);
    for (const std::string_view part : parts) {
      if (!part.empty()) out.buffers[out.count++] = net::buffer(part);
    }
    if (chunked) out.buffers[out.count++] = net::buffer(kCrlf);
  }
  if (!tail.empty()) out.buffers[out.count++] = net::buffer(tail);
}

}  // namespace arbiter
