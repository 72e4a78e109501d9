#include "support/fake_upstream.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

namespace arbiter::test {

namespace net = boost::asio;
namespace http = boost::beast::http;
using net::ip::tcp;
using namespace net::experimental::awaitable_operators;

constexpr auto kNoThrow = net::as_tuple(net::use_awaitable);

std::optional<std::string> RecordedRequest::header(std::string_view name) const {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  for (const auto& [k, v] : headers) {
    if (k == lower) return v;
  }
  return std::nullopt;
}

std::string Stream::wire_prefix(std::size_t n) const {
  std::string out;
  for (std::size_t i = 0; i < n && i < payloads.size(); ++i) out += "data: " + payloads[i] + "\n\n";
  return out;
}

std::string Stream::wire() const {
  if (!raw.empty()) {
    std::string out;
    for (const auto& r : raw) out += r;
    return out;
  }
  std::string out = wire_prefix(payloads.size());
  if (send_done) out += "data: [DONE]\n\n";
  return out;
}

std::vector<std::string> chat_chunks(std::size_t n, std::string_view model) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n; ++i) {
    boost::json::object delta;
    delta["content"] = "tok" + std::to_string(i) + " ";
    boost::json::object choice{{"index", 0}, {"delta", delta}, {"finish_reason", nullptr}};
    if (i + 1 == n) choice["finish_reason"] = "stop";
    boost::json::object chunk{{"id", "chatcmpl-fake"},
                              {"object", "chat.completion.chunk"},
                              {"created", 1700000000},
                              {"model", model},
                              {"choices", boost::json::array{choice}}};
    out.push_back(boost::json::serialize(chunk));
  }
  return out;
}

std::string chat_completion_body(std::string_view model, std::string_view text) {
  boost::json::object message{{"role", "assistant"}, {"content", text}};
  boost::json::object choice{{"index", 0}, {"message", message}, {"finish_reason", "stop"}};
  boost::json::object body{
      {"id", "chatcmpl-fake"},
      {"object", "chat.completion"},
      {"created", 1700000000},
      {"model", model},
      {"choices", boost::json::array{choice}},
      {"usage", {{"prompt_tokens", 5}, {"completion_tokens", 1}, {"total_tokens", 6}}}};
  return boost::json::serialize(body);
}

// --- Shared state ---------------------------------------------------------

struct FakeUpstream::State {
  mutable std::mutex mu;
  mutable std::condition_variable cv;
  std::deque<Behaviour> queue;
  Handler handler;
  std::vector<RecordedRequest> requests;
  std::vector<ConnectionRecord> connections;
  // Declared after the records: destroyed before them, taking the session
  // frames (and their sockets) with it while the records are still alive.
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};

  std::size_t open_connection() {
    std::lock_guard lock(mu);
    ConnectionRecord rec;
    rec.id = connections.size();
    rec.opened_at = Clock::now();
    connections.push_back(rec);
    cv.notify_all();
    return rec.id;
  }

  // Records the request and picks its behaviour.
  Behaviour take(RecordedRequest rec) {
    Handler h;
    std::optional<Behaviour> queued;
    {
      std::lock_guard lock(mu);
      connections[rec.connection_id].requests++;
      requests.push_back(rec);
      if (!queue.empty()) {
        queued = std::move(queue.front());
        queue.pop_front();
      } else {
        h = handler;
      }
      cv.notify_all();
    }
    if (queued) return std::move(*queued);
    if (h) return h(rec);
    Respond r;
  r.body = chat_completion_body();
  return r;
  }

  template <class Fn>
  void update(std::size_t id, Fn fn) {
    std::lock_guard lock(mu);
    fn(connections[id]);
    cv.notify_all();
  }

  void mark_peer_closed(std::size_t id) {
    update(id, [](ConnectionRecord& c) {
      if (!c.peer_closed_at) c.peer_closed_at = Clock::now();
    });
  }
  void mark_write_failed(std::size_t id) {
    update(id, [](ConnectionRecord& c) {
      if (!c.write_failed_at) c.write_failed_at = Clock::now();
    });
  }
  void mark_closed(std::size_t id, bool by_us) {
    update(id, [by_us](ConnectionRecord& c) {
      if (by_us && !c.closed_by_us_at && !c.peer_closed_at) c.closed_by_us_at = Clock::now();
      c.open = false;
    });
  }
};

