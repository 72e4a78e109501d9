#include "core/store/journal_format.hpp"

#include <atomic>
#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace arbiter::store {

namespace {

// One pass of XXH3 over the payload, seeded with the sequence number.
uint32_t check_of(uint64_t seq, std::string_view payload) {
  return static_cast<uint32_t>(XXH3_64bits_withSeed(payload.data(), payload.size(), seq ^ 0x4a524e4c));
}

// The check journals written before it (XXH32, streamed over the sequence
// number and the payload): a journal left by an earlier version still
// replays after an upgrade.
uint32_t legacy_check_of(uint64_t seq, std::string_view payload) {
  XXH32_state_t state;
  XXH32_reset(&state, 0x4a524e4c);  // "JRNL"
  XXH32_update(&state, &seq, sizeof seq);
  XXH32_update(&state, payload.data(), payload.size());
  return XXH32_digest(&state);
}

}  // namespace

void write_record(std::span<char> at, uint64_t seq, std::string_view payload) {
  const auto length = static_cast<uint32_t>(payload.size());
  const uint32_t check = check_of(seq, payload);
  std::memcpy(at.data() + 8, &seq, sizeof seq);
  std::memcpy(at.data() + kRecordHeader, payload.data(), payload.size());
  std::memcpy(at.data() + 4, &check, sizeof check);
  // The length last: a record is there once its length is.
  std::atomic_thread_fence(std::memory_order_release);
  std::memcpy(at.data(), &length, sizeof length);
}

std::vector<JournalRecord> read_records(std::string_view segment) {
  std::vector<JournalRecord> out;
  std::size_t at = 0;
  while (at + kRecordHeader <= segment.size()) {
    uint32_t length = 0, check = 0;
    uint64_t seq = 0;
    std::memcpy(&length, segment.data() + at, sizeof length);
    std::memcpy(&check, segment.data() + at + 4, sizeof check);
    std::memcpy(&seq, segment.data() + at + 8, sizeof seq);
    if (length == 0 || at + record_size(length) > segment.size()) break;
    const std::string_view payload = segment.substr(at + kRecordHeader, length);
    if (check_of(seq, payload) != check && legacy_check_of(seq, payload) != check) break;
    at += record_size(length);
    out.push_back({.seq = seq, .payload = payload, .end = at});
  }
  return out;
}

}  // namespace arbiter::store
