#include "observability/metrics_registry.hpp"

#include <algorithm>
#include <array>
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
  snapshot(s);
  return s;
}

void Histogram::snapshot(Snapshot& s) const {
  s.cumulative.clear();
  uint64_t running = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    s.cumulative.push_back(running);
  }
  s.sum = sum_.load(std::memory_order_relaxed);
  s.count = running;  // consistent with the buckets even while observing
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

// Into a fixed buffer, no allocation: the text exposition's numbers.
struct Number {
  std::array<char, 32> buf;
  std::size_t size = 0;
  explicit Number(uint64_t v) { size = fmt::format_to_n(buf.data(), buf.size(), "{}", v).size; }
  explicit Number(double v) {
    if (std::isinf(v)) {
      size = fmt::format_to_n(buf.data(), buf.size(), "{}", v > 0 ? "+Inf" : "-Inf").size;
    } else if (v == std::floor(v) && std::fabs(v) < 1e15) {
      size = fmt::format_to_n(buf.data(), buf.size(), "{}", static_cast<int64_t>(v)).size;
    } else {
      size = fmt::format_to_n(buf.data(), buf.size(), "{}", v).size;
    }
  }
  std::string_view view() const { return {buf.data(), size}; }
};

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

std::string FamilyBase::label_text(std::initializer_list<std::string_view> values) const {
  std::string out;
  std::size_t i = 0;
  for (const std::string_view v : values) {
    if (i == labels_.size()) break;  // more values than labels: the extra ones have no name
    if (i) out += ',';
    fmt::format_to(std::back_inserter(out), "{}=\"{}\"", labels_[i++], escape_label_value(v));
  }
  return out;
}

void FamilyBase::render_line(std::string& out, std::string_view suffix, std::string_view labels,
                             std::string_view extra, std::string_view value) const {
  out.append(name_).append(suffix);
  if (!labels.empty() || !extra.empty()) {
    out += '{';
    out.append(labels);
    if (!labels.empty() && !extra.empty()) out += ',';
    out.append(extra).append("} ");
  } else {
    out += ' ';
  }
  out.append(value) += '\n';
}

template <class Metric>
std::vector<const typename Family<Metric>::Child*> Family<Metric>::listed() const {
  std::lock_guard lock(mu_);
  if (order_.size() != children_.size()) {
    order_.clear();
    order_.reserve(children_.size());
    for (const auto& entry : children_) order_.push_back(&entry.second);
  }
  return order_;
}

// One number per child: counters, gauges and real counters alike.
template <class Metric>
void Family<Metric>::render_values(std::string& out) const {
  render_header(out);
  for (const Child* c : listed()) render_line(out, {}, c->labels, {}, Number(c->metric->value()).view());
}

template <>
void Family<Counter>::render(std::string& out) const {
  render_values(out);
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
  const std::vector<const Child*> children = listed();
  if (children.empty()) return;
  // Every child of a family has the family's bounds: their le="..." once.
  std::vector<std::string> le;
  for (const double bound : children.front()->metric->bounds()) {
    le.push_back(fmt::format("le=\"{}\"", Number(bound).view()));
  }
  le.emplace_back("le=\"+Inf\"");
  Histogram::Snapshot snap;
  for (const Child* c : children) {
    c->metric->snapshot(snap);
    for (std::size_t i = 0; i < snap.cumulative.size() && i < le.size(); ++i) {
      render_line(out, "_bucket", c->labels, le[i], Number(snap.cumulative[i]).view());
    }
    render_line(out, "_sum", c->labels, {}, Number(snap.sum).view());
    render_line(out, "_count", c->labels, {}, Number(snap.count).view());
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
  out.reserve(last_size_.load(std::memory_order_relaxed) + 4096);
  std::lock_guard lock(mu_);
  for (const auto& f : families_) f->render(out);
  last_size_.store(out.size(), std::memory_order_relaxed);
  return out;
}

}  // namespace arbiter::metrics
