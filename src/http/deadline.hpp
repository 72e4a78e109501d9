// I/O deadlines without a timer per operation. Before an operation the
// coroutine arms its connection's Deadline ("close this socket at T"), one
// atomic store; afterwards it disarms it. The server's sweeper ticks every
// kDeadlineTick and, on the connection's strand, closes a socket whose
// deadline passed, so the pending operation fails at once (this works for
// Beast's composed operations too). Precision is one tick, fine for
// timeouts of hundreds of milliseconds and more; a per-operation timer cost
// two coroutine frames and a timerfd update per I/O (see docs/benchmarks.md).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>

#include "http/asio.hpp"

namespace arbiter {

inline constexpr std::chrono::milliseconds kDeadlineTick{25};

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  // Strand only. Until disarm(), `target` is closed once `limit` has passed.
  void arm(tcp::socket& target, Clock::duration limit) {
    target_ = &target;
    fired_ = false;
    deadline_.store((Clock::now() + limit).time_since_epoch().count(), std::memory_order_relaxed);
  }

  // Strand only. True when the deadline fired (and closed the socket) since
  // arm().
  bool disarm() {
    deadline_.store(kNever, std::memory_order_relaxed);
    target_ = nullptr;
    return fired_;
  }

  // Any thread (the sweeper): is it worth posting expire() to the strand?
  bool due(Clock::time_point now) const {
    return deadline_.load(std::memory_order_relaxed) <= now.time_since_epoch().count();
  }

  // Strand only: closes the target if the deadline (which may have moved
  // since due() was asked) has really passed.
  void expire(Clock::time_point now) {
    if (!target_ || !due(now)) return;
    fired_ = true;
    beast::error_code ignored;
    target_->close(ignored);
    deadline_.store(kNever, std::memory_order_relaxed);
  }

 private:
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  std::atomic<int64_t> deadline_{kNever};  // steady_clock ticks; read by the sweeper
  tcp::socket* target_ = nullptr;          // socket to close; strand only
  bool fired_ = false;                     // strand only
};

}  // namespace arbiter
