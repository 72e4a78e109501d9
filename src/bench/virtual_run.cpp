#include "bench/virtual_run.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>
#include <queue>
#include <random>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bench/workload.hpp"
#include "core/capacity_view.hpp"
#include "core/overload/degradation.hpp"
#include "core/overload/overload_config.hpp"
#include "core/overload/scheduler_load.hpp"
#include "core/scheduler.hpp"
#include "core/typing_through.hpp"
#include "engine/engine.hpp"
#include "core/mix.hpp"

namespace arbiter::bench {

sched::SchedulerConfig scheduler_config(const Scenario& scenario, sched::Policy policy) {
  sched::SchedulerConfig out;
  static_cast<sched::SchedulerTunables&>(out) = scenario.scheduler;
  out.policy = policy;
  for (const ClassSpec& c : scenario.classes) {
    if (c.scheduler_class.empty()) out.classes.push_back(c.policy);
  }
  const EngineSpec& e = scenario.engine;
  const PoolLayout layout = pool_layout(scenario);
  // With adaptive capacity the controller's limit (BackendSignal::max_in_flight)
  // applies, up to its ceiling: max_concurrency is only where it starts.
  const uint32_t slots = e.adaptive.enabled && e.signals ? std::max(e.max_concurrency, e.adaptive.max_limit)
                                                         : e.max_concurrency;
  for (std::size_t p = 0; p < layout.count.size(); ++p) {
    const uint32_t n = layout.count[p];
    const bool variant = layout.variant_pool == p;
    const engine::EngineConfig& config = variant ? e.variant_config : e.config;
    const uint64_t pool_cache = e.prefix_affinity ? engine::kv_cache_tokens(config) : 0;
    out.pools.push_back({.name = variant ? "variant" : "model/" + std::to_string(p),
                         .max_concurrency = std::vector<uint32_t>(n, slots),
                         .prefill_tokens_per_s = std::vector<double>(n, engine::prefill_tokens_per_s(config)),
                         .prefix_cache_tokens = std::vector<uint64_t>(n, pool_cache)});
    if (scenario.lora.adapters == 0) continue;
    sched::PoolSpec& spec = out.pools.back();
    spec.max_loras.assign(n, config.max_loras);
    spec.adapters.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
      for (uint32_t a = 1; a <= scenario.lora.adapters; ++a) {
        if (serves_adapter(scenario.lora, i, n, static_cast<uint16_t>(a))) spec.adapters[i].push_back(static_cast<uint16_t>(a));
      }
    }
  }
  // Borrowing: every other pool that lends (the gateway's rule for the
  // pools of one model).
  for (std::size_t p = 0; p < scenario.pools.size(); ++p) {
    for (std::size_t l = 0; l < scenario.pools.size(); ++l) {
      if (l != p && scenario.pools[l].lend) out.pools[p].lenders.push_back(static_cast<sched::PoolId>(l));
    }
  }
  for (std::size_t t = 0; t < scenario.tenants.size(); ++t) {
    const TenantSpec& tenant = scenario.tenants[t];
    sched::set_tenant_limits(out, static_cast<sched::TenantId>(t), tenant.weight, tenant.max_running,
                             tenant.max_share);
  }
  return out;
}