namespace {

// How a behaviour left the connection.
enum Outcome : int { kKeepOpen, kClose, kCloseReset, kWriteFailed, kPeerClosed };

net::awaitable<void> sleep_for(Millis d) {
  if (d.count() <= 0) co_return;
  net::steady_timer t(co_await net::this_coro::executor);
  t.expires_after(d);
  co_await t.async_wait(kNoThrow);
}

net::awaitable<bool> write_all(tcp::socket& sock, std::string_view bytes) {
  auto [ec, n] = co_await net::async_write(sock, net::buffer(bytes.data(), bytes.size()), kNoThrow);
  co_return !ec;
}

std::string chunk(std::string_view data) {
  char size[32];
  const int len = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  std::string out(size, static_cast<std::size_t>(len));
  out.append(data);
  out += "\r\n";
  return out;
}

net::awaitable<int> run_respond(tcp::socket& sock, const Respond& r, bool keep_alive) {
  co_await sleep_for(r.header_delay);
  http::response<http::string_body> res{static_cast<http::status>(r.status), 11};
  res.set(http::field::content_type, r.content_type);
  for (const auto& [k, v] : r.headers) res.set(k, v);
  const bool keep = keep_alive && !r.close_after;
  res.keep_alive(keep);
  res.body() = r.body;
  res.prepare_payload();
  auto [ec, n] = co_await http::async_write(sock, res, kNoThrow);
  if (ec) co_return kWriteFailed;
  co_return keep ? kKeepOpen : kClose;
}

net::awaitable<int> run_stream(tcp::socket& sock, const Stream& s, bool keep_alive) {
  co_await sleep_for(s.header_delay);
  std::string head = "HTTP/1.1 200 OK\r\nContent-Type: " + s.content_type +
                     "\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n";
  if (!keep_alive) head += "Connection: close\r\n";
  head += "\r\n";
  if (!co_await write_all(sock, head)) co_return kWriteFailed;
  for (std::size_t i = 0; i < s.raw.size(); ++i) {
    if (i > 0) co_await sleep_for(s.interval);
    if (!co_await write_all(sock, chunk(s.raw[i]))) co_return kWriteFailed;
  }
  for (std::size_t i = 0; s.raw.empty() && i < s.payloads.size(); ++i) {
    if (s.crash_after && i == *s.crash_after) co_return kClose;
    if (i > 0) co_await sleep_for(s.interval);
    if (!co_await write_all(sock, chunk("data: " + s.payloads[i] + "\n\n"))) co_return kWriteFailed;
  }
  if (s.crash_after && *s.crash_after >= s.payloads.size()) co_return kClose;
  if (s.send_done && s.raw.empty()) {
    if (!s.payloads.empty()) co_await sleep_for(s.interval);
    if (!co_await write_all(sock, chunk("data: [DONE]\n\n"))) co_return kWriteFailed;
  }
  if (!co_await write_all(sock, "0\r\n\r\n")) co_return kWriteFailed;
  co_return keep_alive ? kKeepOpen : kClose;
}

net::awaitable<int> run_behaviour(tcp::socket& sock, const Behaviour& b, bool keep_alive) {
  if (auto* r = std::get_if<Respond>(&b)) co_return co_await run_respond(sock, *r, keep_alive);
  if (auto* s = std::get_if<Stream>(&b)) co_return co_await run_stream(sock, *s, keep_alive);
  if (std::holds_alternative<Hang>(b)) {
    // Until the gateway hangs up (the watcher wins) or the upstream stops.
    co_await sleep_for(std::chrono::hours(24));
    co_return kClose;
  }
  co_return std::get<CloseImmediately>(b).reset ? kCloseReset : kClose;
}

// Runs beside a behaviour so that a gateway hanging up is seen at once,
// even while we are silent (hang, header delay). Bytes that arrive early
// (a pipelined request) are kept for the next parse. `peer_gone` is set even
// when the behaviour finished first: Asio's edge-triggered reactor does not
// report an EOF twice, so a later read would wait forever.
net::awaitable<int> watch_peer(tcp::socket& sock, boost::beast::flat_buffer& pending,
                               bool& peer_gone) {
  for (;;) {
    auto space = pending.prepare(4096);
    auto [ec, n] = co_await sock.async_read_some(space, kNoThrow);
    if (ec) {
      if (ec != net::error::operation_aborted) peer_gone = true;
      co_return kPeerClosed;
    }
    pending.commit(n);
  }
}

void close_socket(tcp::socket& sock, bool reset) {
  boost::system::error_code ec;
  if (reset) {
    sock.set_option(net::socket_base::linger(true, 0), ec);
  } else {
    sock.shutdown(tcp::socket::shutdown_both, ec);
  }
  sock.close(ec);
}

net::awaitable<void> session(FakeUpstream::State* st, tcp::socket sock, std::size_t id) {
  boost::beast::flat_buffer buf;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    parser.header_limit(1u << 20);
    auto [ec, n] = co_await http::async_read(sock, buf, parser, kNoThrow);
    if (ec) {
      st->mark_peer_closed(id);
      break;
    }
    const auto& req = parser.get();
    RecordedRequest rec;
    rec.connection_id = id;
    rec.method = std::string(req.method_string());
    rec.target = std::string(req.target());
    for (const auto& f : req) {
      std::string name(f.name_string());
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      rec.headers.emplace_back(std::move(name), std::string(f.value()));
    }
    rec.body = req.body();
    rec.received_at = Clock::now();
    const bool keep_alive = parser.keep_alive();
    const Behaviour behaviour = st->take(std::move(rec));

    bool peer_gone = false;
    auto result =
        co_await (run_behaviour(sock, behaviour, keep_alive) || watch_peer(sock, buf, peer_gone));
    int outcome = result.index() == 0 ? std::get<0>(result) : std::get<1>(result);
    if (peer_gone && outcome == kKeepOpen) outcome = kPeerClosed;
    if (outcome == kKeepOpen) continue;
    if (outcome == kPeerClosed) {
      st->mark_peer_closed(id);
      close_socket(sock, false);
      st->mark_closed(id, false);
      co_return;
    }
    if (outcome == kWriteFailed) {
      st->mark_write_failed(id);
      close_socket(sock, false);
      st->mark_closed(id, false);
      co_return;
    }
    close_socket(sock, outcome == kCloseReset);
    st->mark_closed(id, true);
    co_return;
  }
  close_socket(sock, false);
  st->mark_closed(id, false);
}

