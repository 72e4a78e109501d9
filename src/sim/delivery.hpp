// The hand-off between an engine's strand, which learns of new tokens at the
// end of each step, and the request coroutine on its connection's strand,
// which writes them out. The engine side only stores atomics and, when no
// wake-up is already on its way, posts one timer cancel to the request's
// strand; tokens that pile up meanwhile go out in one write.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "http/asio.hpp"

namespace arbiter::sim {

// One answer's progress: one engine request (a request for n answers runs n).
struct AnswerProgress {
  std::atomic<std::uint32_t> tokens{0};  // output tokens generated so far
  std::atomic<bool> finished{false};     // every token generated (none: refused); stored after `tokens`
  bool finish_length = false;            // finish_reason "length" (for the metrics; set before submit)
};

struct Delivery {
  // `ex`: the request coroutine's executor (its connection's strand).
  Delivery(const net::any_io_executor& ex, bool every_token, std::uint32_t answers = 1)
      : timer(ex, net::steady_timer::time_point::max()),
        answers(answers),
        progress(std::make_unique<AnswerProgress[]>(answers)),
        every_token(every_token) {}

  AnswerProgress& answer(std::uint32_t i) { return progress[i]; }
  // Every answer has ended (finished or refused).
  bool all_finished() const {
    for (std::uint32_t i = 0; i < answers; ++i) {
      if (!progress[i].finished.load(std::memory_order_acquire)) return false;
    }
    return true;
  }

  net::steady_timer timer;                // the request waits here; a cancel wakes it
  const std::uint32_t answers;
  std::unique_ptr<AnswerProgress[]> progress;  // one per answer
  std::atomic<bool> stopped{false};       // the server stops: give up without answering
  std::atomic<bool> wake_pending{false};  // a wake-up is posted and not yet seen
  const bool every_token;                 // wake on each step's token, or only at the end
};

// Wakes the request waiting on `d` (any thread). At most one wake-up is in
// flight. Both sides swap wake_pending (acquire-release), so a request that
// takes the flag back sees every store made before the wake-up it replaces.
inline void wake(const std::shared_ptr<Delivery>& d) {
  if (d->wake_pending.exchange(true, std::memory_order_acq_rel)) return;
  net::post(d->timer.get_executor(), [d] { d->timer.cancel(); });
}

// The request side, before it reads tokens/finished/stopped: re-arms wake().
inline void take_wake(Delivery& d) { d.wake_pending.exchange(false, std::memory_order_acq_rel); }

// The request side, after reading and finding nothing new: waits until woken
// (a stale wake-up may end it early; the caller reads again).
inline Task<void> wait_for_wake(Delivery& d) {
  d.timer.expires_at(net::steady_timer::time_point::max());
  co_await d.timer.async_wait(kAsTuple);
}

}  // namespace arbiter::sim
