// One keep-alive HTTP/1.1 client connection and the request it sends.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "stats.hpp"

namespace loadgen {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
template <class T = void>
using Task = boost::asio::awaitable<T>;

// A ~N byte OpenAI chat request: the shape and size the gateway sees in production.
// `stream`: the request asks for an SSE stream.
inline std::string make_chat_body(const std::string& model, std::size_t target_bytes, bool stream = false) {
  const std::string head = R"({"model":")" + model + (stream ? R"(","stream":true)" : R"(")") +
                           R"(,"messages":[{"role":"user","content":")";
  const std::string tail = R"("}],"max_tokens":16})";
  constexpr std::string_view kFiller = "The quick brown fox jumps over the lazy dog. ";
  std::string content;
  const std::size_t fixed = head.size() + tail.size();
  const std::size_t want = target_bytes > fixed + 1 ? target_bytes - fixed : 1;
  while (content.size() < want) content += kFiller;
  content.resize(want);
  return head + content + tail;
}

// The whole request serialized once: every send writes the same bytes, so the
// load generator spends no time formatting.
inline std::string make_raw_request(const std::string& host, uint16_t port, const std::string& path,
                                    const std::string& body, const std::vector<std::string>& headers) {
  std::string r = "POST " + path + " HTTP/1.1\r\n";
  r += "Host: " + host + ":" + std::to_string(port) + "\r\n";
  r += "User-Agent: arbiter-loadgen\r\n";
  r += "Content-Type: application/json\r\n";
  for (const auto& h : headers) r += h + "\r\n";
  r += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  r += body;
  return r;
}

struct Outcome {
  Clock::time_point sent;  // before connect (if any) and write
  Clock::time_point done;
  // A stream: events received, when the first arrived, and the gaps between
  // consecutive events (events read together are 0 apart).
  uint64_t events = 0;
  Clock::time_point first_event;
  std::vector<int64_t>* gaps_ns = nullptr;  // the connection's, reused; valid until its next exchange
  unsigned status = 0;
  std::size_t body_bytes = 0;
  std::string error;  // empty on a 2xx
};

namespace ssl = boost::asio::ssl;

class Connection {
 public:
  // `tls`: an https:// target's context (the handshake is part of the first
  // request's time); null: plain HTTP.
  Connection(net::io_context& ctx, tcp::endpoint endpoint, ssl::context* tls = nullptr)
      : socket_(ctx), endpoint_(endpoint), tls_ctx_(tls) {}

  // Sends the request and reads the full response; connects first when needed.
  Task<Outcome> exchange(const std::string& request) {
    Outcome out;
    out.sent = Clock::now();
    boost::system::error_code ec;
    if (!socket_.is_open()) {
      co_await socket_.async_connect(endpoint_, net::redirect_error(net::use_awaitable, ec));
      if (ec) co_return fail(out, "connect: " + ec.message());
      socket_.set_option(tcp::no_delay(true), ec);
      buffer_.clear();
      if (tls_ctx_) {
        tls_ = std::make_unique<ssl::stream<tcp::socket&>>(socket_, *tls_ctx_);
        co_await tls_->async_handshake(ssl::stream_base::client, net::redirect_error(net::use_awaitable, ec));
        if (ec) co_return fail(out, "tls: " + ec.message());
      }
    }
    if (tls_) {
      co_await net::async_write(*tls_, net::buffer(request), net::redirect_error(net::use_awaitable, ec));
    } else {
      co_await net::async_write(socket_, net::buffer(request), net::redirect_error(net::use_awaitable, ec));
    }
    if (ec) co_return fail(out, "write: " + ec.message());
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    // A chunked (SSE) body is not kept: its events are counted and timed as
    // each read is parsed. An event ends at a blank line ("\n\n").
    gaps_.clear();
    out.gaps_ns = &gaps_;
    bool after_newline = false;
    Clock::time_point last_event;
    auto on_chunk = [&](std::uint64_t, std::string_view body, boost::system::error_code&) {
      std::optional<Clock::time_point> now;
      const char* const end = body.data() + body.size();
      for (const char* p = body.data(); p < end;) {
        // From line end to line end: the load generator must cost little
        // next to the proxies on the same cores.
        const auto* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
        if (nl == nullptr) {
          after_newline = false;
          break;
        }
        if (nl == p && after_newline) {
          if (!now) now = Clock::now();
          if (out.events++ == 0) {
            out.first_event = *now;
          } else {
            gaps_.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(*now - last_event).count());
          }
          last_event = *now;
          after_newline = false;
        } else {
          after_newline = true;
        }
        p = nl + 1;
      }
      out.body_bytes += body.size();
      return body.size();
    };
    parser.on_chunk_body(on_chunk);
    if (tls_) {
      co_await http::async_read(*tls_, buffer_, parser, net::redirect_error(net::use_awaitable, ec));
    } else {
      co_await http::async_read(socket_, buffer_, parser, net::redirect_error(net::use_awaitable, ec));
    }
    if (ec) co_return fail(out, "read: " + ec.message());
    out.done = Clock::now();
    const auto& res = parser.get();
    out.status = res.result_int();
    out.body_bytes += res.body().size();
    // A stream with a Content-Length (no chunks) was kept whole: its events
    // count as arriving with the end of the answer.
    if (!res.body().empty()) {
      on_chunk(0, res.body(), ec);
      out.first_event = out.done;
      gaps_.assign(out.events > 0 ? out.events - 1 : 0, 0);
    }
    if (!res.keep_alive()) close();
    if (out.status < 200 || out.status > 299) out.error = "status " + std::to_string(out.status);
    co_return out;
  }

  void close() {
    boost::system::error_code ignored;
    socket_.close(ignored);
  }

 private:
  Outcome fail(Outcome& out, std::string error) {
    close();
    out.done = Clock::now();
    out.error = std::move(error);
    return out;
  }

  tcp::socket socket_;
  tcp::endpoint endpoint_;
  ssl::context* tls_ctx_;
  std::unique_ptr<ssl::stream<tcp::socket&>> tls_;  // over socket_, new per connection
  beast::flat_buffer buffer_;
  std::vector<int64_t> gaps_;  // Outcome::gaps_ns
};

}  // namespace loadgen