net::awaitable<void> accept_loop(FakeUpstream::State* st) {
  for (;;) {
    tcp::socket sock(net::make_strand(st->ioc));
    auto [ec] = co_await st->acceptor.async_accept(sock, kNoThrow);
    if (ec) {
      if (!st->acceptor.is_open()) co_return;
      continue;
    }
    sock.set_option(tcp::no_delay(true), ec);
    const std::size_t id = st->open_connection();
    auto ex = sock.get_executor();
    net::co_spawn(ex, session(st, std::move(sock), id), net::detached);
  }
}

}  // namespace

// --- FakeUpstream -----------------------------------------------------------

FakeUpstream::FakeUpstream(unsigned threads, const std::string& address) : state_(std::make_unique<State>()) {
  tcp::endpoint ep(net::ip::make_address(address), 0);
  state_->acceptor.open(ep.protocol());
  state_->acceptor.set_option(net::socket_base::reuse_address(true));
  state_->acceptor.bind(ep);
  state_->acceptor.listen(net::socket_base::max_listen_connections);
  port_ = state_->acceptor.local_endpoint().port();
  net::co_spawn(net::make_strand(state_->ioc), accept_loop(state_.get()), net::detached);
  for (unsigned i = 0; i < std::max(1u, threads); ++i) {
    threads_.emplace_back([st = state_.get()] { st->ioc.run(); });
  }
}

