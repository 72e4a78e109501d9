// One simulated vLLM engine: continuous batching at iteration granularity,
// chunked prefill, paged KV cache with prefix caching, preemption by
// recompute, FCFS or priority scheduling, aborts, and the counters vLLM
// exports. Pure: no I/O, no threads, no clock. Time is `double` seconds on
// whatever clock the caller uses (wall or virtual), passed to submit/step.
//
// Driving it (real time or virtual time alike):
//   engine.submit(request, now);            // any time
//   const StepResult& r = engine.step(now); // when the previous step is over
//   ... wait r.duration, then deliver r.events (they happen at r.end()) ...
//   engine.abort(id);                       // client gone: frees it at once
// step() with nothing scheduled returns duration 0 and scheduled_seqs 0: the
// caller should then wait for submit/abort/set_num_blocks instead of spinning.
//
// Per step the cost is O(running + admitted + events) plus O(log waiting) per
// admission; nothing walks the whole waiting queue. Not thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <expected>
#include <set>
#include <unordered_map>
#include <vector>

#include "engine/block_pool.hpp"
#include "engine/profile.hpp"

namespace arbiter::engine {

using RequestId = std::uint64_t;

struct SubmitRequest {
  RequestId id = 0;                         // caller-chosen, unique among live requests
  std::uint32_t prompt_tokens = 0;          // prompt length (prompt_blocks().num_tokens)
  std::vector<std::uint64_t> block_hashes;  // full prompt blocks (prompt_blocks()); empty: no reuse
  std::uint32_t output_tokens = 0;          // tokens it will generate (generation_length())
  int priority = 0;                         // lower runs first under SchedulingPolicy::kPriority
  // The LoRA adapter it runs with (the caller's number for it), 0: the base
  // model. Its prompt blocks are cached apart from other adapters', as
  // vLLM keys its prefix cache by adapter too.
  std::uint32_t adapter = 0;
};

enum class SubmitError {
  kDuplicateId,  // a live request already has this id
  kInvalid,      // prompt_tokens or output_tokens is 0
  kTooLong,      // over max_model_len or the whole KV cache
};

// Per-request timestamps (seconds on the caller's clock), for vLLM's
// histograms: queue time = first_scheduled - arrival, TTFT = first_token -
// arrival, e2e = finished - arrival.
struct RequestTiming {
  double arrival = 0;          // submit()
  double first_scheduled = 0;  // start of the first step that ran it
  double first_token = 0;      // end of the step that produced its first token
  double finished = 0;         // end of the step that produced its last token
};

struct RequestEvent {
  RequestId id = 0;
  bool token = false;                  // one new output token at StepResult::end()
  bool first_token = false;            // that token is the request's first
  bool finished = false;               // that token was the last; the request has left
  bool preempted = false;              // lost its KV this step; will recompute (no token)
  std::uint32_t tokens_generated = 0;  // output tokens so far, this one included
  RequestTiming timing;                // complete when finished
};

struct StepResult {
  double start = 0;                  // `now` given to step()
  double duration = 0;               // cost model time of this step
  std::uint32_t scheduled_seqs = 0;  // sequences that ran
  StepWork work;                     // what the step computed
  std::vector<RequestEvent> events;  // tokens, finishes, preemptions

  double end() const { return start + duration; }
};

// Counters and gauges with vLLM's meanings (names in docs/simulator.md).
struct EngineStats {
  std::uint32_t num_requests_running = 0;
  std::uint32_t num_requests_waiting = 0;
  double kv_cache_usage_perc = 0;                // 0..1 of usable blocks
  std::uint64_t prefix_cache_queries_total = 0;  // tokens looked up at admission
  std::uint64_t prefix_cache_hits_total = 0;     // of those, tokens found cached
  std::uint64_t num_preemptions_total = 0;
  std::uint64_t prompt_tokens_total = 0;            // prompts of requests that got a first token
  std::uint64_t generation_tokens_total = 0;        // output tokens emitted
  std::uint64_t prefill_tokens_computed_total = 0;  // incl. recompute, excl. cache hits
  std::uint64_t requests_finished_total = 0;
  std::uint64_t requests_aborted_total = 0;
  std::uint64_t wasted_prefill_tokens_total = 0;  // computed for requests later aborted
  std::uint64_t wasted_decode_tokens_total = 0;   // decoded for requests later aborted
  // Of the wasted prefill: prompt blocks a later request found in the prefix
  // cache, so computed for someone after all (counted when reused, once per
  // block), by the abort's cause.
  std::uint64_t reused_after_cancel_tokens_total = 0;
  std::uint64_t reused_after_preempt_tokens_total = 0;
  std::uint64_t lora_loads_total = 0;             // adapters loaded into a GPU slot
  double busy_seconds_total = 0;                  // sum of step durations
  std::uint64_t steps_total = 0;                  // steps that ran something
  std::uint32_t num_blocks = 0;                   // usable KV blocks now
  std::uint32_t block_size = 0;
};

class Engine {
 public:
  explicit Engine(const EngineConfig& config);

  std::expected<void, SubmitError> submit(SubmitRequest request, double now);
  // Why a request is aborted, for the reuse counters.
  enum class AbortCause : std::uint8_t { kCancel = 1, kPreempt = 2 };
  // Drops a waiting or running request at once, freeing its KV; everything
  // computed for it counts as wasted, until a later request reuses its
  // cached prompt blocks. False when the id is not live.
  bool abort(RequestId id, AbortCause cause = AbortCause::kCancel);
  // Runs one iteration starting at `now`. The result lives until the next call.
  const StepResult& step(double now);

