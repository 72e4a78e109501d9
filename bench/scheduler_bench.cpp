// Scheduler core micro-benchmarks (issue 4).
//
// BM_DispatchCycle: steady state with 100k queued requests over 1k tenants
// and 8 classes (weights 1..8, two with a 10% min_share; hybrid policy) on
// one pool of 8 backends x 16 slots, all slots busy. One iteration =
// complete the oldest running request, enqueue a new one of the same class
// and tenant (so the queue keeps its mix), poll (exactly one dispatch
// decision). Counters: median_ns and p99_ns of single cycles, timed one by
// one with steady_clock (its ~20 ns read cost is included). No class is
// preemptible here: the cycle measures the dispatch path alone. Every class
// declares a ttft_slo, so each decision runs the SLO rescue's checks and
// each enqueue the early answer's.
// BM_DispatchCycleNoFairCap: the same with tenant_fair_cap 0.
// BM_AffinityCycle: the same with 64 backends, prefix caches and up to 64
// prefix blocks a request (prefix-affinity routing, issue 12).
// BM_PrefixBlocks8k: hashing an 8k-token prompt into its prefix blocks.
// BM_CancelRequeue: cancel a random queued request and enqueue a new one,
// at 100k queued: the O(log n) removal.
// BM_MemoryPerQueuedRequest: heap bytes (glibc mallinfo2: in-use arena bytes
// plus mmapped blocks) added by enqueueing 100k requests into an empty
// scheduler, divided by 100k; the request body is not stored by the
// scheduler, so this is all its own bookkeeping. /1 uses 24-byte supersede
// keys on every request, /0 none.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/prefix_blocks.hpp"
#include "core/scheduler.hpp"