namespace {

constexpr uint32_t kNone = ~0u;

sched::TimePoint to_time_point(double s) {
  return sched::TimePoint(std::chrono::nanoseconds(std::llround(s * 1e9)));
}
double to_seconds(sched::TimePoint t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// A request between its arrival and its end. Slots are reused; `ref`
// (generation << 32 | slot) names one request for timers and the scheduler.
struct Live {
  RequestSpec spec;
  std::vector<uint64_t> affinity;  // the scheduler's Request::prefix_blocks while it holds the request
  uint32_t replica = 0;            // the gateway replica it went through
  sched::Handle handle;
  double first_token = -1;
  double last_token = -1;
  uint32_t delivered = 0;        // tokens the client has, over all engine runs
  uint32_t engine = kNone;       // engine it runs on, kNone when not running
  engine::RequestId run_id = 0;  // the engine's id of the current run
  uint32_t generation = 0;
  bool active = false;
  bool run_first_token = false;  // the current run has not produced a token yet
  double run_last_token = -1;    // the current run's latest token (its gaps feed adaptive capacity)
  double run_submitted = -1;     // when the current run reached its engine (its first token feeds it too)
  Degraded degraded = Degraded::kNone;  // what staged degradation did to it (hybrid and its variants)
  uint32_t pool = 0;                    // its scheduler pool: its class's, or the degraded variant's
};

class VirtualRun {
 public:
  VirtualRun(const Scenario& s, std::string_view policy, uint64_t seed)
      : s_(s),
        workload_(s, seed),
        collector_(s),
        policy_(policy),
        sched_class_(scheduler_classes(s)),
        layout_(pool_layout(s)),
        adaptive_(s.engine.adaptive) {
    if (policy != "direct") {
      const bool no_preemption = policy == kHybridNoPreemption;
      const bool no_affinity = policy == kHybridNoAffinity;
      const bool no_borrowing = policy == kHybridNoBorrowing;
      const bool no_debounce = policy == kHybridNoDebounce;
      const bool tie_break = policy == kHybridTieBreak;
      const bool no_lora_affinity = policy == kHybridNoLoraAffinity;
      degrade_ = s.degradation.enabled && policy.starts_with("hybrid") && policy != kHybridNoDegradation;
      sched::SchedulerConfig config =
          scheduler_config(s, no_preemption || no_affinity || no_borrowing || no_debounce || tie_break ||
                                      no_lora_affinity || policy == kHybridNoDegradation
                                  ? sched::Policy::kHybrid
                                  : *sched::policy_from_string(policy));
      if (tie_break) config.rendezvous_salt = 0x5eed'7ab1e'b4eaULL;
      if (no_lora_affinity) config.lora_affinity = false;
      if (no_debounce) {
        for (sched::ClassPolicy& c : config.classes) {
          c.debounce = sched::Duration::zero();
          c.adaptive_debounce = false;
        }
      }
      if (no_preemption) config.preemption = false;
      if (no_borrowing) {
        for (sched::PoolSpec& pool : config.pools) pool.lenders.clear();
      }
      if (no_affinity) {
        for (sched::PoolSpec& pool : config.pools) pool.prefix_cache_tokens.clear();
      }
      for (uint32_t r = 0; r < s.gateways; ++r) scheds_.push_back(*sched::Scheduler::create(config));
    }
    engines_.reserve(s.engine.total());
    for (uint32_t e = 0; e < s.engine.total(); ++e) {
      engines_.emplace_back(e < s.engine.count ? s.engine.config : s.engine.variant_config);
    }
    if (!scheds_.empty() && adaptive_.enabled && s.engine.signals) start_adaptive();
    if (degrade_) start_degradation(seed);
    last_step_.assign(s.engine.total(), nullptr);
    stepping_.assign(s.engine.total(), false);
    in_engine_.assign(s.engine.total(), 0);
    running_sum_.assign(s.engine.total(), 0);
    sample_dt_ = s.duration_s / kSeriesSamples;
  }

  PolicySummary run() {
    const auto wall_start = std::chrono::steady_clock::now();
    const double cut = s_.duration_s + s_.drain_s;
    std::optional<RequestSpec> next = workload_.next();
    double tick = 0;
    double sample = sample_dt_;
    const bool ticks = !scheds_.empty() && s_.engine.signals;
    for (;;) {
      const double t_arrival = next ? next->arrival : kNever;
      const double t_step = steps_.empty() ? kNever : steps_.top().first;
      const double t_abort = aborts_.empty() ? kNever : aborts_.top().first;
      sched::TimePoint wake = sched::TimePoint::max();
      for (const sched::Scheduler& sc : scheds_) wake = std::min(wake, sc.next_wakeup().value_or(wake));
      const double t_wake = wake == sched::TimePoint::max() ? kNever : to_seconds(wake);
      const double t = std::min({t_arrival, t_step, t_abort, t_wake});
      if (t == kNever) break;
      if (std::min({t, sample, ticks ? tick : kNever}) > cut) break;
      if (sample <= t) {
        take_sample(sample);
        // The series covers the arrival window: kSeriesSamples points, no more.
        sample = series_.size() < kSeriesSamples ? sample_dt_ * static_cast<double>(series_.size() + 1) : kNever;
        continue;
      }
      if (ticks && tick <= t) {
        now_ = std::max(now_, tick);
        scrape_signals();
        tick += s_.engine.scrape_ms / 1000;
        continue;
      }
      now_ = std::max(now_, t);
      if (t_step == t) {
        while (!steps_.empty() && steps_.top().first == t) {
          const uint32_t e = steps_.top().second;
          steps_.pop();
          end_step(e);
        }
      } else if (t_abort == t) {
        const uint64_t ref = aborts_.top().second;
        aborts_.pop();
        if (Live* l = find(ref)) client_abort(*l);
      } else if (t_arrival == t) {
        arrive(*next);
        next = workload_.next();
      } else {
        dirty_ = true;  // a deadline or the end of a debounce
      }
      if (!scheds_.empty() && dirty_) {
        sched::TimePoint at = time_point();
        if (t_wake == t) at = std::max(at, wake);  // exactly at the deadline, not 1 ns early
        poll(at);
      }
      start_due_engines();
    }
    // An idle tail of the arrival window still gets its (empty) samples.
    while (series_.size() < kSeriesSamples)
      take_sample(sample_dt_ * static_cast<double>(series_.size() + 1));
    for (std::size_t slot = 0; slot < lives_.size(); ++slot) {
      if (lives_[slot].active) finish(lives_[slot], Outcome::kUnfinished);
    }
    EngineTotals totals = engine_totals(std::min(now_, cut));
    PolicySummary out = collector_.summarize(policy_, totals);
    out.series = std::move(series_);
    for (const overload::StageController& c : stages_) out.degrade_transitions += c.transitions();
    out.stage_seconds = stage_seconds_;
    out.wall_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    return out;
  }

 private:
  sched::TimePoint time_point() {
    last_tp_ = std::max(last_tp_, to_time_point(now_));
    return last_tp_;
  }

  uint64_t ref_of(const Live& l) const {
    return (uint64_t{l.generation} << 32) | static_cast<uint64_t>(&l - lives_.data());
  }
  Live* find(uint64_t ref) {
    const auto slot = static_cast<uint32_t>(ref);
    if (slot >= lives_.size()) return nullptr;
    Live& l = lives_[slot];
    return l.active && l.generation == (ref >> 32) ? &l : nullptr;
  }

  Live& allocate(const RequestSpec& spec) {
    uint32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      slot = static_cast<uint32_t>(lives_.size());
      lives_.emplace_back();
    }
    Live& l = lives_[slot];
    const uint32_t generation = l.generation + 1;
    l = Live{};
    l.spec = spec;
    l.generation = generation;
    l.active = true;
    return l;
  }

  void finish(Live& l, Outcome outcome) {
    forget_handover(l);
    collector_.record({.klass = l.spec.klass,
                       .tenant = l.spec.tenant,
                       .outcome = outcome,
                       .arrival = l.spec.arrival,
                       .first_token = l.first_token,
                       .finished = outcome == Outcome::kCompleted ? now_ : -1,
                       .output_tokens = l.delivered,
                       .deadline = l.spec.deadline,
                       .degraded = l.degraded});
    if (l.spec.supersede_key != 0) {
      auto it = newest_.find(l.spec.supersede_key);
      if (it != newest_.end() && it->second == ref_of(l)) newest_.erase(it);
    }
    l.active = false;
    free_.push_back(static_cast<uint32_t>(&l - lives_.data()));
  }

  // Starts (or resumes) a request on engine e; false when the engine refuses it.
  bool submit(Live& l, uint32_t e, int priority = 0) {
    engine::SubmitRequest r;
    r.priority = priority;
    r.id = (++runs_ << 32) | static_cast<uint32_t>(&l - lives_.data());
    r.prompt_tokens = l.spec.prompt_tokens() + l.delivered;
    prompt_block_hashes(l.spec, s_.engine.config.block_size, r.block_hashes);
    r.output_tokens = l.spec.output_tokens - l.delivered;
    r.adapter = l.spec.adapter;
    if (!engines_[e].submit(std::move(r), now_)) return false;
    adapter_runs_ += l.spec.adapter != 0 ? 1 : 0;
    l.run_id = (runs_ << 32) | static_cast<uint32_t>(&l - lives_.data());
    l.engine = e;
    l.run_first_token = true;
    l.run_last_token = -1;
    l.run_submitted = now_;
    ++in_engine_[e];
    due_.push_back(e);
    return true;
  }

  // Takes a running request out of its engine; returns the tokens computed
  // for the run (prefill, decode), now wasted.
  std::pair<uint64_t, uint64_t> abort_in_engine(
      Live& l, engine::Engine::AbortCause cause = engine::Engine::AbortCause::kCancel) {
    engine::Engine& engine = engines_[l.engine];
    const engine::EngineStats before = engine.stats();
    engine.abort(l.run_id, cause);
    const engine::EngineStats after = engine.stats();
    --in_engine_[l.engine];
    due_.push_back(l.engine);  // freed KV may let waiting work in
    forget_handover(l);
    l.engine = kNone;
    return {after.wasted_prefill_tokens_total - before.wasted_prefill_tokens_total,
            after.wasted_decode_tokens_total - before.wasted_decode_tokens_total};
  }

  void waste(Live& l) {
    const auto [prefill, decode] = abort_in_engine(l);
    wasted_cancel_ += prefill + decode;
    wasted_cancel_prefill_ += prefill;
  }

  // Direct clients of a class use its pool's engines (a deployment with
  // separate pools gives each its own endpoint).
  // Direct clients: round robin or the least loaded, among the pool's
  // engines that serve the request's adapter.
  uint32_t pick_engine(uint32_t pool, uint16_t adapter) {
    const uint32_t first = layout_.first[pool], n = layout_.count[pool];
    const auto serves = [&](uint32_t e) { return serves_adapter(s_.lora, e, n, adapter); };
    if (s_.direct_routing == DirectRouting::kRoundRobin) {
      for (uint32_t k = 0; k < n; ++k) {
        if (const uint32_t e = rotation_++ % n; serves(e)) return first + e;
      }
    }
    uint32_t best = kNone;
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t e = (rotation_ + i) % n;
      if (serves(e) && (best == kNone || in_engine_[first + e] < in_engine_[first + best])) best = e;
    }
    rotation_ = best + 1;
    return first + best;
  }

