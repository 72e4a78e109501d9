// What a request reads of the configuration, fixed once built: the config
// and the lookups made from it (tenants by key or certificate name, the
// classifier, a model's pools). The gateway holds the current one in a
// RuntimeSlot; each request takes it once, at its start (Pipeline::run),
// and keeps it to its end, so a later reload can put a new one in while
// the requests in flight finish on the one they started with.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/classifier.hpp"
#include "core/config.hpp"
#include "core/tenants.hpp"

namespace arbiter {

// Model name -> its pools (indexes of config.models): one, or one per class
// list when its backends name classes.
using PoolIndex = std::unordered_map<std::string, std::vector<std::size_t>>;

struct Runtime {
  explicit Runtime(Config c);
  // Its lookups point into its config: it stays where it was built.
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const Config config;
  const TenantDirectory tenants;
  const Classifier classifier;
  const PoolIndex pool_index;
};

// The current Runtime, swapped atomically: load() is one atomic load and
// one reference count, what a request pays.
class RuntimeSlot {
 public:
  explicit RuntimeSlot(std::shared_ptr<const Runtime> first) : current_(std::move(first)) {}

  std::shared_ptr<const Runtime> load() const { return current_.load(std::memory_order_acquire); }
  void store(std::shared_ptr<const Runtime> next) { current_.store(std::move(next), std::memory_order_release); }

 private:
  std::atomic<std::shared_ptr<const Runtime>> current_;
};

}  // namespace arbiter
