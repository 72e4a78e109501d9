// hold_open: many client connections to the gateway, opened and then held,
// to measure what each costs the gateway (bench/open_streams.sh;
// docs/benchmarks.md, "Open streams and idle connections").
//
//   hold_open --port P --connections N --mode stream|idle [--model NAME]
//             [--api-key KEY] [--max-tokens 30000] [--in-progress 256]
//             [--prompt-bytes 4]
//
// stream: each connection sends a streaming /v1/completions (ignore_eos,
//   max_tokens tokens) and counts as open once its first SSE event arrived;
//   it then keeps reading (and discarding) until the end. Its prompt is
//   `prompt-bytes` bytes of text (a long chat history or a RAG prompt is
//   tens of KiB).
// idle:   each connection sends one keep-alive GET /healthz, reads the whole
//   answer, and stays open and silent.
// At most `in-progress` connections are being set up at a time. Once every
// connection is open or failed, prints one JSON line ({"open":..,"failed":..,
// "ended":..}) and flushes it; then holds everything until its standard
// input reaches end of file, prints a second line (how many were still open)
// and exits, closing every socket.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio.hpp>

namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
template <class T = void>
using Task = net::awaitable<T>;
constexpr auto kTuple = net::as_tuple(net::use_awaitable);

struct Options {
  unsigned short port = 0;
  int connections = 0;
  bool stream = true;
  std::string model = "tiny";
  std::string api_key;
  int max_tokens = 30000;  // within the llama-8b-a100 profile's 32k context
  int in_progress = 256;
  int prompt_bytes = 4;
};

std::optional<Options> parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--port") o.port = static_cast<unsigned short>(std::stoi(value));
    else if (flag == "--connections") o.connections = std::stoi(value);
    else if (flag == "--mode" && (value == "stream" || value == "idle")) o.stream = value == "stream";
    else if (flag == "--model") o.model = value;
    else if (flag == "--api-key") o.api_key = value;
    else if (flag == "--max-tokens") o.max_tokens = std::stoi(value);
    else if (flag == "--in-progress") o.in_progress = std::stoi(value);
    else if (flag == "--prompt-bytes") o.prompt_bytes = std::stoi(value);
    else return std::nullopt;
  }
  if (o.port == 0 || o.connections < 1 || o.in_progress < 1 || o.prompt_bytes < 1) return std::nullopt;
  return o;
}

struct State {
  int open = 0;     // streams past their first event, idle connections past their answer
  int failed = 0;   // never got there
  int ended = 0;    // open, then closed by the gateway while held
  int settled() const { return open + failed; }
};

// Connects, sends `request`, and waits until the connection is "open":
// for a stream, the first "data: " arrived; for an idle connection, the
// whole answer (the head's Content-Length) arrived. Then, for a stream,
// reads on until the end; an idle connection just waits for a close.
Task<void> client(tcp::endpoint ep, const std::string& request, bool stream, State& st,
                  std::shared_ptr<tcp::socket> s) {
  std::string got;
  std::vector<char> buf(4096);
  bool opened = false;
  auto [cec] = co_await s->async_connect(ep, kTuple);
  if (!cec) {
    auto [wec, wn] = co_await net::async_write(*s, net::buffer(request), kTuple);
    while (!wec) {
      auto [ec, n] = co_await s->async_read_some(net::buffer(buf), kTuple);
      if (ec) break;
      if (opened) continue;
      got.append(buf.data(), n);
      if (stream) {
        opened = got.find("data: ") != std::string::npos;
      } else if (const auto end = got.find("\r\n\r\n"); end != std::string::npos) {
        const auto cl = got.find("Content-Length: ");
        const std::size_t length = cl == std::string::npos ? 0 : std::stoul(got.substr(cl + 16));
        opened = got.size() >= end + 4 + length;
      }
      if (opened) {
        ++st.open;
        got.clear();
        got.shrink_to_fit();
      }
    }
  }
  if (opened) ++st.ended;
  else ++st.failed;
}

}  // namespace

int main(int argc, char** argv) {
  const auto o = parse(argc, argv);
  if (!o) {
    std::fputs("usage: hold_open --port P --connections N --mode stream|idle [--model NAME] [--api-key KEY] "
               "[--max-tokens N] [--in-progress N] [--prompt-bytes N]\n",
               stderr);
    return 2;
  }
  const std::string auth = o->api_key.empty() ? "" : "Authorization: Bearer " + o->api_key + "\r\n";
  std::string request;
  if (o->stream) {
    std::string prompt = "hold";
    prompt.resize(static_cast<std::size_t>(o->prompt_bytes), ' ');
    for (std::size_t i = 5; i < prompt.size(); i += 5) prompt[i] = 'w';  // "hold w    w    w..."
    const std::string body = "{\"model\":\"" + o->model + "\",\"prompt\":\"" + prompt + "\",\"max_tokens\":" +
                             std::to_string(o->max_tokens) + ",\"ignore_eos\":true,\"stream\":true}";
    request = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + auth +
              "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  } else {
    request = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + "\r\n";
  }
  const tcp::endpoint ep(net::ip::make_address("127.0.0.1"), o->port);
  net::io_context ioc(1);
  State st;
  std::vector<std::shared_ptr<tcp::socket>> sockets;
  sockets.reserve(static_cast<std::size_t>(o->connections));

  // Opens the connections, at most in_progress at a time; then reports.
  net::co_spawn(
      ioc,
      [&]() -> Task<void> {
        net::steady_timer t(ioc);
        for (int i = 0; i < o->connections; ++i) {
          while (i - st.settled() >= o->in_progress) {
            t.expires_after(std::chrono::milliseconds(5));
            co_await t.async_wait(kTuple);
          }
          sockets.push_back(std::make_shared<tcp::socket>(ioc));
          net::co_spawn(ioc, client(ep, request, o->stream, st, sockets.back()), net::detached);
        }
        while (st.settled() < o->connections) {
          t.expires_after(std::chrono::milliseconds(20));
          co_await t.async_wait(kTuple);
        }
        std::printf("{\"phase\":\"opened\",\"open\":%d,\"failed\":%d,\"ended\":%d}\n", st.open, st.failed,
                    st.ended);
        std::fflush(stdout);
        // Holds until standard input ends.
        net::posix::stream_descriptor in(ioc, ::dup(STDIN_FILENO));
        char c;
        for (;;) {
          auto [ec, n] = co_await in.async_read_some(net::buffer(&c, 1), kTuple);
          if (ec) break;
        }
        std::printf("{\"phase\":\"closing\",\"still_open\":%d,\"ended_while_held\":%d}\n", st.open - st.ended,
                    st.ended);
        std::fflush(stdout);
        for (auto& s : sockets) {
          boost::system::error_code ignored;
          s->close(ignored);
        }
        ioc.stop();
      },
      net::detached);
  ioc.run();
  return 0;
}