  bool has_work() const { return !running_.empty() || !waiting_.empty(); }
  EngineStats stats() const;
  // Prefill and decode tokens computed so far for the requests in the
  // engine now (earlier preempted attempts included): what aborting them
  // all would add to the wasted totals, e.g. when the process dies.
  // O(requests in the engine); not part of stats(), which runs per abort.
  std::uint64_t in_flight_work_tokens() const;
  const EngineConfig& config() const { return config_; }
  // The adapters of running and of waiting requests, each once (vLLM's
  // lora_requests_info labels). O(requests in the engine).
  void lora_adapters(std::vector<std::uint32_t>& running, std::vector<std::uint32_t>& waiting) const;

  // Fault hook: usable KV blocks (another tenant took the rest). Clamped to
  // the configured num_blocks. Applied at the next step, preempting running
  // requests if the free blocks do not cover the cut.
  void set_num_blocks(std::uint32_t num_blocks);

 private:
  enum class State : std::uint8_t { kFree, kWaiting, kRunning };

  // Waiting-queue order: (priority, order). Under FCFS priority is 0 and a
  // preempted request gets an order below every other, i.e. the front.
  struct WaitKey {
    std::int64_t priority;
    std::int64_t order;
    std::uint32_t slot;
    auto operator<=>(const WaitKey&) const = default;
  };

  // Fields read every step come first: with the blocks vector they fill one
  // cache line, which is all a step touches per running request.
  struct alignas(64) Request {
    RequestId id = 0;
    std::uint32_t prompt_tokens = 0;
    std::uint32_t output_target = 0;  // tokens to generate
    std::uint32_t output_done = 0;    // tokens emitted so far
    std::uint32_t num_computed = 0;   // tokens whose KV is in `blocks`
    std::uint32_t prefill_end = 0;    // tokens to (re)compute before decoding, set on admission
    std::uint32_t scheduled = 0;      // tokens scheduled in the current step
    State state = State::kFree;
    std::vector<std::uint32_t> blocks;
    // Cold: admission, preemption, abort.
    bool started = false;  // has been scheduled at least once
    int priority = 0;
    std::int64_t arrival_order = 0;
    WaitKey wait_key{};  // valid while waiting
    std::vector<std::uint64_t> block_hashes;
    std::uint32_t adapter = 0;       // LoRA adapter, 0: none
    std::uint32_t attempt_hits = 0;  // tokens found cached at the last admission
    std::uint64_t past_prefill = 0;  // prefill tokens computed in earlier, preempted attempts
    std::uint64_t past_decode = 0;   // decode tokens computed in earlier attempts
    RequestTiming timing;

    std::uint32_t num_tokens() const { return prompt_tokens + output_done; }
    // Of `scheduled`, the tokens before prefill_end; the rest (0 or 1) is a decode.
    std::uint32_t scheduled_prefill() const {
      return num_computed >= prefill_end ? 0 : std::min(scheduled, prefill_end - num_computed);
    }
    // Work of the current attempt: prefill from the cache hits on, then decodes.
    std::uint64_t attempt_prefill() const {
      return std::min(num_computed, prefill_end) - std::min(attempt_hits, prefill_end);
    }
    std::uint64_t attempt_decode() const {
      return num_computed > prefill_end ? num_computed - prefill_end : 0;
    }
  };

  std::uint32_t blocks_for(std::uint32_t tokens) const;
  bool grow(Request& r, std::uint32_t tokens);
  void enqueue(std::uint32_t slot, bool front);
  std::size_t victim_index() const;
  void preempt(std::size_t running_index, std::uint32_t& budget);
  void apply_reservation(std::uint32_t& budget);
  void schedule_running(std::uint32_t& budget, bool& preempted);
  void admit_waiting(std::uint32_t& budget, double now, std::uint32_t& lora_loads);
  // The adapter's GPU slot for a request being admitted: already loaded,
  // or loaded now into a slot no running request uses (counted in
  // `loads`); false when every slot is busy with other adapters.
  bool take_lora(std::uint32_t adapter, std::uint32_t& loads);
  void leave_running(const Request& r);  // its adapter's slot has one fewer running request
  void publish_blocks(Request& r, std::uint32_t from, std::uint32_t to);
  void finish(std::uint32_t slot);
  void release_slot(std::uint32_t slot);

  EngineConfig config_;
  BlockPool pool_;
  std::uint32_t reserve_target_ = 0;  // blocks the fault hook wants held

  std::vector<Request> slots_;  // requests by slot
  std::vector<std::uint32_t> free_slots_;
  std::unordered_map<RequestId, std::uint32_t> live_;  // id -> slot
  std::set<WaitKey> waiting_;
  std::vector<std::uint32_t> running_;    // slots in admission order
  std::vector<std::uint32_t> scheduled_;  // slots run in the current step
  std::int64_t next_order_ = 0;           // arrival order
  std::int64_t front_order_ = 0;          // decreasing: FCFS requeue at the front

  // GPU adapter slots (at most max_loras): which adapter, its running requests, last use.
  struct LoraSlot {
    std::uint32_t adapter = 0;
    std::uint32_t running = 0;
    std::int64_t last_used = 0;
  };
  std::vector<LoraSlot> loras_;
  std::int64_t lora_clock_ = 0;

  StepResult result_;
  EngineStats stats_;
};

}  // namespace arbiter::engine
