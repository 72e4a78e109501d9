// A connection's byte stream: plain TCP, or TLS over it (OpenSSL through
// Asio's ssl::stream). The server's sessions, ClientConnection, the upstream
// pool and the relay are written once against it; each operation is one
// branch on which it holds, never a virtual call, so the plain path does
// what it did on a bare socket.
#pragma once

#include <variant>

#include <boost/asio/ssl.hpp>

#include "http/asio.hpp"

namespace arbiter {

namespace ssl = boost::asio::ssl;
using TlsStream = ssl::stream<tcp::socket>;

class Stream {
 public:
  using executor_type = tcp::socket::executor_type;

  explicit Stream(tcp::socket socket) : s_(std::in_place_type<tcp::socket>, std::move(socket)) {}
  Stream(tcp::socket socket, ssl::context& tls) : s_(std::in_place_type<TlsStream>, std::move(socket), tls) {}

  // The TCP socket (under TLS, the one it runs over): options, deadlines,
  // closing.
  tcp::socket& socket() {
    if (auto* t = std::get_if<TlsStream>(&s_)) return t->next_layer();
    return std::get<tcp::socket>(s_);
  }
  // The TLS stream, or null for plain TCP.
  TlsStream* tls() { return std::get_if<TlsStream>(&s_); }

  executor_type get_executor() { return socket().get_executor(); }

  template <class Buffers, class Token>
  auto async_read_some(const Buffers& buffers, Token&& token) {
    if (auto* t = std::get_if<TlsStream>(&s_)) return t->async_read_some(buffers, std::forward<Token>(token));
    return std::get<tcp::socket>(s_).async_read_some(buffers, std::forward<Token>(token));
  }
  template <class Buffers, class Token>
  auto async_write_some(const Buffers& buffers, Token&& token) {
    if (auto* t = std::get_if<TlsStream>(&s_)) return t->async_write_some(buffers, std::forward<Token>(token));
    return std::get<tcp::socket>(s_).async_write_some(buffers, std::forward<Token>(token));
  }

  void close() {
    beast::error_code ignored;
    socket().close(ignored);
  }

 private:
  std::variant<tcp::socket, TlsStream> s_;
};

}  // namespace arbiter
