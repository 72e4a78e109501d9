#include "sim/engine_driver.hpp"

#include <chrono>

namespace arbiter::sim {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// How far real time may run ahead of the model's timeline before the
// timeline restarts at now (after idling, or when the process was not
// scheduled for a while: no burst of catch-up steps).
constexpr Clock::duration kMaxLag = std::chrono::milliseconds(5);

}  // namespace

EngineDriver::EngineDriver(net::io_context& ioc, const engine::EngineConfig& config, SimMetrics& metrics)
    : config_(config),
      metrics_(metrics),
      strand_(net::make_strand(ioc)),
      engine_(config),
      idle_timer_(strand_),
      step_timer_(strand_),
      done_timer_(strand_, net::steady_timer::time_point::max()) {}

void EngineDriver::start() {
  net::dispatch(strand_, [this] {
    running_ = true;
    net::co_spawn(strand_, run(), [this](std::exception_ptr) {
      running_ = false;
      done_timer_.cancel();
    });
  });
}

Task<void> EngineDriver::run() {
  while (!stopping_) {
    if (!engine_.has_work()) {
      idle_timer_.expires_at(net::steady_timer::time_point::max());
      co_await idle_timer_.async_wait(kAsTuple);
      continue;
    }
    const Clock::time_point start = model_time(Clock::now());
    const engine::StepResult& step = engine_.step(seconds(start));
    if (step.scheduled_seqs == 0) {
      // Stalled (e.g. the KV fault left too few blocks): wait for a change.
      idle_timer_.expires_at(net::steady_timer::time_point::max());
      co_await idle_timer_.async_wait(kAsTuple);
      continue;
    }
    timeline_ = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(step.duration));
    step_timer_.expires_at(timeline_);
    co_await step_timer_.async_wait(kAsTuple);
    // `step` is still valid: nothing else calls step() meanwhile.
    deliver(step.events);
  }
}

void EngineDriver::deliver(const std::vector<engine::RequestEvent>& events) {
  for (const engine::RequestEvent& e : events) {
    if (!e.token) continue;  // a preemption is invisible to the client: just a pause
    const auto it = pending_.find(e.id);
    if (it == pending_.end()) continue;  // aborted during the step
    const std::shared_ptr<Delivery>& d = it->second.delivery;
    AnswerProgress& answer = d->answer(it->second.answer);
    answer.tokens.store(e.tokens_generated, std::memory_order_relaxed);
    if (e.finished) {
      metrics_.observe_finished(e.timing, answer.finish_length);
      answer.finished.store(true, std::memory_order_release);
      wake(d);
      pending_.erase(it);
    } else if (d->every_token) {
      wake(d);
    }
  }
}

void EngineDriver::poke() { idle_timer_.cancel(); }

Clock::time_point EngineDriver::model_time(Clock::time_point now) const {
  return now > timeline_ && now - timeline_ <= kMaxLag ? timeline_ : now;
}

void EngineDriver::submit(engine::SubmitRequest request, std::shared_ptr<Delivery> delivery, std::uint32_t answer) {
  net::post(strand_, [this, request = std::move(request), delivery = std::move(delivery), answer]() mutable {
    const engine::RequestId id = request.id;
    if (stopping_) {
      delivery->stopped.store(true);
      wake(delivery);
      return;
    }
    const auto now = seconds(model_time(Clock::now()));
    if (!engine_.submit(std::move(request), now)) {
      delivery->answer(answer).finished.store(true, std::memory_order_release);  // no tokens: the caller reports it
      wake(delivery);
      return;
    }
    pending_.emplace(id, Pending{std::move(delivery), answer});
    poke();
  });
}

void EngineDriver::park(engine::RequestId id, std::shared_ptr<Delivery> delivery) {
  net::post(strand_, [this, id, delivery = std::move(delivery)]() mutable {
    if (stopping_) {
      delivery->stopped.store(true);
      wake(delivery);
      return;
    }
    pending_.emplace(id, Pending{std::move(delivery), 0});
  });
}

void EngineDriver::abort(engine::RequestId id) {
  net::post(strand_, [this, id] {
    if (pending_.erase(id) == 0) return;  // finished, or already aborted
    if (engine_.abort(id)) poke();
  });
}

void EngineDriver::set_kv_blocks(std::uint32_t blocks) {
  net::post(strand_, [this, blocks] {
    engine_.set_num_blocks(blocks == 0 ? config_.num_blocks : blocks);
    poke();
  });
}

Task<EngineDriver::Stats> EngineDriver::stats_on_strand() {
  Stats stats{.engine = engine_.stats(), .in_flight_work_tokens = engine_.in_flight_work_tokens()};
  engine_.lora_adapters(stats.running_adapters, stats.waiting_adapters);
  co_return stats;
}

Task<EngineDriver::Stats> EngineDriver::stats() {
  co_return co_await net::co_spawn(strand_, stats_on_strand(), net::use_awaitable);
}

Task<void> EngineDriver::stop_on_strand() {
  stopping_ = true;
  for (auto& [id, p] : pending_) {
    p.delivery->stopped.store(true);
    wake(p.delivery);
  }
  pending_.clear();
  idle_timer_.cancel();
  step_timer_.cancel();
  if (running_) co_await done_timer_.async_wait(kAsTuple);
}

Task<void> EngineDriver::stop() { co_await net::co_spawn(strand_, stop_on_strand(), net::use_awaitable); }

}  // namespace arbiter::sim