  uint32_t pool_of(const RequestSpec& spec) const { return layout_.pool_of_class[sched_class_[spec.klass]]; }

  void arrive(const RequestSpec& spec) {
    Live& l = allocate(spec);
    const uint64_t ref = ref_of(l);
    if (spec.abort_at != kNever) aborts_.emplace(spec.abort_at, ref);
    if (scheds_.empty()) {
      if (spec.supersede_key != 0) {
        // The IDE aborts its previous request when it sends the next one.
        if (auto it = newest_.find(spec.supersede_key); it != newest_.end()) {
          if (Live* old = find(it->second)) {
            waste(*old);
            finish(*old, Outcome::kSuperseded);
          }
        }
        newest_[spec.supersede_key] = ref;
      }
      if (!submit(l, pick_engine(pool_of(spec), spec.adapter))) finish(l, Outcome::kDropped);
      return;
    }
    const uint64_t key = spec.supersede_key;
    // A client keeps its connection to one replica: a developer's keystrokes
    // (supersede key) and a chat session's turns reach the same one.
    const uint64_t sticky = key != 0 ? key : spec.history.key != 0 ? spec.history.key : spec.id;
    l.replica = static_cast<uint32_t>(splitmix64(sticky) % scheds_.size());
    l.pool = pool_of(spec);
    if (degrade_ && !degrade(l)) return;
    prompt_block_hashes(spec, s_.engine.config.block_size, scratch_blocks_);
    affinity_blocks(scratch_blocks_, s_.engine.config.block_size, l.affinity);
    sched::Request request{
        .user = ref,
        .pool = l.pool,
        .klass = sched_class_[spec.klass],
        .tenant = spec.tenant,
        .cost_tokens = static_cast<int64_t>(spec.prompt_tokens()) + l.spec.max_tokens,
        .prompt_tokens = spec.prompt_tokens(),
        .deadline =
            spec.deadline != kNever ? std::optional(to_time_point(spec.deadline)) : std::nullopt,
        .supersede_key = key != 0
                             ? std::string_view(reinterpret_cast<const char*>(&key), sizeof key)
                             : std::string_view(),
        .prefix_blocks = l.affinity,
        .adapter = spec.adapter};
    auto admitted = scheds_[l.replica].enqueue(request, time_point());
    if (!admitted) {
      finish(l, Outcome::kRejected);
      return;
    }
    l.handle = admitted->handle;
    if (const auto& old = admitted->superseded) {
      if (Live* o = find(old->user)) {
        if (old->in_flight && types_through(*o, l) &&
            scheds_[l.replica].inherit(l.handle, o->handle, time_point())) {
          hand_over(*o, l);
        } else if (old->in_flight) {
          if (o->engine != kNone) waste(*o);
          scheds_[o->replica].complete(o->handle, time_point());
        }
        finish(*o, Outcome::kSuperseded);
      }
    }
    dirty_ = true;
  }