namespace arbiter::sched {
namespace {

constexpr std::size_t kQueued = 100'000;
constexpr uint32_t kTenants = 1'000;
constexpr uint32_t kClasses = 8;

SchedulerConfig bench_config() {
  SchedulerConfig config;
  for (uint32_t c = 0; c < kClasses; ++c) {
    ClassPolicy cls;
    cls.name = "class" + std::to_string(c);
    cls.min_share = c < 2 ? 0.1 : 0.0;
    cls.weight = 1.0 + c;
    cls.max_queue_wait = std::chrono::hours(1);
    cls.ttft_slo = std::chrono::milliseconds(200 * (c + 1));
    cls.max_queue = kQueued;
    cls.max_queue_per_tenant = kQueued;
    config.classes.push_back(cls);
  }
  config.pools = {PoolSpec{
      .name = "model", .max_concurrency = std::vector<uint32_t>(8, 16), .prefill_tokens_per_s = {}}};
  return config;
}

// Pre-drawn request shapes so the timed loop does no random-number work.
struct Shapes {
  explicit Shapes(std::size_t n) {
    std::mt19937_64 rng(12345);
    for (std::size_t i = 0; i < n; ++i) {
      klass.push_back(static_cast<ClassId>(rng() % kClasses));
      tenant.push_back(static_cast<TenantId>(rng() % kTenants));
      cost.push_back(100 + static_cast<int64_t>(rng() % 4000));
    }
  }
  Request at(std::size_t i, std::string_view key = {}) const {
    const std::size_t k = i % klass.size();
    // The caller tag is the tenant: the benchmark needs nothing else back.
    return Request{.user = tenant[k],
                   .pool = 0,
                   .klass = klass[k],
                   .tenant = tenant[k],
                   .cost_tokens = cost[k],
                   .deadline = std::nullopt,
                   .supersede_key = key};
  }
  std::vector<ClassId> klass;    // class per request
  std::vector<TenantId> tenant;  // tenant per request
  std::vector<int64_t> cost;     // estimated tokens per request
};

TimePoint at_us(int64_t us) { return TimePoint(std::chrono::microseconds(us)); }

// Prompt prefix chains for the affinity cycle: kSessions chains of
// kChainBlocks blocks (an 8k-token prompt is 64 blocks of 128 tokens); a
// request uses the first 1..64 blocks of one chain.
constexpr std::size_t kSessions = 4096;
constexpr std::size_t kChainBlocks = 64;

struct Chains {
  Chains() {
    std::mt19937_64 rng(777);
    blocks.resize(kSessions * kChainBlocks);
    for (uint64_t& b : blocks) b = rng();
  }
  std::span<const uint64_t> at(std::size_t i) const {
    const std::size_t session = (i * 2654435761u) % kSessions;
    const std::size_t depth = 1 + (i * 40503u) % kChainBlocks;
    return {blocks.data() + session * kChainBlocks, depth};
  }
  std::vector<uint64_t> blocks;
};

// One cycle per iteration (complete the oldest, enqueue one like it, poll),
// with 100k queued; `prefix(i)` gives request i's prefix blocks.
template <class Prefix>
void dispatch_cycle(benchmark::State& state, Scheduler scheduler, const Prefix& prefix) {
  const Shapes shapes(1 << 16);
  Actions actions;
  std::deque<Dispatch> running;
  std::size_t next = 0;
  int64_t now_us = 0;
  const std::size_t capacity = scheduler.capacity(0);
  for (; next < kQueued + capacity; ++next) {
    Request request = shapes.at(next);
    request.prefix_blocks = prefix(next);
    benchmark::DoNotOptimize(scheduler.enqueue(request, at_us(now_us)));
  }
  scheduler.poll(at_us(now_us), actions);
  running.assign(actions.dispatches.begin(), actions.dispatches.end());

  std::vector<int64_t> samples;
  samples.reserve(1 << 22);
  for (auto _ : state) {
    now_us += 10;
    const auto begin = std::chrono::steady_clock::now();
    const Dispatch done = running.front();
    running.pop_front();
    scheduler.complete(done.handle, at_us(now_us));
    // The newcomer has the class and tenant of the request that finished,
    // so the queue keeps its mix instead of filling up with whichever class
    // has the smallest weight.
    Request request = shapes.at(next++);
    request.klass = done.klass;
    request.tenant = static_cast<TenantId>(done.user);
    request.user = done.user;
    request.prefix_blocks = prefix(next);
    benchmark::DoNotOptimize(scheduler.enqueue(request, at_us(now_us)));
    actions.clear();
    scheduler.poll(at_us(now_us), actions);
    const auto end = std::chrono::steady_clock::now();
    running.insert(running.end(), actions.dispatches.begin(), actions.dispatches.end());
    if (samples.size() < samples.capacity()) samples.push_back((end - begin).count());
  }
  if (scheduler.queued() != kQueued || scheduler.in_flight() != capacity) {
    state.SkipWithError(("not at steady state: queued " + std::to_string(scheduler.queued()) +
                         " in flight " + std::to_string(scheduler.in_flight()) + " rejected " +
                         std::to_string(scheduler.counters().total().rejected_class_full))
                            .c_str());
    return;
  }
  std::sort(samples.begin(), samples.end());
  state.counters["queued"] = static_cast<double>(scheduler.queued());
  state.counters["median_ns"] = static_cast<double>(samples[samples.size() / 2]);
  state.counters["p99_ns"] = static_cast<double>(samples[samples.size() * 99 / 100]);
}

void BM_DispatchCycle(benchmark::State& state) {
  dispatch_cycle(state, *Scheduler::create(bench_config()), [](std::size_t) { return std::span<const uint64_t>(); });
}
BENCHMARK(BM_DispatchCycle)->MinTime(2.0);

// The same with the fair-share cap off (tenant_fair_cap, on by default): what
// checking it costs a decision when nobody floods.
void BM_DispatchCycleNoFairCap(benchmark::State& state) {
  SchedulerConfig config = bench_config();
  config.tenant_fair_cap = 0;
  dispatch_cycle(state, *Scheduler::create(std::move(config)), [](std::size_t) { return std::span<const uint64_t>(); });
}
BENCHMARK(BM_DispatchCycleNoFairCap)->MinTime(2.0);

// The same cycle on a pool of 64 backends x 16 slots with prefix caches
// (500k tokens each), every request carrying up to 64 prefix blocks (an
// 8k-token prompt): each decision looks the prefix up and records it.
void BM_AffinityCycle(benchmark::State& state) {
  SchedulerConfig config = bench_config();
  config.pools[0].max_concurrency = std::vector<uint32_t>(64, 16);
  config.pools[0].prefix_cache_tokens = std::vector<uint64_t>(64, 500'000);
  const Chains chains;
  dispatch_cycle(state, *Scheduler::create(std::move(config)), [&](std::size_t i) { return chains.at(i); });
}
BENCHMARK(BM_AffinityCycle)->MinTime(2.0);

// The gateway's share of affinity: hashing an 8k-token (32 KiB) prompt.
void BM_PrefixBlocks8k(benchmark::State& state) {
  const std::string text(8192 * 4, 'x');
  std::vector<uint64_t> blocks;
  for (auto _ : state) {
    prefix_blocks(text, 0, blocks);
    benchmark::DoNotOptimize(blocks.data());
  }
}
BENCHMARK(BM_PrefixBlocks8k);

void BM_CancelRequeue(benchmark::State& state) {
  Scheduler scheduler = *Scheduler::create(bench_config());
  const Shapes shapes(1 << 16);
  std::vector<Handle> queued;
  queued.reserve(kQueued);
  std::size_t next = 0;
  for (; next < kQueued; ++next) {
    queued.push_back(scheduler.enqueue(shapes.at(next), at_us(0))->handle);
  }
  std::mt19937 rng(99);
  for (auto _ : state) {
    Handle& victim = queued[rng() % kQueued];
    benchmark::DoNotOptimize(scheduler.cancel(victim));
    victim = scheduler.enqueue(shapes.at(next++), at_us(0))->handle;
  }
  state.counters["queued"] = static_cast<double>(scheduler.queued());
}
BENCHMARK(BM_CancelRequeue)->MinTime(1.0);

std::size_t heap_in_use() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

void BM_MemoryPerQueuedRequest(benchmark::State& state) {
  const bool keyed = state.range(0) != 0;
  const Shapes shapes(1 << 16);
  std::vector<std::string> keys;
  if (keyed) {
    for (std::size_t i = 0; i < kQueued; ++i) {
      keys.push_back(std::to_string(1'000'000'000'000'000'000u + i) + "-doc");  // 24 bytes
    }
  }
  double per_request = 0;
  for (auto _ : state) {
    const std::size_t before = heap_in_use();
    {
      Scheduler scheduler = *Scheduler::create(bench_config());
      for (std::size_t i = 0; i < kQueued; ++i) {
        const std::string_view key = keyed ? std::string_view(keys[i]) : std::string_view{};
        benchmark::DoNotOptimize(scheduler.enqueue(shapes.at(i, key), at_us(0)));
      }
      per_request = static_cast<double>(heap_in_use() - before) / kQueued;
      benchmark::DoNotOptimize(scheduler);
    }
  }
  state.counters["bytes_per_request"] = per_request;
}
BENCHMARK(BM_MemoryPerQueuedRequest)->Arg(0)->Arg(1)->Iterations(1);

}  // namespace
}  // namespace arbiter::sched
