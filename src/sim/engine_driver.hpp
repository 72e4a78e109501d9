// Runs one engine::Engine in real time behind a strand (the Engine is not
// thread-safe): while it has work, step(now), wait the step's duration on a
// timer, then hand the step's tokens to the waiting requests; when idle,
// sleep until a submit, abort or capacity change. Every public member may be
// called from any thread.
//
// Busy steps run back to back on the model's timeline: a step starts when
// the previous one ended in model time, not when its timer fired. Timer
// overshoot and delivery take a fraction of a millisecond per step; charged
// to the next step, they made a busy simulated engine a few percent slower
// than its profile (live runs' TTFT tails came out ~10% above virtual mode's
// on the agreement scenario).
#pragma once

#include <atomic>
#include <memory>
#include <unordered_map>

#include "engine/engine.hpp"
#include "http/asio.hpp"
#include "sim/delivery.hpp"
#include "sim/sim_metrics.hpp"

namespace arbiter::sim {

class EngineDriver {
 public:
  EngineDriver(net::io_context& ioc, const engine::EngineConfig& config, SimMetrics& metrics);

  void start();
  // Wakes every request still waiting (with `stopped`) and ends the driver
  // loop; completes once the loop has exited. Later submits are refused.
  Task<void> stop();

  // A fresh request id, unique for this engine.
  engine::RequestId next_id() { return next_id_.fetch_add(1, std::memory_order_relaxed); }

  // Queues the request as answer `answer` of `delivery`, where its tokens
  // arrive. A request the engine refuses is finished at once with no tokens.
  void submit(engine::SubmitRequest request, std::shared_ptr<Delivery> delivery, std::uint32_t answer = 0);
  // Registers a request that never enters the engine (a hang), so stop() wakes it.
  void park(engine::RequestId id, std::shared_ptr<Delivery> delivery);
  // The request's client is gone: out of the engine at once (counted as
  // wasted work by the engine). No-op when it already left.
  void abort(engine::RequestId id);
  // Fault hook: usable KV blocks (0: all configured blocks).
  void set_kv_blocks(std::uint32_t blocks);

  // Engine counters and gauges, read on the strand.
  struct Stats {
    engine::EngineStats engine;
    std::uint64_t in_flight_work_tokens = 0;  // Engine::in_flight_work_tokens()
    std::vector<std::uint32_t> running_adapters, waiting_adapters;  // Engine::lora_adapters()
  };
  Task<Stats> stats();

  const engine::EngineConfig& config() const { return config_; }

 private:
  Task<void> run();
  Task<Stats> stats_on_strand();
  Task<void> stop_on_strand();
  void deliver(const std::vector<engine::RequestEvent>& events);
  void poke();  // the loop may have something to do now
  // The model time for an event happening now: the timeline's if the engine
  // is busy and at most kMaxLag behind it, else now.
  std::chrono::steady_clock::time_point model_time(std::chrono::steady_clock::time_point now) const;

  using Strand = net::strand<net::io_context::executor_type>;

  const engine::EngineConfig config_;
  SimMetrics& metrics_;
  Strand strand_;
  engine::Engine engine_;                  // touched only on strand_
  net::steady_timer idle_timer_;           // the loop sleeps here when idle; poke() cancels it
  net::steady_timer step_timer_;           // the running step's duration
  net::steady_timer done_timer_;           // cancelled when the loop has exited
  std::chrono::steady_clock::time_point timeline_{};  // end of the last step in model time (strand_)
  bool running_ = false;                   // the loop is alive (strand_)
  bool stopping_ = false;                  // stop() was called (strand_)
  struct Pending {
    std::shared_ptr<Delivery> delivery;
    std::uint32_t answer = 0;  // which of its answers this engine request is
  };
  std::unordered_map<engine::RequestId, Pending> pending_;  // by id (strand_)
  std::atomic<engine::RequestId> next_id_{1};
};

}  // namespace arbiter::sim
