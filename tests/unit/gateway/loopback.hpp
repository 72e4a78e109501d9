// A ClientConnection over a real loopback TCP pair, for unit tests of code
// that answers a client: the test holds the other end and reads what was
// written, or closes it to play a client that went away.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "http/client_connection.hpp"
#include "http/deadline.hpp"

namespace arbiter::testing {

class Loopback {
 public:
  explicit Loopback(net::io_context& ioc) : client_(ioc), server_(tcp::socket(ioc)) {
    tcp::acceptor acceptor(ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    client_.connect(acceptor.local_endpoint());
    acceptor.accept(server_.socket());
    conn_ = std::make_unique<ClientConnection>(server_, buffer_, deadline_, std::chrono::seconds(5), draining_);
    conn_->start(owner_);
    conn_->begin_request(true);
  }

  ClientConnection& conn() { return *conn_; }
  // Everything the connection wrote so far (waits briefly for it).
  std::string received() {
    std::string out;
    client_.non_blocking(true);
    char buf[4096];
    for (int idle = 0; idle < 50;) {
      beast::error_code ec;
      const std::size_t n = client_.read_some(net::buffer(buf), ec);
      if (n > 0) {
        out.append(buf, n);
        idle = 0;
      } else {
        ++idle;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      if (ec && ec != net::error::would_block) break;
    }
    return out;
  }
  // The client goes away.
  void close_client() {
    beast::error_code ignored;
    client_.close(ignored);
  }

 private:
  tcp::socket client_;
  Stream server_;
  beast::flat_buffer buffer_;
  Deadline deadline_;
  std::atomic<bool> draining_{false};
  std::shared_ptr<int> owner_ = std::make_shared<int>(0);
  std::unique_ptr<ClientConnection> conn_;
};

}  // namespace arbiter::testing
