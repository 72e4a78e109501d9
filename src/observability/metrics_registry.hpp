// A small Prometheus registry: counters, gauges and histograms with labels,
// rendered in the text exposition format (version 0.0.4). Debian has no C++
// Prometheus client, so this is ours. Updates are lock-free atomics; looking
// up a labelled child is one hash lookup under the family's mutex. A render
// holds that mutex only to list the children (their label text is made once,
// when the child is), so a scrape of thousands of tenants' series never
// stalls the requests that update them.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
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
  void snapshot(Snapshot& out) const;  // into `out`, reusing its storage
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
  const std::string& name() const { return name_; }
  Kind kind() const { return kind_; }
  const std::vector<std::string>& labels() const { return labels_; }

 protected:
  void render_header(std::string& out) const;
  // l1="v1",... for one child's label values (escaped), without braces.
  std::string label_text(std::initializer_list<std::string_view> values) const;
  // name+suffix{labels[,extra]} value\n (no braces when both are empty).
  void render_line(std::string& out, std::string_view suffix, std::string_view labels, std::string_view extra,
                   std::string_view value) const;

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
    auto it = children_
                  .emplace(std::vector<std::string>(values.begin(), values.end()),
                           Child{label_text(values), factory_()})
                  .first;
    index_.emplace(key, it->second.metric.get());
    return *it->second.metric;
  }

  void render(std::string& out) const override;

 private:
  struct Child {
    std::string labels;  // label_text(), made once
    std::unique_ptr<Metric> metric;
  };
  // The children in render order, copied under the lock: each stays where
  // it is (never removed), so rendering them needs no lock. The map is
  // walked only when it has more children than the last order listed.
  std::vector<const Child*> listed() const;
  void render_values(std::string& out) const;  // one number each

  mutable std::mutex mu_;
  std::map<std::vector<std::string>, Child> children_;  // by labels: render order
  std::unordered_map<std::string, Metric*> index_;       // with(): label key -> child
  mutable std::vector<const Child*> order_;              // children_ in order, as of the last listed()
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
  // A family registered again under its name (a config reload builds the
  // parts that register theirs anew) is the same family: its children, and
  // so its counters, carry over. The same name with another type or other
  // labels is a bug.
  template <class Metric, class... Args>
  Family<Metric>& add(std::string name, std::string help, std::vector<std::string> labels, Kind kind,
                      Args... metric_args) {
    std::lock_guard lock(mu_);
    for (const auto& existing : families_) {
      if (existing->name() != name) continue;
      auto* same = dynamic_cast<Family<Metric>*>(existing.get());
      if (same == nullptr || existing->kind() != kind || existing->labels() != labels) {
        throw std::logic_error("metric family " + name + " registered twice with different types or labels");
      }
      return *same;
    }
    auto f = std::make_unique<Family<Metric>>(std::move(name), std::move(help), std::move(labels), kind,
                                              metric_args...);
    auto& ref = *f;
    families_.push_back(std::move(f));
    return ref;
  }

  mutable std::mutex mu_;  // families_: registration may run while a scrape renders
  std::vector<std::unique_ptr<FamilyBase>> families_;  // in registration order
  mutable std::atomic<std::size_t> last_size_{0};      // the last render's size: the next one's reserve
};

// Escapes a label value for the text format (backslash, quote, newline).
std::string escape_label_value(std::string_view v);

}  // namespace arbiter::metrics
