#include "bench/live_run.hpp"

#include <sys/prctl.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <unordered_map>

#include "bench/live_client.hpp"
#include "bench/request_log.hpp"
#include "bench/workload.hpp"

namespace arbiter::bench {
namespace {

LiveClock::duration seconds(double s) {
  return std::chrono::duration_cast<LiveClock::duration>(std::chrono::duration<double>(s));
}

// "http://host:port[/]" -> host, port.
std::expected<std::pair<std::string, std::string>, std::string> split_url(const std::string& url) {
  constexpr std::string_view kScheme = "http://";
  if (!url.starts_with(kScheme)) return std::unexpected("--target must start with http://");
  std::string authority = url.substr(kScheme.size());
  if (authority.ends_with('/')) authority.pop_back();
  const auto colon = authority.rfind(':');
  if (colon == std::string::npos || authority.find('/') != std::string::npos)
    return std::unexpected("--target must be http://HOST:PORT");
  return std::pair{authority.substr(0, colon), authority.substr(colon + 1)};
}

// One connection per request in flight: up to max_connections sockets.
void raise_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

class LiveRun {
 public:
  LiveRun(const Scenario& s, uint64_t seed, const LiveOptions& o, tcp::endpoint target)
      : s_(s),
        o_(o),
        target_(target),
        workload_(s, seed),
        collector_(s),
        arrival_timer_(ioc_),
        sample_timer_(ioc_),
        cut_timer_(ioc_),
        type_along_(o.engine_text) {}

  // Opens the per-request log, if asked for; false when it cannot be written.
  bool open_log() {
    if (o_.requests_out.empty()) return true;
    log_.open(o_.requests_out, std::ios::trunc);
    return static_cast<bool>(log_);
  }

  LiveResult run() {
    start_ = LiveClock::now() + std::chrono::milliseconds(20);
    if (log_.is_open()) {
      // The start in wall-clock time, so others (the chaos drills' faults) line up with it.
      const auto unix_start = std::chrono::system_clock::now() + (start_ - LiveClock::now());
      log_ << request_log_header(s_, o_.label,
                                 std::chrono::duration<double>(unix_start.time_since_epoch()).count())
           << '\n';
    }
    net::co_spawn(ioc_, generate(), net::detached);
    net::co_spawn(ioc_, sample(), net::detached);
    cut_timer_.expires_at(start_ + seconds(s_.duration_s + s_.drain_s));
    cut_timer_.async_wait([this](beast::error_code ec) {
      if (!ec) cut();
    });
    ioc_.run();
    const double end = std::chrono::duration<double>(LiveClock::now() - start_).count();
    EngineTotals totals{.duration_s = std::min(end, s_.duration_s + s_.drain_s),
                        .engines = s_.engine.count};
    LiveResult out;
    out.summary = collector_.summarize(o_.label, totals);
    out.summary.engine_known = false;
    out.summary.utilisation = out.summary.waste_share = out.summary.token_load = std::nan("");
    out.summary.series = std::move(series_);
    out.summary.wall_s = end;
    for (const auto& [note, count] : notes_)
      out.notes.push_back(std::to_string(count) + " x " + note);
    return out;
  }

 private:
  struct InFlight {
    RequestSpec spec;
    std::shared_ptr<Exchange> exchange;
  };

  Task<void> generate() {
    while (std::optional<RequestSpec> spec = workload_.next()) {
      arrival_timer_.expires_at(start_ + seconds(spec->arrival));
      co_await arrival_timer_.async_wait(kAsTuple);
      if (cut_) break;
      if (in_flight_.size() >= o_.max_connections) {
        ExchangeResult unsent;
        unsent.outcome = Outcome::kRejected;
        record(*spec, unsent);
        ++notes_
            ["not sent by the client: --max-connections requests in flight (counted as rejected)"];
        continue;
      }
      launch(*spec);
    }
    generating_ = false;
    finish_if_done();
  }

  void launch(const RequestSpec& spec) {
    const uint16_t klass = spec.klass, tenant = spec.tenant;
    auto on_gap = [this, klass, tenant](double gap) { collector_.token_gap(klass, tenant, gap); };
    auto exchange = std::make_shared<Exchange>(ioc_.get_executor(), start_, std::move(on_gap));
    if (o_.client_supersede && spec.supersede_key != 0) {
      // The IDE aborts its previous request with the key when it sends the next.
      auto [it, fresh] = newest_.try_emplace(spec.supersede_key, spec.id);
      if (!fresh) {
        if (auto old = in_flight_.find(it->second); old != in_flight_.end())
          old->second.exchange->stop(Outcome::kSuperseded);
        it->second = spec.id;
      }
    }
    if (spec.abort_at != kNever) exchange->abort_at(start_ + seconds(spec.abort_at));
    in_flight_.emplace(spec.id, InFlight{spec, exchange});
    std::optional<Keystroke> keystroke;
    if (types_along(spec)) keystroke = typed_keystroke(spec);
    std::string request = raw_request(s_, spec, o_.request, keystroke ? &*keystroke : nullptr);
    net::co_spawn(ioc_, exchange_one(spec.id, exchange, std::move(request)), net::detached);
  }