  // Typing through (core/typing_through.hpp), in tokens: `heir`'s prompt is
  // `old`'s plus the first typed_tokens of its generation, and those have
  // been generated already; the parameters agree (same class and budget).
  bool types_through(const Live& old, const Live& heir) const {
    const typing::Shape old_shape{.max_tokens = old.spec.max_tokens};
    const typing::Shape heir_shape{.max_tokens = heir.spec.max_tokens};
    return old.engine != kNone && old.replica == heir.replica && heir.spec.extends != 0 &&
           heir.spec.extends == old.spec.text && old.spec.klass == heir.spec.klass &&
           old.delivered >= heir.spec.typed_tokens && typing::compatible(old_shape, heir_shape);
  }

  // The heir takes over old's engine run: the tokens generated past what
  // was typed reach its client at once, the rest as they come.
  void hand_over(Live& old, Live& heir) {
    heir.engine = old.engine;
    heir.run_id = old.run_id;
    heir.run_first_token = old.run_first_token;
    heir.spec.output_tokens = old.spec.output_tokens - heir.spec.typed_tokens;
    heir.delivered = old.delivered - heir.spec.typed_tokens;
    if (heir.delivered > 0) heir.first_token = heir.last_token = now_;
    heirs_[heir.run_id] = static_cast<uint32_t>(&heir - lives_.data());
    old.engine = kNone;
    ++typed_through_;
  }

  // The Live an engine event of run `id` belongs to now.
  Live& owner(engine::RequestId id) {
    if (heirs_.empty()) return lives_[static_cast<uint32_t>(id)];
    const auto it = heirs_.find(id);
    return lives_[it != heirs_.end() ? it->second : static_cast<uint32_t>(id)];
  }

  // A run handed over ends (or is aborted) with `l`: its forwarding goes.
  void forget_handover(const Live& l) {
    if (l.engine == kNone || heirs_.empty()) return;
    const auto it = heirs_.find(l.run_id);
    if (it != heirs_.end() && it->second == static_cast<uint32_t>(&l - lives_.data())) heirs_.erase(it);
  }

  void client_abort(Live& l) {
    if (l.engine != kNone) count_abandoned(l);
    if (scheds_.empty()) {
      if (l.engine != kNone) waste(l);
    } else if (scheds_[l.replica].cancel(l.handle) == sched::CancelOutcome::kReleased &&
               l.engine != kNone) {
      waste(l);
    }
    finish(l, Outcome::kCancelled);
    dirty_ = true;
  }

