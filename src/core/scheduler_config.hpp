// Configuration of the scheduler core, as plain data. The gateway maps its
// YAML (scheduler: {policy: ...}, per-class fields) onto these structs; every
// field's behaviour is described in docs/scheduler.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace arbiter::sched {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using Duration = Clock::duration;

using PoolId = uint32_t;     // index into SchedulerConfig::pools
using ClassId = uint32_t;    // index into SchedulerConfig::classes
using TenantId = uint32_t;   // caller's dense tenant number
using BackendId = uint32_t;  // index into PoolSpec::max_concurrency

enum class Policy {
  kFifo,      // global arrival order per pool; classes only set deadlines
  kPriority,  // strict priority by class (engine_priority, then list order)
  kHybrid,    // shares, weighted fairness, tenant fairness, aging, preemption
};

// "fifo" | "priority" | "hybrid"; nullopt for anything else.
std::optional<Policy> policy_from_string(std::string_view name);
std::string_view policy_name(Policy policy);

struct ClassPolicy {
  std::string name;      // metrics label and lookup key
  double min_share = 0;  // pool capacity guaranteed while it has demand (hybrid)
  double max_share = 1;  // hard cap on its share of pool capacity (hybrid)
  double weight = 1;     // share of what min_shares leave, in tokens (hybrid)
  Duration max_queue_wait = std::chrono::seconds(30);  // queue deadline; Duration::max(): none
  bool preemptible = false;               // may be aborted and requeued for a class below min_share
  bool background = false;                // idle capacity only; always preemptible (hybrid)
  uint32_t max_queue = 10'000;            // queued requests per pool for this class -> 429
  uint32_t max_queue_per_tenant = 1'000;  // queued requests per pool, class and tenant -> 429
  Duration debounce = Duration::zero();   // hold before a keyed request may dispatch
  // The hold is learned per supersede key (core/key_rhythm.hpp): a request
  // is held, at most `debounce` and half its ttft_slo, only when the key's
  // requests are usually followed by another within that time.
  bool adaptive_debounce = false;
  // A newer keystroke whose prompt extends a running request's by exactly
  // the start of what it generated inherits that generation (inherit(),
  // core/typing_through.hpp) instead of aborting it.
  bool typing_through = false;
  int engine_priority = 0;                // vLLM `priority` (lower runs first); order for kPriority
  // Time-to-first-token target; zero: none. A queued request that can still
  // make it is served ahead of the weighted order and the tiers once less
  // than slo_lead_fraction of it is left (hybrid).
  Duration ttft_slo = Duration::zero();
  // Time-per-output-token target: the gap between two tokens of its
  // streams; zero: none. Adaptive capacity holds a backend's decode steps
  // within the tightest such target of the classes with work on its pool.
  Duration tpot_slo = Duration::zero();
};

struct PoolSpec {
  std::string name;                       // model name; metrics label
  std::vector<uint32_t> max_concurrency;  // one entry per backend (its slot count)
  // Per backend (same order; missing entries are 0): prompt tokens it
  // prefills per second. 0: its prefill backlog is not limited (only
  // max_concurrency and the engine's signals are).
  std::vector<double> prefill_tokens_per_s;
  // Per backend (same order; missing entries are 0): tokens of prompt
  // prefix its engine caches (KV size). Nonzero turns on prefix-affinity
  // routing for it: requests go where their prefix most likely is cached.
  std::vector<uint64_t> prefix_cache_tokens;
  // Pools whose idle slots this pool's requests may take (borrowing): when
  // none of its own backends has room, a request starts on a lender that
  // has no dispatchable work of its own, within half of the lender's
  // prefill backlog limit. The lender takes the slots back: no new loan
  // while its own work waits, and (hybrid with preemption) borrowed
  // preemptible work is preempted at once for it. Pools of one model only:
  // the caller's business, the scheduler does not know models.
  std::vector<PoolId> lenders;
  // LoRA adapters per backend (same order; missing entries: none): the
  // adapter numbers (Request::adapter, from 1) it serves. A request for an
  // adapter runs only on a backend that lists it.
  std::vector<std::vector<uint16_t>> adapters;
  // Per backend: adapters its engine runs at once (vLLM --max-loras;
  // missing entries: 1).
  std::vector<uint32_t> max_loras;
};

