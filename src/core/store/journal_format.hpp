// The journal's record framing (gateway/store/journal.hpp): a segment is a
// zero-filled file of records, each 8-byte aligned: a 32-bit payload
// length, a 32-bit check (XXH3 of the payload seeded with the sequence
// number; XXH32 of both in journals of earlier versions, still read),
// the 64-bit sequence number, the payload. A zero length ends the segment's
// records; so does a record whose check fails (one a crash cut short).
// Pure: it works on bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace arbiter::store {

inline constexpr std::size_t kRecordHeader = 16;

// The bytes a record of `payload_size` takes, padding included.
constexpr std::size_t record_size(std::size_t payload_size) {
  return (kRecordHeader + payload_size + 7) & ~std::size_t{7};
}

// Writes the record at the start of `at` (at least record_size bytes, zero
// past what it writes): the length last, so a reader never takes a record
// whose payload is not all there.
void write_record(std::span<char> at, uint64_t seq, std::string_view payload);

struct JournalRecord {
  uint64_t seq;
  std::string_view payload;  // into the segment
  std::size_t end;           // where the next record starts
};

// The segment's records in order, up to the first zero length or bad one.
std::vector<JournalRecord> read_records(std::string_view segment);

}  // namespace arbiter::store