  void end_step(uint32_t e) {
    stepping_[e] = false;
    due_.push_back(e);
    const engine::StepResult& step = *last_step_[e];
    // A step's requests are scattered over lives_: every one's record is
    // loaded at once, one wait for memory instead of one per token.
    if (heirs_.empty()) {
      for (const engine::RequestEvent& ev : step.events) {
        const Live& l = lives_[static_cast<uint32_t>(ev.id)];
        __builtin_prefetch(&l.spec);
        __builtin_prefetch(&l.active);
      }
    }
    for (const engine::RequestEvent& ev : step.events) {
      if (!ev.token) continue;
      Live& l = owner(ev.id);
      // Tokens of a run aborted during this step never reach anyone.
      if (!l.active || l.run_id != ev.id) continue;
      if (l.first_token < 0) l.first_token = now_;
      // The run's prompt is prefilled: the gateway learns it from the first
      // streamed token.
      if (!scheds_.empty() && l.run_first_token) {
        l.run_first_token = false;
        count_first(l);
        scheds_[l.replica].first_token(l.handle, time_point());
        dirty_ = true;
      }
      if (l.last_token >= 0) collector_.token_gap(l.spec.klass, l.spec.tenant, now_ - l.last_token);
      l.last_token = now_;
      if (l.run_last_token >= 0) count_gap(e, now_ - l.run_last_token);
      l.run_last_token = now_;
      ++l.delivered;
      if (ev.finished) {
        --in_engine_[e];
        forget_handover(l);
        l.engine = kNone;
        if (!scheds_.empty()) {
          scheds_[l.replica].complete(l.handle, time_point(),
                                      static_cast<int64_t>(l.spec.prompt_tokens()) + l.delivered);
          dirty_ = true;
        }
        finish(l, Outcome::kCompleted);
      }
    }
  }

  void poll(sched::TimePoint at) {
    last_tp_ = std::max(last_tp_, at);
    dirty_ = false;
    for (sched::Scheduler& sc : scheds_) poll_replica(sc);
  }

  void poll_replica(sched::Scheduler& sc) {
    for (bool again = true; again;) {
      actions_.clear();
      sc.poll(last_tp_, actions_);
      for (const sched::Expired& x : actions_.expired) {
        if (Live* l = find(x.user)) finish(*l, Outcome::kDropped);
      }
      for (const sched::Dispatch& d : actions_.dispatches) {
        Live* l = find(d.user);
        if (l == nullptr) continue;
        if (d.preemptions == 0) note_affinity(*l, layout_.first[d.pool] + d.backend);
        ++dispatches_;
        borrowed_dispatches_ += d.pool != l->pool;
        if (!submit(*l, layout_.first[d.pool] + d.backend, d.engine_priority)) {
          sc.complete(d.handle, last_tp_);
          finish(*l, Outcome::kDropped);
        }
      }
      // Preemption: abort, keep what the client has, continue later from
      // prompt + delivered tokens.
      for (const sched::Preemption& p : actions_.preemptions) {
        Live* l = find(p.user);
        if (l == nullptr || l->engine == kNone) continue;
        wasted_preempt_ += abort_in_engine(*l, engine::Engine::AbortCause::kPreempt).first;
        ++gateway_preemptions_;
        const int64_t remaining =
            static_cast<int64_t>(l->spec.prompt_tokens()) + l->spec.max_tokens;
        sc.requeue_preempted(l->handle, remaining, last_tp_);
      }
      again = !actions_.preemptions.empty();
    }
  }

  // Prefix agreement (issue 12): did this dispatch go to an engine that was
  // sent the deepest block of its prompt an earlier dispatch (through any
  // replica) carried?
  void note_affinity(const Live& l, uint32_t engine) {
    const uint64_t bit = uint64_t{1} << (engine % 64);
    for (auto it = l.affinity.rbegin(); it != l.affinity.rend(); ++it) {
      if (const auto found = block_engine_.find(*it); found != block_engine_.end()) {
        ++prefix_seen_;
        prefix_followed_ += (found->second & bit) != 0;
        break;
      }
    }
    for (const uint64_t block : l.affinity) block_engine_[block] |= bit;
  }

  void start_due_engines() {
    for (const uint32_t e : due_) {
      if (stepping_[e] || !engines_[e].has_work()) continue;
      const engine::StepResult& step = engines_[e].step(now_);
      last_step_[e] = &step;
      if (step.scheduled_seqs == 0) continue;  // stalled: waits for an abort or submit
      stepping_[e] = true;
      busy_ += step.duration;
      interval_busy_ += step.duration;
      steps_.emplace(step.end(), e);
    }
    due_.clear();
  }

  // Adaptive capacity: one controller per replica and engine, each
  // replica's limit from the start.
  void start_adaptive() {
    for (uint32_t r = 0; r < scheds_.size(); ++r) {
      for (uint32_t e = 0; e < engines_.size(); ++e) {
        capacity_.emplace_back(adaptive_, s_.engine.max_concurrency, time_point());
        const uint32_t pool = layout_.pool_of_engine(e);
        scheds_[r].set_backend_state(pool, e - layout_.first[pool],
                                     {.max_in_flight = capacity_.back().base(),
                                      .extra_slots = capacity_.back().extra()});
      }
    }
    gaps_.assign(engines_.size(), {});
    gap_target_s_.assign(layout_.first.size(), std::chrono::duration<double>(adaptive_.itl_target).count());
    gap_classes_.assign(layout_.first.size(), {});
  }

