#include "observability/metrics_registry.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include <fmt/format.h>

namespace arbiter::metrics {

Histogram::Histogram(const std::vector<double>& bounds)
    : bounds_(bounds), buckets_(new std::atomic<uint64_t>[bounds.size() + 1]) {
  for (std::size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0);
}

void Histogram::observe(double v) {
  // O(log buckets); bounds are few (~20).
  const auto i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  uint64_t running = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    s.cumulative.push_back(running);
  }
  s.sum = sum_.load(std::memory_order_relaxed);
  s.count = running;  // consistent with the buckets even while observing
  return s;
}

const std::vector<double>& latency_buckets() {
  static const std::vector<double> kBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                               0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                               1,      2.5,     5,      10,    30,     60};
  return kBuckets;
}

std::string escape_label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

namespace {
std::string format_number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}
const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kCounter: return "counter";
    case Kind::kGauge: return "gauge";
    case Kind::kHistogram: return "histogram";
  }
  return "untyped";
}
}  // namespace

void FamilyBase::render_header(std::string& out) const {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name_, help_, name_,
                 kind_name(kind_));
}

std::string FamilyBase::label_block(const std::vector<std::string>& values,
                                    std::string_view extra) const {
  if (labels_.empty() && extra.empty()) return {};
  std::string out = "{";
  for (std::size_t i = 0; i < labels_.size(); ++i) {
    if (i) out += ',';
    fmt::format_to(std::back_inserter(out), "{}=\"{}\"", labels_[i], escape_label_value(values[i]));
  }
  if (!extra.empty()) {
    if (!labels_.empty()) out += ',';
    out += extra;
  }
  out += '}';
  return out;
}

template <>
void Family<Counter>::render(std::string& out) const {
  render_header(out);
  std::lock_guard lock(mu_);
  for (const auto& [values, c] : children_) {
    fmt::format_to(std::back_inserter(out), "{}{} {}\n", name_, label_block(values), c->value());
  }
}

// One real number per child: gauges and real counters alike.
template <class Metric>
void Family<Metric>::render_values(std::string& out) const {
  render_header(out);
  std::lock_guard lock(mu_);
  for (const auto& [values, m] : children_) {
    fmt::format_to(std::back_inserter(out), "{}{} {}\n", name_, label_block(values), format_number(m->value()));
  }
}

template <>
void Family<Gauge>::render(std::string& out) const {
  render_values(out);
}

template <>
void Family<RealCounter>::render(std::string& out) const {
  render_values(out);
}

template <>
void Family<Histogram>::render(std::string& out) const {
  render_header(out);
  std::lock_guard lock(mu_);
  for (const auto& [values, h] : children_) {
    const auto snap = h->snapshot();
    const auto& bounds = h->bounds();
    for (std::size_t i = 0; i <= bounds.size(); ++i) {
      const std::string le =
          "le=\"" + (i < bounds.size() ? format_number(bounds[i]) : std::string("+Inf")) + "\"";
      fmt::format_to(std::back_inserter(out), "{}_bucket{} {}\n", name_, label_block(values, le),
                     snap.cumulative[i]);
    }
    fmt::format_to(std::back_inserter(out), "{}_sum{} {}\n", name_, label_block(values),
                   format_number(snap.sum));
    fmt::format_to(std::back_inserter(out), "{}_count{} {}\n", name_, label_block(values), snap.count);
  }
}

Family<Counter>& Registry::counter(std::string name, std::string help, std::vector<std::string> labels) {
  return add<Counter>(std::move(name), std::move(help), std::move(labels), Kind::kCounter);
}

Family<RealCounter>& Registry::real_counter(std::string name, std::string help, std::vector<std::string> labels) {
  return add<RealCounter>(std::move(name), std::move(help), std::move(labels), Kind::kCounter);
}

Family<Gauge>& Registry::gauge(std::string name, std::string help, std::vector<std::string> labels) {
  return add<Gauge>(std::move(name), std::move(help), std::move(labels), Kind::kGauge);
}

Family<Histogram>& Registry::histogram(std::string name, std::string help, std::vector<std::string> labels,
                                       const std::vector<double>& bounds) {
  return add<Histogram>(std::move(name), std::move(help), std::move(labels), Kind::kHistogram, bounds);
}

std::string Registry::render() const {
  std::string out;
  out.reserve(4096);
  for (const auto& f : families_) f->render(out);
  return out;
}

}  // namespace arbiter::metrics
