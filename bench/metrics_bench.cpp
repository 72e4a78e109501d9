// /metrics with many tenants (growth: 1k tenants). The gateway's per-tenant
// families as they are registered (gateway/gateway_metrics.hpp): the queue
// wait histogram by model, class and tenant (20 lines per child), tokens by
// kind and requests by status. BM_Render: one scrape's rendering.
// BM_ObserveWhileRendering: what a request's observe() costs while another
// thread renders without pause (a scrape that held each family's lock for
// its whole render stalled every request touching that family).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "observability/metrics_registry.hpp"

namespace arbiter::metrics {
namespace {

struct Gateway {
  Registry registry;
  Family<Histogram>& queue_wait =
      registry.histogram("arbiter_queue_wait_seconds", "Queue wait.", {"model", "class", "tenant"});
  Family<Counter>& tokens = registry.counter("arbiter_tokens_total", "Tokens.", {"model", "class", "tenant", "kind"});
  Family<Counter>& requests =
      registry.counter("arbiter_requests_total", "Requests.", {"model", "class", "tenant", "status"});
  std::vector<std::string> tenants;

  explicit Gateway(int n) {
    for (int i = 0; i < n; ++i) {
      tenants.push_back("tenant-" + std::to_string(i));
      const std::string& t = tenants.back();
      queue_wait.with({"llama-3-70b", "chat", t}).observe(0.003 * i);
      for (const char* kind : {"prompt", "completion", "cached"}) tokens.with({"llama-3-70b", "chat", t, kind}).inc(i);
      requests.with({"llama-3-70b", "chat", t, "200"}).inc();
    }
  }
};

void BM_Render(benchmark::State& state) {
  Gateway g(static_cast<int>(state.range(0)));
  std::size_t bytes = 0;
  for (auto _ : state) {
    const std::string text = g.registry.render();
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_Render)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);

void BM_ObserveWhileRendering(benchmark::State& state) {
  Gateway g(1000);
  std::atomic<bool> stop{false};
  std::thread scraper([&] {
    while (!stop.load(std::memory_order_relaxed)) benchmark::DoNotOptimize(g.registry.render().size());
  });
  // The mean hides a stall behind a render: each observe is timed, and the
  // slowest and the 99.99th percentile are reported.
  std::vector<double> ns;
  ns.reserve(1 << 22);
  std::size_t i = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    g.queue_wait.with({"llama-3-70b", "chat", g.tenants[i++ % g.tenants.size()]}).observe(0.01);
    if (ns.size() < ns.capacity()) {
      ns.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count());
    }
  }
  stop = true;
  scraper.join();
  std::sort(ns.begin(), ns.end());
  if (!ns.empty()) {
    state.counters["p9999_us"] = ns[ns.size() * 9999 / 10000] / 1000;
    state.counters["max_us"] = ns.back() / 1000;
  }
}
BENCHMARK(BM_ObserveWhileRendering)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace arbiter::metrics
