// The store writer's journal (docs/audit.md, "Nothing lost"): every row is
// written to a memory-mapped segment file before it is queued for the
// store, so a row survives the gateway's crash (the pages are the kernel's
// once written) and a store outage (up to spool_bytes of segments). A
// segment is deleted once the store holds all its rows. Records are framed
// by core/store/journal_format.hpp. Not thread-safe: the writer serialises
// calls. One process per folder (a lock file).
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arbiter::store {

class Journal {
 public:
  // Opens (creating) `dir`, locks it, and reads the records its segments hold.
  static std::expected<std::unique_ptr<Journal>, std::string> open(const std::string& dir, std::size_t max_bytes);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // What the segments held at open: (sequence number, payload), ascending.
  // A payload is a view into its segment, valid until release_through
  // passes it (as is append's).
  const std::vector<std::pair<uint64_t, std::string_view>>& recovered() const { return recovered_; }

  // The payload's copy in the journal; nullopt when the record does not fit
  // in max_bytes of segments (the store has been down long), or a new
  // segment cannot be made.
  std::optional<std::string_view> append(uint64_t seq, std::string_view payload);
  // The store holds every record up to `seq`: segments wholly before it go.
  void release_through(uint64_t seq);
  std::size_t bytes() const { return bytes_; }  // the segments' sizes

 private:
  struct Segment {
    std::string path;
    char* base = nullptr;
    std::size_t size = 0;
    std::size_t used = 0;
    uint64_t last_seq = 0;
  };
  Journal(std::string dir, std::size_t max_bytes, int lock_fd)
      : dir_(std::move(dir)), max_bytes_(max_bytes), lock_fd_(lock_fd) {}
  std::expected<void, std::string> read_existing();
  bool start_segment(uint64_t first_seq, std::size_t at_least);
  static void close(Segment& s);

  std::string dir_;
  std::size_t max_bytes_;
  int lock_fd_;
  std::vector<Segment> segments_;  // oldest first; appends go to the last, once started
  bool appending_ = false;         // the last segment is this run's
  std::size_t bytes_ = 0;
  std::vector<std::pair<uint64_t, std::string_view>> recovered_;
};

}  // namespace arbiter::store