FakeUpstream::~FakeUpstream() {
  state_->ioc.stop();
  for (auto& t : threads_) t.join();
}

void FakeUpstream::set_handler(Handler handler) {
  std::lock_guard lock(state_->mu);
  state_->handler = std::move(handler);
}

void FakeUpstream::push(Behaviour behaviour) {
  std::lock_guard lock(state_->mu);
  state_->queue.push_back(std::move(behaviour));
}

std::vector<RecordedRequest> FakeUpstream::requests() const {
  std::lock_guard lock(state_->mu);
  return state_->requests;
}

std::vector<ConnectionRecord> FakeUpstream::connections() const {
  std::lock_guard lock(state_->mu);
  return state_->connections;
}

std::size_t FakeUpstream::request_count() const {
  std::lock_guard lock(state_->mu);
  return state_->requests.size();
}

std::size_t FakeUpstream::open_connections() const {
  std::lock_guard lock(state_->mu);
  return static_cast<std::size_t>(std::count_if(state_->connections.begin(),
                                                state_->connections.end(),
                                                [](const ConnectionRecord& c) { return c.open; }));
}

std::size_t FakeUpstream::total_connections() const {
  std::lock_guard lock(state_->mu);
  return state_->connections.size();
}

bool FakeUpstream::wait_for_requests(std::size_t n, Millis timeout) const {
  std::unique_lock lock(state_->mu);
  return state_->cv.wait_for(lock, timeout, [&] { return state_->requests.size() >= n; });
}

std::optional<TimePoint> FakeUpstream::wait_for_peer_close(std::size_t id, Millis timeout) const {
  std::unique_lock lock(state_->mu);
  std::optional<TimePoint> when;
  state_->cv.wait_for(lock, timeout, [&] {
    if (id >= state_->connections.size()) return false;
    const auto& c = state_->connections[id];
    if (c.peer_closed_at && c.write_failed_at) when = std::min(*c.peer_closed_at, *c.write_failed_at);
    else if (c.peer_closed_at) when = c.peer_closed_at;
    else when = c.write_failed_at;
    return when.has_value();
  });
  return when;
}

std::string FakeUpstream::describe() const {
  std::lock_guard lock(state_->mu);
  const auto t0 = state_->connections.empty() ? Clock::now() : state_->connections[0].opened_at;
  auto at = [t0](const std::optional<TimePoint>& t) {
    return t ? std::to_string(static_cast<long>(ms_between(t0, *t))) + "ms" : std::string("-");
  };
  std::string out = "---- fake upstream (times from the first connection) ----\n";
  for (const auto& c : state_->connections) {
    out += "conn " + std::to_string(c.id) + ": opened " + at(c.opened_at) + ", requests " +
           std::to_string(c.requests) + ", peer closed " + at(c.peer_closed_at) + ", write failed " +
           at(c.write_failed_at) + ", closed by us " + at(c.closed_by_us_at) +
           (c.open ? ", open" : ", closed") + "\n";
  }
  for (const auto& r : state_->requests) {
    out += "req on conn " + std::to_string(r.connection_id) + " at " + at(r.received_at) + ": " +
           r.method + " " + r.target + " (" + std::to_string(r.body.size()) + " body bytes)\n";
  }
  return out;
}

bool FakeUpstream::wait_for_no_open_connections(Millis timeout) const {
  std::unique_lock lock(state_->mu);
  return state_->cv.wait_for(lock, timeout, [&] {
    return std::none_of(state_->connections.begin(), state_->connections.end(),
                        [](const ConnectionRecord& c) { return c.open; });
  });
}

}  // namespace arbiter::test
