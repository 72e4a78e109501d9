#include "core/overload/load_coefficient.hpp"

#include <algorithm>
#include <cmath>

namespace arbiter::overload {
namespace {

double unit(double x) { return std::isfinite(x) ? std::clamp(x, 0.0, 1.0) : 1.0; }

}  // namespace

LoadTerms load_terms(const BackendView& view) {
  const double slots = std::max<uint32_t>(view.slots, 1);
  LoadTerms terms;
  double running = view.own_running;
  double waiting = view.queued;
  if (view.fresh) {
    if (view.engine_running) running = std::max(running, *view.engine_running - view.own_background);
    if (view.engine_waiting) waiting += std::max(0.0, *view.engine_waiting);
    if (view.kv_usage) terms.kv = unit(*view.kv_usage);
    if (view.cache_hit_rate) terms.cache_miss = unit(1 - *view.cache_hit_rate);
  }
  // A full prefill queue is a busy engine, while work waits for it.
  terms.busy = unit(std::max(running / slots, view.queued > 0 ? view.prefill_fill : 0.0));
  terms.queue = unit(waiting / slots);
  return terms;
}

std::optional<double> combine(const LoadTerms& terms, const LoadWeights& weights) {
  double sum = 0;
  double weight = 0;
  const auto add = [&](const std::optional<double>& term, double w) {
    if (!term || w <= 0) return;
    sum += w * *term;
    weight += w;
  };
  add(terms.busy, weights.busy);
  add(terms.kv, weights.kv);
  add(terms.queue, weights.queue);
  add(terms.cache_miss, weights.cache_miss);
  if (weight <= 0) return std::nullopt;
  return unit(sum / weight);
}

std::optional<double> window_hit_rate(const std::optional<PrefixCacheCounts>& before,
                                      const std::optional<PrefixCacheCounts>& now) {
  if (!before || !now) return std::nullopt;
  const double queries = now->queries - before->queries;
  const double hits = now->hits - before->hits;
  if (!(queries > 0) || hits < 0) return std::nullopt;  // no lookups, or a counter reset
  return unit(hits / queries);
}

std::optional<double> CacheWindow::update(const std::optional<PrefixCacheCounts>& now) {
  if (auto rate = window_hit_rate(counts_, now)) rate_ = rate;
  if (now) counts_ = now;
  return rate_;
}

double Smoothed::update(double sample, sched::TimePoint now, sched::Duration tau) {
  if (!value_ || tau <= sched::Duration::zero()) {
    value_ = sample;
  } else {
    const double dt = std::chrono::duration<double>(std::max(now - last_, sched::Duration::zero())).count();
    *value_ += (1 - std::exp(-dt / std::chrono::duration<double>(tau).count())) * (sample - *value_);
  }
  last_ = std::max(last_, now);
  return *value_;
}

std::optional<double> pool_load(std::span<const BackendLoad> backends) {
  double sum = 0;
  double slots = 0;
  for (const BackendLoad& b : backends) {
    if (!b.load) continue;
    const double w = std::max<uint32_t>(b.slots, 1);
    sum += w * *b.load;
    slots += w;
  }
  if (slots <= 0) return std::nullopt;
  return sum / slots;
}

}  // namespace arbiter::overload
