#include "http/io_pool.hpp"

namespace arbiter {

namespace {
thread_local std::size_t t_index = 0;
}  // namespace

IoPool::IoPool(std::size_t threads) {
  if (threads == 0) threads = 1;
  for (std::size_t i = 0; i < threads; ++i) {
    contexts_.push_back(std::make_unique<net::io_context>(1));
  }
}

net::io_context& IoPool::next() {
  return *contexts_[next_.fetch_add(1, std::memory_order_relaxed) % contexts_.size()];
}

void IoPool::run() {
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < contexts_.size(); ++i) {
    threads.emplace_back([this, i] {
      t_index = i;
      auto guard = net::make_work_guard(*contexts_[i]);
      contexts_[i]->run();
    });
  }
  t_index = 0;
  {
    auto guard = net::make_work_guard(*contexts_[0]);
    contexts_[0]->run();
  }
  for (auto& t : threads) t.join();
}

void IoPool::stop() {
  for (auto& c : contexts_) c->stop();
}

std::size_t IoPool::current_index() { return t_index; }

}  // namespace arbiter