  // Typing along (bench/type_along.hpp): a typing keystroke's prompt and
  // budget, from the keystroke it types along and what that one's client
  // has received.
  Keystroke typed_keystroke(const RequestSpec& spec) {
    std::string_view received;
    if (const auto along = type_along_.extended(spec)) {
      if (const auto it = in_flight_.find(*along); it != in_flight_.end())
        received = it->second.exchange->received_text();
    }
    Outgoing out = type_along_.next(spec, own_keystroke(spec, o_.request), received);
    switch (out.typed) {
      case Typed::kNo:
        break;
      case Typed::kReceived:
        ++notes_["typed along the text the previous keystroke's client had received"];
        break;
      case Typed::kPredicted:
        ++notes_["typed along the predicted text (the previous keystroke's client had received none yet)"];
        break;
      case Typed::kNotSent:
        ++notes_["typed along a keystroke the client did not send (sent with its own prompt)"];
        break;
    }
    return std::move(out.keystroke);
  }

  bool types_along(const RequestSpec& spec) const { return s_.classes[spec.klass].traffic.type_along > 0; }

  Task<void> exchange_one(uint64_t id, std::shared_ptr<Exchange> exchange, std::string request) {
    const ExchangeResult result = co_await exchange->run(target_, std::move(request));
    const auto it = in_flight_.find(id);
    const RequestSpec spec = it->second.spec;
    if (types_along(spec)) type_along_.ended(spec, exchange->received_text());
    in_flight_.erase(it);
    if (spec.supersede_key != 0) {
      if (auto n = newest_.find(spec.supersede_key); n != newest_.end() && n->second == id)
        newest_.erase(n);
    }
    if (!result.note.empty()) ++notes_[result.note];
    record(spec, result);
    finish_if_done();
  }

  void record(const RequestSpec& spec, const ExchangeResult& r) {
    if (log_.is_open()) log_ << request_log_line(s_, spec, r, o_.request.exact_lengths) << '\n';
    const bool completed = r.outcome == Outcome::kCompleted;
    // Times count from the scheduled send (the arrival), so a late client
    // shows as latency, never as a lighter load.
    collector_.record({.klass = spec.klass,
                       .tenant = spec.tenant,
                       .outcome = r.outcome,
                       .arrival = spec.arrival,
                       .first_token = r.first_token,
                       .finished = completed ? r.last_token : -1,
                       .output_tokens = r.tokens,
                       .deadline = spec.deadline});
  }

  // Requests waiting for their first token and streaming, as the client sees them.
  Task<void> sample() {
    const double dt = s_.duration_s / kSeriesSamples;
    for (std::size_t i = 1; i <= kSeriesSamples && !cut_; ++i) {
      sample_timer_.expires_at(start_ + seconds(dt * static_cast<double>(i)));
      auto [ec] = co_await sample_timer_.async_wait(kAsTuple);
      if (ec || series_.size() >= kSeriesSamples) break;  // the run ended first
      Sample out{.t = dt * static_cast<double>(i), .utilisation = std::nan("")};
      for (const auto& [id, f] : in_flight_) ++(f.exchange->streaming() ? out.running : out.queued);
      series_.push_back(out);
    }
  }

  void cut() {
    cut_ = true;
    arrival_timer_.cancel();
    sample_timer_.cancel();
    for (auto& [id, f] : in_flight_) f.exchange->stop(Outcome::kUnfinished);
  }

  void finish_if_done() {
    if (generating_ || !in_flight_.empty()) return;
    cut_timer_.cancel();
    // Samples after the last answer are empty; take them now rather than wait.
    sample_timer_.cancel();
    while (series_.size() < kSeriesSamples) {
      series_.push_back({.t = s_.duration_s / kSeriesSamples * static_cast<double>(series_.size() + 1),
                         .utilisation = std::nan("")});
    }
  }

  const Scenario& s_;
  const LiveOptions& o_;
  tcp::endpoint target_;
  net::io_context ioc_{1};
  Workload workload_;
  Collector collector_;
  net::steady_timer arrival_timer_, sample_timer_, cut_timer_;
  LiveClock::time_point start_;
  std::unordered_map<uint64_t, InFlight> in_flight_;  // by spec id
  std::unordered_map<uint64_t, uint64_t> newest_;     // supersede key -> newest spec id
  TypeAlong type_along_;
  std::map<std::string, uint64_t> notes_;
  std::vector<Sample> series_;
  std::ofstream log_;  // --requests-out
  bool generating_ = true;
  bool cut_ = false;
};

}  // namespace

std::expected<LiveResult, std::string> run_live(const Scenario& scenario, uint64_t seed,
                                                const LiveOptions& options) {
  auto hostport = split_url(options.target);
  if (!hostport) return std::unexpected(hostport.error());
  net::io_context resolve_ctx;
  tcp::resolver resolver(resolve_ctx);
  beast::error_code ec;
  const auto endpoints = resolver.resolve(hostport->first, hostport->second, ec);
  if (ec || endpoints.empty())
    return std::unexpected("cannot resolve " + options.target + ": " + ec.message());
  raise_file_limit();
  // Timer wake-ups as exact as the kernel allows: the default 50 us slack
  // would show in every arrival and token time.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  LiveOptions o = options;
  o.request.host = hostport->first;
  if (o.engine_text.model.empty()) o.engine_text.model = o.request.model;
  // Nothing of an earlier run may be found in the engines' prefix caches.
  o.request.text_salt = std::random_device{}() | (uint64_t{std::random_device{}()} << 32);
  Scenario s = scenario;
  if (options.max_s > 0) s.duration_s = std::min(s.duration_s, options.max_s);
  LiveRun run(s, seed, o, endpoints.begin()->endpoint());
  if (!run.open_log()) return std::unexpected("cannot write " + options.requests_out);
  return run.run();
}

}  // namespace arbiter::bench
