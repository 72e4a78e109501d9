// A small Prometheus registry: counters, gauges and histograms with labels,
// rendered in the text exposition format (version 0.0.4). Debian has no C++
// Prometheus client, so this is ours. Updates are lock-free atomics; looking
// up a labelled child is one hash lookup under the family's mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace arbiter::metrics {

class Counter {
 public:
  void inc(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  // For counters mirrored from another monotonic source (scheduler counts).
  void set(uint64_t v) { value_.store(v, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// A counter of a quantity with fractions (a cost): only ever added to.
class RealCounter {
 public:
  void add(double v) { value_.fetch_add(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  void add(double v) { value_.fetch_add(v, std::memory_order_relaxed); }
  void sub(double v) { value_.fetch_sub(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  explicit Histogram(const std::vector<double>& bounds);
  void observe(double v);

  struct Snapshot {
    std::vector<uint64_t> cumulative;  // one per bound, then +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot snapshot() const;
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  std::vector<double> bounds_;                        // upper bounds, ascending
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // per bound + overflow
  std::atomic<double> sum_{0};
  std::atomic<uint64_t> count_{0};
};

// Latency buckets in seconds, from 100 us to 60 s.
const std::vector<double>& latency_buckets();

enum class Kind { kCounter, kGauge, kHistogram };

class FamilyBase {
 public:
  FamilyBase(std::string name, std::string help, std::vector<std::string> labels, Kind kind)
      : name_(std::move(name)), help_(std::move(help)), labels_(std::move(labels)), kind_(kind) {}
  virtual ~FamilyBase() = default;
  virtual void render(std::string& out) const = 0;

 protected:
  void render_header(std::string& out) const;
  // name{l1="v1",...}suffix-less label block for one child (extra: "le" etc.)
  std::string label_block(const std::vector<std::string>& values, std::string_view extra = {}) const;

  std::string name_;
  std::string help_;
  std::vector<std::string> labels_;
  Kind kind_;
};

template <class Metric>
class Family final : public FamilyBase {
 public:
  template <class... Args>
  Family(std::string name, std::string help, std::vector<std::string> labels, Kind kind,
         Args... metric_args)
      : FamilyBase(std::move(name), std::move(help), std::move(labels), kind),
        factory_([=] { return std::make_unique<Metric>(metric_args...); }) {}

  // The child for these label values (in the family's label order); created
  // on first use and never removed, so references stay valid.
  // A lookup allocates nothing once the child exists.
  Metric& with(std::initializer_list<std::string_view> values) {
    // Hashed on the values, each length-prefixed (unambiguous for any bytes);
    // the ordered map below is for rendering.
    thread_local std::string key;
    key.clear();
    for (const std::string_view v : values) {
      const auto n = static_cast<uint32_t>(v.size());
      key.append(reinterpret_cast<const char*>(&n), sizeof n).append(v);
    }
    std::lock_guard lock(mu_);
    if (auto it = index_.find(key); it != index_.end()) return *it->second;
    auto it = children_.emplace(std::vector<std::string>(values.begin(), values.end()), factory_()).first;
    index_.emplace(key, it->second.get());
    return *it->second;
  }

  void render(std::string& out) const override;

 private:
  void render_values(std::string& out) const;  // Gauge, RealCounter: one number each

  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<Metric>> children_;  // by labels: render order
  std::unordered_map<std::string, Metric*> index_;  // with(): label key -> child
  std::function<std::unique_ptr<Metric>()> factory_;
};

class Registry {
 public:
  Family<Counter>& counter(std::string name, std::string help, std::vector<std::string> labels);
  Family<RealCounter>& real_counter(std::string name, std::string help, std::vector<std::string> labels);
  Family<Gauge>& gauge(std::string name, std::string help, std::vector<std::string> labels);
  Family<Histogram>& histogram(std::string name, std::string help, std::vector<std::string> labels,
                               const std::vector<double>& bounds = latency_buckets());
  std::string render() const;

 private:
  template <class Metric, class... Args>
  Family<Metric>& add(std::string name, std::string help, std::vector<std::string> labels, Kind kind,
                      Args... metric_args) {
    auto f = std::make_unique<Family<Metric>>(std::move(name), std::move(help), std::move(labels), kind,
                                              metric_args...);
    auto& ref = *f;
    families_.push_back(std::move(f));
    return ref;
  }

  std::vector<std::unique_ptr<FamilyBase>> families_;  // in registration order
};

// Escapes a label value for the text format (backslash, quote, newline).
std::string escape_label_value(std::string_view v);

}  // namespace arbiter::metrics
