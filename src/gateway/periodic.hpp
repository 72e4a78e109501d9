// A background loop: runs a step every `period` on an executor until
// stop(). The gateway's maintenance work (quota leases, the dynamic quotas,
// the service exchange) is such a loop; a step is a coroutine, so it may
// await I/O, and the next one starts `period` after it ends.
#pragma once

#include <functional>
#include <memory>

#include "http/asio.hpp"

namespace arbiter {

class Periodic {
 public:
  using Step = std::function<Task<void>()>;

  void start(net::any_io_executor executor, std::chrono::steady_clock::duration period, Step step) {
    timer_ = std::make_shared<net::steady_timer>(executor);
    net::co_spawn(executor, run(timer_, period, std::move(step)), net::detached);
  }
  // From any thread; the step under way, if any, finishes.
  void stop() {
    if (timer_) net::post(timer_->get_executor(), [timer = timer_] { timer->cancel(); });
  }

 private:
  static Task<void> run(std::shared_ptr<net::steady_timer> timer, std::chrono::steady_clock::duration period,
                        Step step) {
    for (;;) {
      timer->expires_after(period);
      if (auto [ec] = co_await timer->async_wait(kAsTuple); ec) co_return;  // stopped
      co_await step();
    }
  }

  std::shared_ptr<net::steady_timer> timer_;
};

}  // namespace arbiter