// The scheduler's settings an operator sets (the config's `scheduler:`
// section, read through its key table in yaml/setting_keys): one struct,
// held by the gateway's Config and by arbiter-bench's scenarios and
// handed to the scheduler as its base (issue 42: it was copied field by
// field from a twin).
struct SchedulerTunables {
  Policy policy = Policy::kHybrid;   // see Policy
  // A queued request becomes urgent (jumps the weighted order) once less than
  // this fraction of its class's max_queue_wait is left before its deadline.
  double aging_fraction = 0.2;
  // Choose preemption victims (hybrid).
  bool preemption = true;
  // A class's oldest queued request must have waited this long before work
  // is preempted for it: slots that free up on their own in the meantime
  // make the preemption (and the recompute of the victim's prompt and output
  // when it resumes) unnecessary. On a busy pool slots free up every few
  // milliseconds and preemption stays rare; on a pool held by long requests
  // it starts after this delay (at most half the class's max_queue_wait).
  // Preemption costs the victim's prompt and output again (recompute) on a
  // pool that is already full: arbiter-bench's starvation scenario loses a
  // third of its goodput with 100 ms and nothing with 1 s.
  Duration preempt_after = std::chrono::milliseconds(1000);
  // Thrash guard: a request resumed after a preemption is not preempted
  // again until this long after it was requeued.
  Duration preempt_guard = std::chrono::seconds(10);
  // A backend takes new work only while the prompt tokens dispatched to it
  // and not yet prefilled (estimated at its pool's prefill_tokens_per_s)
  // would take less than this. Requests wait in the gateway's queues, in the
  // policy's order, instead of in the engine's FCFS prefill queue, where a
  // burst of long prompts delays every first token behind it. 0 disables.
  Duration max_prefill_backlog = std::chrono::milliseconds(250);
  // Prefix cache credit (issue 12): a request sent to a backend that holds
  // its prefix adds only the part it does not hold to that backend's
  // prefill backlog, and a holder whose engine signal reads saturated (but
  // that has slots, backlog room and is within the affinity load bound)
  // still takes its prefix instead of sending it to a cold engine.
  bool affinity_cache_credit = false;
  // SLO rescue (hybrid): a queued request of a class with a ttft_slo goes
  // ahead of the tiers and the weighted order once less than this fraction
  // of its ttft_slo is left, as long as its estimated prefill still fits in
  // what is left; among such requests, the earliest SLO first. A request
  // that can no longer make its SLO gets no rescue (it would only push
  // others past theirs). 0 disables.
  double slo_lead_fraction = 0.5;
  // Early answer (hybrid): a request is refused at admission (429 with the
  // predicted wait beyond its deadline as Retry-After) when the work queued
  // ahead of it in its tenant queue, drained at the tenant's part of its
  // class's recent completion rate, would take more than this multiple of
  // the time its deadline allows: it would only wait to be told 503. Judged
  // only while the class has work running (the rate is measured) and the
  // tenant has work queued. 0 disables.
  double early_reject_margin = 2;
  // Tenant headroom (hybrid): this share of a pool's slots (rounded up) is
  // kept for tenants that do not flood their class (served beyond kFlooding
  // times their share among its busy tenants): a flooding tenant's request
  // waits while no more than that is free, and leaves the prefill backlog's
  // headroom too, so the others' next requests start at once. 0 disables:
  // it trades the flooder's throughput for the others' wait.
  double tenant_headroom = 0;
  // Fair-share cap (hybrid): a tenant whose demand in a class (requests
  // queued and running) is beyond kFlooding times its weight's share among
  // the class's busy tenants holds at most this multiple of that share of
  // the pool's slots (at least one) within the limit; beyond it, it takes
  // only slots nobody else can use, outside the limit (work-conserving).
  // A tenant alone in its class is not capped. 0 disables: a flooding
  // tenant may then fill every slot the others leave free for a moment,
  // and their next requests wait for its long ones. On by default since
  // issue 41 (DECISIONS.md D2, D7; docs/benchmarks.md).
  double tenant_fair_cap = 2;
  // Prefix affinity (pools with prefix_cache_tokens): a request goes to the
  // backend holding the longest prefix of its prompt, or, when none has room
  // within the bound, to its prompt's rendezvous choice (deterministic, so
  // gateway replicas agree); either only while that backend's slots in use,
  // with the request, stay within (1 + this) x the pool's average share
  // (consistent hashing with bounded loads). Otherwise the least loaded.
  double affinity_load_slack = 0.25;
};

struct SchedulerConfig : SchedulerTunables {
  std::vector<ClassPolicy> classes;  // at most 255
  std::vector<PoolSpec> pools;       // at least one, each with a backend
  // Mixed into every prefix-affinity rendezvous choice. Replicas must share it (they
  // do by default); arbiter-bench's noise-floor variant (hybrid-tiebreak)
  // changes it and nothing else, so its near-ties break another way.
  uint64_t rendezvous_salt = 0;
  // LoRA affinity: a request for an adapter goes to a backend that has it
  // loaded (within the affinity load bound), else to one with a free
  // adapter slot, else to the least loaded that serves it. False:
  // the least loaded that serves it (arbiter-bench's hybrid-no-lora-affinity).
  bool lora_affinity = true;
  // Time constant of the completion-rate estimate behind Retry-After.
  Duration rate_window = std::chrono::seconds(10);
  // Drain rate assumed before any completion was seen: tokens per second per
  // slot of pool capacity.
  double fallback_tokens_per_slot_second = 50;
  std::chrono::milliseconds min_retry_after{100};       // lower clamp of computed Retry-After
  std::chrono::milliseconds max_retry_after{60'000};    // upper clamp (also when capacity is 0)
  std::unordered_map<TenantId, double> tenant_weights;  // absent tenants weigh 1
  // Slots a tenant's requests may hold at once in one pool, all classes
  // together (hybrid); more wait in the queue (reason tenant_cap) while the
  // other tenants' work is served. Absent or 0: no cap.
  std::unordered_map<TenantId, uint32_t> tenant_max_running;
  // The same cap as a share of the pool's capacity, in (0, 1]: at most
  // floor(max(1, share x capacity)) slots, so it follows backends going down
  // and adaptive limits. With both, the lower cap holds.
  std::unordered_map<TenantId, double> tenant_max_share;
};

// Why a config cannot be used, or nullopt when it can.
std::optional<std::string> validate(const SchedulerConfig& config);

// Records tenant `tenant`'s weight and caps in `config`, only those that
// differ from the defaults (weight 1, no cap): the gateway's tenants[] and
// arbiter-bench's scenario tenants both go through it.
void set_tenant_limits(SchedulerConfig& config, TenantId tenant, double weight, uint32_t max_running,
                       double max_share);

}  // namespace arbiter::sched
