// Small helpers shared by the scheduler tests: virtual time, configs and a
// wrapper that names requests by their caller tag.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/scheduler.hpp"

namespace arbiter::sched::testing {

// Virtual time: milliseconds since the epoch of the steady clock.
inline TimePoint at_ms(int64_t ms) { return TimePoint(std::chrono::milliseconds(ms)); }

inline SchedulerConfig one_pool(std::vector<ClassPolicy> classes, std::vector<uint32_t> backends,
                                Policy policy = Policy::kHybrid) {
  SchedulerConfig config;
  config.policy = policy;
  config.classes = std::move(classes);
  config.pools = {PoolSpec{.name = "model", .max_concurrency = std::move(backends), .prefill_tokens_per_s = {}}};
  // Victim-choice tests preempt at once; PreemptionWaitsPreemptAfter covers the delay.
  config.preempt_after = Duration::zero();
  return config;
}

inline ClassPolicy named(std::string name) {
  ClassPolicy c;
  c.name = std::move(name);
  return c;
}

// A class that waits an hour; `background` also makes it preemptible idle-capacity work.
inline ClassPolicy patient(std::string name, bool background = false) {
  ClassPolicy c = named(std::move(name));
  c.background = background;
  c.preemptible = background;
  c.max_queue_wait = std::chrono::hours(1);
  return c;
}

// A scheduler plus the bookkeeping every unit test needs: enqueue by tag,
// poll and list what was dispatched, complete by tag.
class Harness {
 public:
  explicit Harness(SchedulerConfig config) : scheduler_(*Scheduler::create(std::move(config))) {}

  Scheduler& scheduler() { return scheduler_; }

  // Enqueues and remembers the handle under `user`; fails the test on 429.
  Admission add(uint64_t user, ClassId klass, TenantId tenant, int64_t cost, TimePoint now,
                std::string_view key = {}, std::optional<TimePoint> deadline = std::nullopt,
                int64_t prompt_tokens = 0) {
    auto admitted = scheduler_.enqueue(Request{.user = user,
                                               .pool = 0,
                                               .klass = klass,
                                               .tenant = tenant,
                                               .cost_tokens = cost,
                                               .prompt_tokens = prompt_tokens,
                                               .deadline = deadline,
                                               .supersede_key = key},
                                       now);
    EXPECT_TRUE(admitted.has_value()) << "enqueue of " << user << " rejected";
    if (!admitted) return Admission{};
    grow(user);
    handles_[user] = admitted->handle;
    return *admitted;
  }

  // Enqueues `request` as given (remembered under request.user); nullopt on 429.
  std::optional<Admission> add(const Request& request, TimePoint now) {
    auto admitted = scheduler_.enqueue(request, now);
    if (!admitted) return std::nullopt;
    grow(request.user);
    handles_[request.user] = admitted->handle;
    return *admitted;
  }

  Handle handle(uint64_t user) const { return handles_.at(user); }

  // Polls at `now` and returns the caller tags dispatched, in order.
  std::vector<uint64_t> poll(TimePoint now) {
    actions_.clear();
    scheduler_.poll(now, actions_);
    std::vector<uint64_t> users;
    for (const Dispatch& d : actions_.dispatches) users.push_back(d.user);
    return users;
  }

  const Actions& actions() const { return actions_; }

  bool complete(uint64_t user, TimePoint now, std::optional<int64_t> tokens = std::nullopt) {
    return scheduler_.complete(handles_.at(user), now, tokens);
  }

  // Dispatches one request at a time (capacity 1 configs): poll, complete the
  // one dispatched, repeat; returns the service order.
  std::vector<uint64_t> drain_one_by_one(TimePoint now, std::size_t limit = SIZE_MAX) {
    std::vector<uint64_t> order;
    while (order.size() < limit) {
      const auto started = poll(now);
      if (started.empty()) break;
      for (uint64_t user : started) {
        order.push_back(user);
        complete(user, now);
      }
    }
    return order;
  }

 private:
  void grow(uint64_t user) {
    if (user >= handles_.size()) handles_.resize(user + 1);
  }

  Scheduler scheduler_;
  std::vector<Handle> handles_;  // by caller tag
  Actions actions_;              // reused between polls
};

}  // namespace arbiter::sched::testing
