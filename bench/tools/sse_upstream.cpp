// sse_upstream: the fast streaming engine of the streaming overhead
// benchmark (bench/overhead.sh with STREAM=1).
//
//   sse_upstream --port P [--events 256] [--threads 1]
//
// Answers every POST with 200 text/event-stream, chunked the way vLLM and
// SGLang send it (one HTTP chunk per event): --events chat.completion.chunk
// events of ~120 bytes, then `data: [DONE]`. The request header
// `x-stream-interval-us: U` paces the stream like an engine decoding: the
// first event at once, then one every U µs on a fixed timetable (no drift).
// Without it (or 0) the whole answer goes out in one write, as fast as the
// socket takes it. `x-stream-events: K` sends K events instead (at most
// --events). `x-stream-framing: length` sends an unpaced answer with a
// Content-Length instead of chunks (the events back to back, as an nginx
// `return` would). A POST whose body does not ask for a stream
// (`"stream":true`) gets the ~1 KB non-streaming chat completion of
// bench/nginx/upstream.conf.in instead, so one run can compare a streamed
// request's time to first event with a plain request's latency. Anything
// else is answered 404. Loopback only; stops on SIGTERM or SIGINT.
#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
constexpr auto kTuple = net::as_tuple(net::use_awaitable);

constexpr std::string_view kHead =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    "Transfer-Encoding: chunked\r\n\r\n";
constexpr std::string_view kNotFound = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";

// The non-streaming answer: the same ~1 KB completion as the nginx upstream's.
std::string make_completion() {
  std::string body =
      R"({"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"m1","choices":[)"
      R"({"index":0,"message":{"role":"assistant","content":")";
  for (int i = 0; i < 13; ++i) body += "Lorem ipsum dolor sit amet, consectetur adipiscing elit. ";
  body += R"(Lorem ipsum dolor."},"logprobs":null,"finish_reason":"length"}],)"
          R"("usage":{"prompt_tokens":230,"completion_tokens":16,"total_tokens":246}})";
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

std::string chunk(std::string_view data) {
  char size[16];
  const auto end = std::to_chars(size, size + sizeof size, data.size(), 16).ptr;
  return std::string(size, end) + "\r\n" + std::string(data) + "\r\n";
}

// Event i of a stream.
std::string event(int i) {
  return R"(data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,)"
         R"("model":"m1","choices":[{"index":0,"delta":{"content":"tok)" +
         std::to_string(i % 10) + R"( "},"finish_reason":null}]})"
                                  "\n\n";
}
constexpr std::string_view kDone = "data: [DONE]\n\n";

struct Answer {
  std::string head_and_events;  // the head, then every event, each a chunk
  std::vector<std::size_t> ends;  // where event i ends in it
  std::string end;                // [DONE] and the last chunk
  std::string events_only;        // the events and [DONE], unframed
  std::vector<std::size_t> events_only_ends;  // where event i ends in it
  std::string completion;         // the whole non-streaming answer
  // The head and the first k events.
  std::string_view first(std::size_t k) const { return std::string_view(head_and_events).substr(0, ends[k - 1]); }
  // Event i alone.
  std::string_view event(std::size_t i) const {
    return std::string_view(head_and_events).substr(ends[i - 1], ends[i] - ends[i - 1]);
  }
};

Answer make_answer(int events) {
  Answer a;
  a.head_and_events = std::string(kHead);
  for (int i = 0; i < events; ++i) {
    a.head_and_events += chunk(event(i));
    a.ends.push_back(a.head_and_events.size());
    a.events_only += event(i);
    a.events_only_ends.push_back(a.events_only.size());
  }
  a.end = chunk(kDone) + "0\r\n\r\n";
  a.completion = make_completion();
  return a;
}

long header_number(const http::request<http::string_body>& req, std::string_view name, long fallback) {
  const auto it = req.find(name);
  if (it == req.end()) return fallback;
  long v = fallback;
  std::from_chars(it->value().data(), it->value().data() + it->value().size(), v);
  return v;
}

net::awaitable<void> serve(tcp::socket socket, const Answer& answer) {
  beast::flat_buffer buffer;
  net::steady_timer timer(socket.get_executor());
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    auto [ec, n] = co_await http::async_read(socket, buffer, parser, kTuple);
    if (ec) co_return;
    const auto& req = parser.get();
    if (req.method() != http::verb::post || req.body().find(R"("stream":true)") == std::string::npos) {
      const std::string_view whole = req.method() == http::verb::post ? answer.completion : kNotFound;
      auto [wec, wn] = co_await net::async_write(socket, net::buffer(whole), kTuple);
      if (wec) co_return;
      continue;
    }
    const long interval_us = header_number(req, "x-stream-interval-us", 0);
    const auto events = static_cast<std::size_t>(
        std::clamp<long>(header_number(req, "x-stream-events", static_cast<long>(answer.ends.size())), 1,
                         static_cast<long>(answer.ends.size())));
    if (interval_us <= 0 && req["x-stream-framing"] == "length") {
      const std::string body = answer.events_only.substr(0, answer.events_only_ends[events - 1]) + std::string(kDone);
      const std::string head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                               "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
      const std::array<net::const_buffer, 2> whole{net::buffer(head), net::buffer(body)};
      auto [wec, wn] = co_await net::async_write(socket, whole, kTuple);
      if (wec) co_return;
    } else if (interval_us <= 0) {
      const std::array<net::const_buffer, 2> whole{net::buffer(answer.first(events)), net::buffer(answer.end)};
      auto [wec, wn] = co_await net::async_write(socket, whole, kTuple);
      if (wec) co_return;
    } else {
      const auto start = std::chrono::steady_clock::now();
      for (std::size_t i = 0; i <= events; ++i) {
        if (i > 0) {
          timer.expires_at(start + std::chrono::microseconds(interval_us) * i);
          co_await timer.async_wait(kTuple);
        }
        const std::string_view bytes = i == 0 ? answer.first(1) : i < events ? answer.event(i) : answer.end;
        auto [wec, wn] = co_await net::async_write(socket, net::buffer(bytes), kTuple);
        if (wec) co_return;
      }
    }
    if (!req.keep_alive()) co_return;
  }
}

net::awaitable<void> accept(tcp::acceptor& acceptor, const Answer& answer) {
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(kTuple);
    if (ec) co_return;
    socket.set_option(tcp::no_delay(true));
    net::co_spawn(acceptor.get_executor(), serve(std::move(socket), answer), net::detached);
  }
}

[[noreturn]] void usage() {
  std::cerr << "usage: sse_upstream --port P [--events N] [--threads T]\n";
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int port = 0, events = 256, threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (flag == "--port") port = v;
    else if (flag == "--events") events = v;
    else if (flag == "--threads") threads = v;
    else usage();
  }
  if (port <= 0 || port > 65535 || events < 1 || threads < 1 || argc % 2 == 0) usage();
  const Answer answer = make_answer(events);
  net::io_context ctx(threads);
  tcp::acceptor acceptor(ctx, tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
  acceptor.listen(4096);
  net::signal_set signals(ctx, SIGTERM, SIGINT);
  signals.async_wait([&](auto, int) { ctx.stop(); });
  net::co_spawn(ctx, accept(acceptor, answer), net::detached);
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back([&ctx] { ctx.run(); });
  ctx.run();
  for (auto& t : pool) t.join();
  return 0;
}
