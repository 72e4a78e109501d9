// Coalescing (docs/cache.md#coalescing): identical cacheable requests in
// flight at the same time share one engine generation. The first (the
// leader) runs; its answer's bytes go to its client and into its Flight;
// the others (followers) replay the Flight's bytes to their own clients,
// everything so far at once and the rest as it comes. A leader whose
// client leaves keeps its generation running while anyone follows (its
// sink says the client is there, its abort waits): the generation is
// handed to the followers instead of aborted, and aborted when the last
// of them leaves too.
//
// Threads: the leader writes on its connection's thread, each follower
// reads on its own; the Flight's mutex guards the bytes, and a follower
// waiting for more is woken by a cancel posted to its own executor.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/cache/cache_key.hpp"
#include "http/asio.hpp"
#include "http/response_sink.hpp"

namespace arbiter {

class Flight : public std::enable_shared_from_this<Flight> {
 public:
  Flight(std::string scope, std::string model, net::any_io_executor leader)
      : scope_(std::move(scope)), model_(std::move(model)), leader_(std::move(leader)) {}

  // The leader's answer, on its thread.
  void head(unsigned status, std::string_view content_type);
  void append(std::string_view bytes);
  void end(bool complete);
  // Whether anyone follows now.
  bool followed() const;
  // The leader's client left: `abort` (the relay's: close the upstream) runs
  // now when nobody follows, else when the last follower leaves.
  void leader_gone(std::function<void()> abort);
  // The relay no longer holds an upstream: nothing to abort.
  void clear_abort();
  // The answer's bytes, once it ended: moved out when nobody follows.
  std::string take_bytes();
  // How the leader's answer stands.
  struct State {
    unsigned status = 0;
    bool stream = false;
    bool ended = false;
    bool complete = false;
    std::size_t size = 0;
  };
  State state() const;

  // A follower's view: what came after `offset`, and how it stands.
  struct Read {
    bool headed = false;
    unsigned status = 0;
    bool stream = false;
    std::string content_type;
    std::string bytes;
    bool ended = false;
    bool complete = false;
  };
  // When nothing is new and the answer goes on, `wake` is cancelled (on its
  // executor) once something is.
  Read read(std::size_t offset, const std::shared_ptr<net::steady_timer>& wake);
  bool join(std::string_view scope, std::string_view model);  // false: not this one's, or over
  void leave();

 private:
  void wake_all();  // under the mutex

  const std::string scope_;
  const std::string model_;
  const net::any_io_executor leader_;
  mutable std::mutex mutex_;
  std::string bytes_;
  std::string content_type_;
  unsigned status_ = 0;
  bool headed_ = false;
  bool ended_ = false;
  bool complete_ = false;
  int followers_ = 0;
  std::function<void()> pending_abort_;
  uint64_t abort_epoch_ = 0;  // clear_abort()s so far
  std::vector<std::shared_ptr<net::steady_timer>> waiting_;
};

// The leader's sink: its client, and the Flight.
class FlightTee final : public ResponseSink {
 public:
  FlightTee(ResponseSink& client, std::shared_ptr<Flight> flight) : client_(client), flight_(std::move(flight)) {}

  Task<bool> send(http::response<http::string_body>& res) override;
  Task<bool> send(const ResponseHead& head, std::string_view body) override;
  Task<bool> start_stream(const ResponseHead& head) override;
  Task<bool> send_chunk(std::span<const std::string_view> parts) override;
  Task<bool> end_stream() override;
  Task<bool> write_stream(const ResponseHead* head, std::span<const std::string_view> parts, bool last) override;
  // Gone only when nobody follows either.
  bool client_gone() const override { return client_.client_gone() && !flight_->followed(); }
  void set_abort_hook(std::function<void()> hook) override;
  void set_keep_alive(bool keep_alive) override { client_.set_keep_alive(keep_alive); }

 private:
  // A write the client did not take counts as done while someone follows.
  bool went(bool sent) const { return sent || flight_->followed(); }
  void finish(bool complete);

  ResponseSink& client_;
  std::shared_ptr<Flight> flight_;
  bool ended_ = false;
};

// The answers in flight by key (the cache key with the answer's shape).
class Flights {
 public:
  // Joins the flight of `key` when there is one this request may follow.
  std::shared_ptr<Flight> join(const cache::CacheKey& key, std::string_view scope, std::string_view model);
  void lead(const cache::CacheKey& key, std::shared_ptr<Flight> flight);
  void remove(const cache::CacheKey& key, const Flight* flight);

 private:
  std::mutex mutex_;
  std::unordered_map<cache::CacheKey, std::shared_ptr<Flight>, cache::CacheKeyHash> flights_;
};

// A follower's part: replays `flight` to `sink` until it ends. False when
// the leader's answer is not one to follow (not a 200, or a whole answer
// that did not complete): the follower then runs on its own, nothing sent.
Task<bool> follow(std::shared_ptr<Flight> flight, ResponseSink& sink, const ResponseHead& head_template,
                  int& status);

}  // namespace arbiter
