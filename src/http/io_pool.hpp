// One io_context per thread, each told it runs on one thread (so Asio skips
// most locking), nginx-style. Connections are spread round-robin; all of a
// connection's work, and the upstream connections it borrows, stay on its
// thread, so no strand is needed and no handler hops between threads.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <thread>
#include <vector>

#include "http/asio.hpp"

namespace arbiter {

class IoPool {
 public:
  explicit IoPool(std::size_t threads);

  std::size_t size() const { return contexts_.size(); }
  net::io_context& context(std::size_t i) { return *contexts_[i]; }
  // The next context, round-robin (for a new connection).
  net::io_context& next();

  // Runs every context, context 0 on the calling thread; returns when all
  // have stopped.
  void run();
  void stop();

  // Index of the context the calling thread runs (0 outside the pool).
  static std::size_t current_index();

 private:
  std::vector<std::unique_ptr<net::io_context>> contexts_;
  std::atomic<std::size_t> next_{0};
};

}  // namespace arbiter