  void count_gap(uint32_t e, double gap_s) {
    if (gaps_.empty()) return;
    sched::GapCounts& g = gaps_[e];
    const bool within = gap_s <= gap_target_s_[layout_.pool_of_engine(e)];
    ++g.total;
    g.within += within;
    g.seconds += gap_s;
    g.within_seconds += within ? gap_s : 0;
  }

  // Where the first tokens and abandoned runs of `l`'s engine run are
  // counted: non-background classes that declare a ttft_slo, with adaptive
  // capacity on (as the live relay's first_token_bound); null otherwise.
  sched::GapCounts* judged_runs(const Live& l) {
    if (gaps_.empty()) return nullptr;
    const ClassSpec& c = s_.classes[l.spec.klass];
    return c.slo.ttft_ms && !c.policy.background ? &gaps_[l.engine] : nullptr;
  }

  // A run's first token against its class's ttft_slo: what the engine
  // added to its wait.
  void count_first(const Live& l) {
    sched::GapCounts* g = judged_runs(l);
    if (g == nullptr) return;
    ++g->firsts;
    g->firsts_slow += (now_ - l.run_submitted) * 1000 > adaptive_.ttft_headroom * *s_.classes[l.spec.klass].slo.ttft_ms;
  }

  // The client of a run on its engine left.
  void count_abandoned(const Live& l) {
    if (sched::GapCounts* g = judged_runs(l)) ++g->abandoned;
  }

