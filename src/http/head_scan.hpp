// A strict, allocation-free scan of a complete HTTP/1.1 message head, for
// the hot path. Beast's parser validates and dispatches byte by byte (about
// 3k instructions per head, the largest item left in the request path's
// profile); this scan checks the same grammar a vector at a time.
//
// It accepts only the common, unambiguous form: HTTP/1.1, every field
// `name: value` on one line ended by CRLF, Content-Length framing. It
// declines everything else (chunked or close-delimited bodies, obs-fold,
// bare LF, a head or body not complete in the bytes given, Expect, Upgrade,
// Proxy-Connection, a Connection other than `close` or `keep-alive`,
// 1xx/204/304, duplicate framing fields, more than kMaxScannedFields
// fields) and the caller hands the same bytes to Beast's parser, which
// decides as before. A declined message is never an error here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "http/asio.hpp"

namespace arbiter {

inline constexpr std::size_t kMaxScannedFields = 32;

struct HeadField {
  std::string_view name;   // as sent
  std::string_view value;  // without leading or trailing whitespace
};

// Views into the scanned bytes.
struct ScannedHead {
  ScannedHead() {}  // the field slots stay unconstructed until scanned (1 KiB not cleared per head)
  ScannedHead(const ScannedHead&) = delete;
  ScannedHead& operator=(const ScannedHead&) = delete;

  std::string_view start_line;  // without its CRLF
  std::size_t size = 0;         // bytes of the head, the empty line included
  std::size_t field_count = 0;
  union {
    HeadField field_storage[kMaxScannedFields];  // [0, field_count) constructed
  };

  std::span<const HeadField> fields() const { return {field_storage, field_count}; }
};

// A head that ends within the first `limit` bytes of `bytes`, in the strict
// form above. False: declined.
bool scan_head(std::string_view bytes, std::size_t limit, ScannedHead& out);

// A whole request: head and body within their limits and all in `bytes`
// (else `awaiting` may say how many bytes it needs).
struct ScannedRequest {
  ScannedHead head;
  http::verb method = http::verb::unknown;
  std::string_view target;
  std::string_view body;
  std::size_t size = 0;     // head and body
  bool keep_alive = true;   // no `Connection: close`
  // Declined only because the body has not all arrived (the head is
  // accepted and the length within the limit): the bytes the whole request
  // takes, to read before scanning again. 0 otherwise.
  std::size_t awaiting = 0;
};
// How large a request's body may be: `bytes`, or `large_bytes` for a
// target under `large_prefix` (file uploads; none when the prefix is empty).
struct BodyLimits {
  std::size_t bytes = 0;
  std::string_view large_prefix;
  std::size_t large_bytes = 0;
  std::size_t for_target(std::string_view target) const {
    return !large_prefix.empty() && target.starts_with(large_prefix) ? large_bytes : bytes;
  }
};
bool scan_request(std::string_view bytes, std::size_t header_limit, const BodyLimits& body_limits,
                  ScannedRequest& out);
inline bool scan_request(std::string_view bytes, std::size_t header_limit, std::size_t body_limit,
                         ScannedRequest& out) {
  return scan_request(bytes, header_limit, BodyLimits{.bytes = body_limit}, out);
}

// A response head with a Content-Length body (not necessarily arrived yet).
struct ScannedResponse {
  ScannedHead head;
  unsigned status = 0;
  uint64_t content_length = 0;
  bool keep_alive = true;
};
bool scan_response(std::string_view bytes, std::size_t header_limit, ScannedResponse& out);

// `s` equals `lower` (lowercase ASCII letters, digits and '-') in any case.
// Exact for field names and values an HTTP parser accepted (no control
// bytes), which is what it is used on: it compares eight bytes at a time.
// Inline: the request path compares a dozen names per request.
inline bool lower_equals(std::string_view s, std::string_view lower) {
  if (s.size() != lower.size()) return false;
  // OR-ing 0x20 lowercases A-Z and leaves a-z, 0-9 and '-' as they are;
  // the only other bytes it maps onto those are control bytes.
  constexpr uint64_t kLower = 0x2020202020202020ULL;
  auto load = [](const char* p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  std::size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    if ((load(s.data() + i) | kLower) != load(lower.data() + i)) return false;
  }
  for (; i < s.size(); ++i) {
    if ((s[i] | 0x20) != lower[i]) return false;
  }
  return true;
}

}  // namespace arbiter
