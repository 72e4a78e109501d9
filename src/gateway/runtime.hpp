// What a request reads of the configuration, fixed once built: the config
// and the lookups made from it (tenants by key or certificate name, the
// classifier, a model's pools). Each config generation holds one
// (gateway/generation.hpp); each request takes the current one once, at its
// start (Pipeline::run), and keeps it to its end, so a reload can put a new
// one in while the requests in flight finish on the one they started with.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/classifier.hpp"
#include "core/config.hpp"
#include "core/string_map.hpp"
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
  // LoRA adapter name -> its base model's pools (in pool_index) and its
  // number (Config::adapter_number).
  struct AdapterRoute {
    const std::vector<std::size_t>* pools = nullptr;
    uint16_t number = 0;
  };
  const StringMap<AdapterRoute> adapters;
  const StringMap<const rollout::AliasConfig*> aliases;  // model aliases by name (into config.aliases)
};

// The current one of something swapped atomically (the gateway's config
// generation): load() is one atomic load and one reference count, what a
// request pays.
template <class T>
class CurrentSlot {
 public:
  explicit CurrentSlot(std::shared_ptr<T> first) : current_(std::move(first)) {}

  std::shared_ptr<T> load() const { return current_.load(std::memory_order_acquire); }
  void store(std::shared_ptr<T> next) { current_.store(std::move(next), std::memory_order_release); }

 private:
  std::atomic<std::shared_ptr<T>> current_;
};

}  // namespace arbiter