  // Staged degradation (hybrid and its variants): each replica's view of each pool,
  // as the gateway's OverloadControl keeps it, at the gateway's defaults.
  void start_degradation(uint64_t seed) {
    degradation_ = s_.degradation;
    degrade_actions_ = overload::default_class_actions(scheds_.front().config().classes, degradation_.cap_max_tokens);
    stages_.assign(scheds_.size() * layout_.first.size(), overload::StageController(degradation_));
    engine_load_.assign(scheds_.size() * engines_.size(), {});
    cache_windows_.assign(engines_.size(), {});
    pool_load_.assign(scheds_.size() * layout_.first.size(), 0);
    degrade_rng_.seed(splitmix64(seed ^ 0xde9'2ade));
  }

  // What the request's pool's stage does to it on arrival; false when it was
  // shed (and finished).
  bool degrade(Live& l) {
    const uint32_t pool = l.pool;
    const overload::StageController& stage = stages_[l.replica * layout_.first.size() + pool];
    if (stage.stage() == overload::Stage::kNormal) return true;
    const uint16_t klass = sched_class_[l.spec.klass];
    const double draw = std::uniform_real_distribution<double>(0, 1)(degrade_rng_);
    const overload::Decision d =
        overload::decide(stage.stage(), degrade_actions_[klass], pool_load_[l.replica * layout_.first.size() + pool],
                         scheds_[l.replica].config().classes[klass].weight, degradation_.shed_at,
                         degradation_.max_shed, draw);
    if (d.shed) {
      l.degraded = Degraded::kShed;
      finish(l, Outcome::kRejected);
      return false;
    }
    if (d.cap && l.spec.max_tokens > *d.cap) {
      const auto cap = static_cast<uint32_t>(*d.cap);
      l.spec.max_tokens = cap;
      if (l.spec.output_tokens > cap) {
        l.spec.output_tokens = cap;
        l.degraded = Degraded::kCapped;  // the answer it gets is cut
      }
    }
    // The variant answers it whole, at its own quality: degraded too.
    if (d.variant && layout_.variant_pool) {
      l.pool = *layout_.variant_pool;
      l.degraded = Degraded::kVariant;
    }
    return true;
  }

  // Each replica's load coefficient per engine and pool from this scrape
  // (core/overload/load_coefficient.hpp), its stages stepped, background
  // classes paused from the elevated stage; true when a pause was lifted.
  bool observe_load() {
    const std::size_t pools = layout_.first.size();
    for (uint32_t e = 0; e < engines_.size(); ++e) {
      const engine::EngineStats st = engines_[e].stats();
      const std::optional<double> hit_rate = cache_windows_[e].update(
          PrefixCacheCounts{static_cast<double>(st.prefix_cache_queries_total),
                            static_cast<double>(st.prefix_cache_hits_total)});
      const uint32_t pool = layout_.pool_of_engine(e);
      const uint32_t b = e - layout_.first[pool];
      for (uint32_t r = 0; r < scheds_.size(); ++r) {
        overload::BackendView view = overload::scheduler_view(scheds_[r], pool, b, time_point());
        view.fresh = true;
        view.engine_running = st.num_requests_running;
        view.engine_waiting = st.num_requests_waiting;
        view.kv_usage = st.kv_cache_usage_perc;
        view.cache_hit_rate = hit_rate;
        if (const auto l = overload::combine(overload::load_terms(view), degradation_)) {
          engine_load_[r * engines_.size() + e].update(*l, time_point(), degradation_.smoothing);
        }
      }
    }
    bool resumed = false;
    pool_load_.resize(scheds_.size() * pools);
    for (uint32_t r = 0; r < scheds_.size(); ++r) {
      for (uint32_t pool = 0; pool < pools; ++pool) {
        loads_.clear();
        for (uint32_t b = 0; b < layout_.count[pool]; ++b) {
          const uint32_t e = layout_.first[pool] + b;
          loads_.push_back({engine_load_[r * engines_.size() + e].value(), scheds_[r].backend_limit(pool, b)});
        }
        const auto load = overload::pool_load(loads_);
        if (!load) continue;
        pool_load_[r * pools + pool] = *load;
        overload::StageController& c = stages_[r * pools + pool];
        const overload::Stage before = c.stage();
        stage_seconds_[static_cast<std::size_t>(before)] += s_.engine.scrape_ms / 1000;
        if (c.step(*load, time_point()) == before) continue;
        for (sched::ClassId k = 0; k < degrade_actions_.size(); ++k) {
          const bool paused = overload::paused_at(c.stage(), degrade_actions_[k]);
          resumed |= scheds_[r].set_class_paused(pool, k, paused) && !paused;
        }
      }
    }
    return resumed;
  }

  // Each pool's gap target until the next scrape: the tightest tpot_slo of
  // the non-background classes that have had work on it in any replica.
  void set_gap_targets() {
    for (uint32_t pool = 0; pool < gap_target_s_.size(); ++pool) {
      gap_target_s_[pool] = sched::pool_gap_target(adaptive_, scheds_, pool, gap_classes_[pool]).count();
    }
  }

  // What replica r's controller for engine e sets after this scrape: its
  // slot limit and the extra slots for background work (none without
  // adaptive capacity: max_concurrency applies).
  void adapt(uint32_t r, uint32_t e, const engine::EngineStats& st, sched::BackendSignal& signal) {
    if (capacity_.empty()) return;
    sched::CapacityController& c = capacity_[r * engines_.size() + e];
    const uint32_t pool = layout_.pool_of_engine(e);
    const sched::Occupancy seen = sched::occupancy_of(scheds_[r], pool, e - layout_.first[pool]);
    c.engine(st.num_requests_waiting, st.kv_cache_usage_perc, st.num_requests_running);
    c.gaps(gaps_[e]);
    c.occupancy(seen);
    c.update(time_point());
    signal.max_in_flight = c.base();
    signal.extra_slots = c.extra();
    signal.engine_share = c.engine_share();
  }

  void scrape_signals() {
    bool changed = false;
    for (uint32_t e = 0; e < engines_.size(); ++e) {
      const engine::EngineStats st = engines_[e].stats();
      const bool saturated = st.num_requests_waiting > s_.engine.max_waiting ||
                             st.kv_cache_usage_perc > s_.engine.kv_threshold;
      const uint32_t pool = layout_.pool_of_engine(e);
      for (uint32_t r = 0; r < scheds_.size(); ++r) {
        sched::BackendSignal signal{.saturated = saturated, .engine_running = st.num_requests_running};
        adapt(r, e, st, signal);
        changed = scheds_[r].set_backend_state(pool, e - layout_.first[pool], signal) || changed;
      }
      if (!gaps_.empty()) gaps_[e] = {};
    }
    if (!gap_target_s_.empty()) set_gap_targets();
    if (degrade_) changed = observe_load() || changed;
    if (changed) {
      poll(time_point());
      start_due_engines();
    }
  }

  void take_sample(double t) {
    Sample out{.t = t};
    for (uint32_t e = 0; e < engines_.size(); ++e) {
      const engine::EngineStats st = engines_[e].stats();
      out.running += st.num_requests_running;
      running_sum_[e] += st.num_requests_running;
      if (scheds_.empty()) out.queued += st.num_requests_waiting;
    }
    for (const sched::Scheduler& sc : scheds_) out.queued += static_cast<double>(sc.queued());
    out.utilisation =
        std::min(1.0, interval_busy_ / (sample_dt_ * static_cast<double>(engines_.size())));
    if (degrade_) {
      out.load = *std::max_element(pool_load_.begin(), pool_load_.end());
      out.stage = 0;
      for (const overload::StageController& c : stages_) out.stage = std::max(out.stage, double(c.stage()));
    }
    interval_busy_ = 0;
    series_.push_back(out);
  }

  EngineTotals engine_totals(double end) const {
    // Every step's token budget (max_num_batched_tokens: prefill and decode
    // tokens alike) filled, at the step time a full prefill step takes.
    EngineTotals out{.duration_s = end,
                     .busy_s = busy_,
                     .engines = static_cast<uint32_t>(engines_.size()),
                     .token_rate = engine::prefill_tokens_per_s(s_.engine.config),
                     .wasted_cancel_tokens = wasted_cancel_,
                     .wasted_cancel_prefill = wasted_cancel_prefill_,
                     .wasted_preempt_tokens = wasted_preempt_,
                     .gateway_preemptions = gateway_preemptions_,
                     .dispatches = dispatches_,
                     .borrowed_dispatches = borrowed_dispatches_,
                     .typed_through = typed_through_,
                     .prefix_seen = prefix_seen_,
                     .prefix_followed = prefix_followed_,
                     .adapter_runs = adapter_runs_};
    for (const engine::Engine& engine : engines_) {
      const engine::EngineStats st = engine.stats();
      out.work_tokens += st.prefill_tokens_computed_total + st.generation_tokens_total;
      out.reused_cancel_tokens += st.reused_after_cancel_tokens_total;
      out.reused_preempt_tokens += st.reused_after_preempt_tokens_total;
      out.engine_preemptions += st.num_preemptions_total;
      out.lora_loads += st.lora_loads_total;
    }
    const double total = std::accumulate(running_sum_.begin(), running_sum_.end(), 0.0);
    const double busiest = running_sum_.empty() ? 0 : *std::max_element(running_sum_.begin(), running_sum_.end());
    out.load_spread = total > 0 ? busiest * static_cast<double>(engines_.size()) / total : 1;
    return out;
  }

  using Timer = std::pair<double, uint64_t>;  // time, engine or request ref
  using MinHeap = std::priority_queue<Timer, std::vector<Timer>, std::greater<>>;

  const Scenario& s_;
  Workload workload_;
  Collector collector_;
  std::string policy_;
  std::vector<uint16_t> sched_class_;      // scheduler class of each scenario class
  PoolLayout layout_;                      // engines and classes per pool
  std::vector<sched::Scheduler> scheds_;   // one per gateway replica; none: direct
  sched::AdaptiveCapacityConfig adaptive_;  // the scenario's, enabled only for gateway policies
  // Staged degradation (hybrid and its variants): the gateway's defaults, per replica
  // and pool its stage and L, per replica and engine its smoothed L, per
  // engine its prefix-cache window.
  bool degrade_ = false;
  overload::DegradationConfig degradation_;  // the scenario's
  std::vector<overload::ClassActions> degrade_actions_;  // per scheduler class
  std::vector<overload::StageController> stages_;        // replica-major, per pool
  std::vector<double> pool_load_;                        // replica-major, per pool
  std::vector<overload::Smoothed> engine_load_;          // replica-major, per engine
  std::vector<overload::CacheWindow> cache_windows_;     // per engine
  std::vector<overload::BackendLoad> loads_;             // scratch: one pool's engines, for its mean
  std::mt19937_64 degrade_rng_;  // shedding's draws, from the run's seed
  std::array<double, 4> stage_seconds_{};  // per stage, over replicas and pools
  std::vector<double> gap_target_s_;  // per pool until the next scrape (adaptive capacity)
  std::vector<std::vector<bool>> gap_classes_;  // per pool: the classes its gap target counts
  std::vector<sched::CapacityController> capacity_;  // replica-major, per engine; empty: off
  std::vector<sched::GapCounts> gaps_;  // per engine since the last scrape
  // Prefix agreement: the engines (bit e % 64) each prefix block was sent
  // to, and of the dispatches whose prompt shared a block with an earlier
  // one, how many went to an engine the deepest such block had gone to.
  std::unordered_map<uint64_t, uint64_t> block_engine_;
  std::vector<double> running_sum_;  // per engine: running requests summed over the samples
  uint64_t prefix_seen_ = 0, prefix_followed_ = 0;
  uint64_t adapter_runs_ = 0;  // runs of LoRA requests submitted to engines
  uint64_t dispatches_ = 0, borrowed_dispatches_ = 0;  // all, and those onto a lender's engine
  sched::Actions actions_;
  std::vector<engine::Engine> engines_;
  std::vector<const engine::StepResult*> last_step_;  // valid while stepping_
  std::vector<bool> stepping_;
  std::vector<uint32_t> in_engine_;  // requests submitted and not ended, per engine
  std::vector<uint32_t> due_;        // engines that may need a step now
  MinHeap steps_;                    // step ends
  MinHeap aborts_;                   // client patience timers
  std::vector<Live> lives_;
  std::vector<uint64_t> scratch_blocks_;  // a prompt's engine block hashes, for its affinity blocks
  std::vector<uint32_t> free_;
  std::unordered_map<uint64_t, uint64_t> newest_;  // direct: supersede key -> newest ref
  // Runs handed over by typing through: engine run id -> the heir's slot
  // (the run id names the slot it was submitted for).
  std::unordered_map<engine::RequestId, uint32_t> heirs_;
  uint64_t typed_through_ = 0;
  double now_ = 0;
  sched::TimePoint last_tp_{};
  bool dirty_ = false;  // scheduler state changed since the last poll
  uint64_t runs_ = 0;
  uint32_t rotation_ = 0;
  double busy_ = 0, interval_busy_ = 0, sample_dt_ = 1;
  uint64_t wasted_cancel_ = 0, wasted_cancel_prefill_ = 0, wasted_preempt_ = 0,
           gateway_preemptions_ = 0;
  std::vector<Sample> series_;
};

}  // namespace

PolicySummary run_virtual(const Scenario& scenario, std::string_view policy, uint64_t seed) {
  return VirtualRun(scenario, policy, seed).run();
}

}  // namespace arbiter::bench
