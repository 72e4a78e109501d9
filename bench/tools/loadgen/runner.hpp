// One load generator thread: its own io_context, connections and stats.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio.hpp>
#include <boost/asio/experimental/channel.hpp>

#include "client.hpp"
#include "stats.hpp"

namespace loadgen {

enum class Mode { kOpen, kClosed };

// Times are shared by every thread so their windows line up exactly.
struct Plan {
  Mode mode = Mode::kOpen;
  tcp::endpoint endpoint;
  ssl::context* tls = nullptr;  // https://: the context connections share
  const std::string* request = nullptr;
  Clock::time_point start;    // first send (warm-up begins)
  Clock::time_point measure;  // window opens: samples count from here
  Clock::time_point end;      // window closes: no new sends
  Clock::time_point kill;     // whatever is still in flight is abandoned
  double rate = 0;            // open loop: requests per second, all threads together
  int connections = 1;        // this thread's share
  int thread_index = 0;
  int threads = 1;
  // Closed loop: connection k of all threads' together sends its first
  // request at start + k * ramp / connections, so paced streams do not all
  // send their events in the same instant (0: all at once).
  Clock::duration ramp{};
  int total_connections = 1;
};

class Runner {
 public:
  explicit Runner(Plan plan) : plan_(plan), kill_timer_(ctx_) {
    for (int i = 0; i < plan_.connections; ++i) {
      connections_.push_back(std::make_unique<Connection>(ctx_, plan_.endpoint, plan_.tls));
    }
  }

  void run() {
    net::co_spawn(ctx_, kill_switch(), net::detached);
    if (plan_.mode == Mode::kOpen) {
      auto channel = std::make_shared<Channel>(ctx_, kChannelCapacity);
      channel_ = channel.get();
      live_ = 1 + static_cast<int>(connections_.size());
      net::co_spawn(ctx_, dispatch(channel), net::detached);
      for (auto& c : connections_) net::co_spawn(ctx_, open_worker(channel, *c), net::detached);
    } else {
      live_ = static_cast<int>(connections_.size());
      for (std::size_t i = 0; i < connections_.size(); ++i) {
        const auto k = static_cast<int64_t>(i) * plan_.threads + plan_.thread_index;  // across threads
        const auto first = plan_.start + plan_.ramp * k / std::max(1, plan_.total_connections);
        net::co_spawn(ctx_, closed_worker(*connections_[i], first), net::detached);
      }
    }
    ctx_.run();
    if (plan_.mode == Mode::kOpen) {
      // Slots in the window that never got an answer before the kill time.
      const uint64_t unfinished = stats_.scheduled - stats_.completed - stats_.errors;
      if (unfinished > 0) {
        stats_.errors += unfinished;
        stats_.error_kinds["unfinished at kill time"] += unfinished;
      }
    }
  }

  const Stats& stats() const { return stats_; }

 private:
  struct Job {
    Clock::time_point scheduled;
    bool in_window = false;
    bool stop = false;
  };
  using Channel = net::experimental::channel<void(boost::system::error_code, Job)>;
  static constexpr std::size_t kChannelCapacity = 1 << 20;

  // Open loop: a fixed timetable, independent of how fast answers come back,
  // so a slow server cannot slow the arrivals (no coordinated omission).
  Task<> dispatch(std::shared_ptr<Channel> channel) {
    const std::chrono::duration<double> interval(1.0 / plan_.rate);
    net::steady_timer timer(ctx_);
    boost::system::error_code ec;
    for (uint64_t i = static_cast<uint64_t>(plan_.thread_index);; i += static_cast<uint64_t>(plan_.threads)) {
      const auto at = plan_.start + std::chrono::duration_cast<Clock::duration>(interval * static_cast<double>(i));
      if (at >= plan_.end || stopping_) break;
      timer.expires_at(at);
      co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
      if (stopping_) break;
      const bool in_window = at >= plan_.measure;
      if (in_window) ++stats_.scheduled;
      // A full queue means thousands of requests are already waiting: the run is
      // meaningless anyway, count it rather than block the timetable.
      if (!channel->try_send(boost::system::error_code{}, Job{at, in_window, false}) && in_window) {
        stats_.error("send queue full");
      }
    }
    for (std::size_t i = 0; i < connections_.size() && !stopping_; ++i) {
      co_await channel->async_send(boost::system::error_code{}, Job{{}, false, true},
                                   net::redirect_error(net::use_awaitable, ec));
    }
    done_one();
  }

  Task<> open_worker(std::shared_ptr<Channel> channel, Connection& conn) {
    boost::system::error_code ec;
    for (;;) {
      Job job = co_await channel->async_receive(net::redirect_error(net::use_awaitable, ec));
      if (ec || job.stop || stopping_) break;
      Outcome out = co_await conn.exchange(*plan_.request);
      if (stopping_) break;  // the kill switch already counted it as unfinished
      if (!job.in_window) continue;
      if (out.error.empty()) {
        ++stats_.completed;
        stats_.bytes_in += out.body_bytes;
        stats_.latency.add(out.done - job.scheduled);
        stats_.service.add(out.done - out.sent);
        add_stream(out);
      } else {
        stats_.error(out.error);
      }
    }
    done_one();
  }

  // Closed loop: each connection sends its next request as soon as the last
  // answer is in, which measures the peak the server can sustain.
  Task<> closed_worker(Connection& conn, Clock::time_point first) {
    net::steady_timer timer(ctx_);
    boost::system::error_code ec;
    timer.expires_at(first);
    co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
    while (!stopping_ && Clock::now() < plan_.end) {
      Outcome out = co_await conn.exchange(*plan_.request);
      if (stopping_) break;
      const bool in_window = out.done >= plan_.measure && out.done < plan_.end;
      if (out.error.empty()) {
        if (in_window) {
          ++stats_.completed;
          stats_.bytes_in += out.body_bytes;
          stats_.latency.add(out.done - out.sent);
          add_stream(out);
        }
      } else {
        if (in_window) stats_.error(out.error);
        // Do not spin on a refused or broken connection.
        timer.expires_after(std::chrono::milliseconds(10));
        co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
      }
    }
    done_one();
  }

  // Bounds the run in time whatever the server does.
  Task<> kill_switch() {
    boost::system::error_code ec;
    kill_timer_.expires_at(plan_.kill);
    co_await kill_timer_.async_wait(net::redirect_error(net::use_awaitable, ec));
    if (live_ == 0) co_return;  // everything finished; the timer was cancelled
    stopping_ = true;
    if (channel_ != nullptr) channel_->close();
    for (auto& c : connections_) c->close();
  }

  void add_stream(const Outcome& out) {
    if (out.events == 0) return;
    stats_.events += out.events;
    stats_.ttft.add(out.first_event - out.sent);
    stats_.itl.ns.insert(stats_.itl.ns.end(), out.gaps_ns->begin(), out.gaps_ns->end());
  }

  void done_one() {
    if (--live_ == 0) kill_timer_.cancel();
  }

  Plan plan_;
  net::io_context ctx_{1};
  net::steady_timer kill_timer_;
  std::vector<std::unique_ptr<Connection>> connections_;
  Channel* channel_ = nullptr;
  int live_ = 0;
  bool stopping_ = false;
  Stats stats_;
};

}  // namespace loadgen
