// One connection to a Redis server through hiredis's async API (Debian's
// libhiredis), driven by an Asio io_context: hiredis encodes commands and
// parses replies, Asio waits on its socket. Every hiredis call runs on that
// io_context's thread (one thread per context in IoPool), so none needs a
// lock; callers on other threads post to it. A call never waits longer than
// its timeout: a hung or unreachable server costs the caller that and no
// more (docs/quotas.md). A lost connection is made again on the next call.
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/asio.hpp"

struct redisAsyncContext;

namespace arbiter {

struct RedisReply {
  enum class Type : uint8_t { kNil, kInteger, kString, kStatus, kError, kArray };
  Type type = Type::kNil;
  long long integer = 0;
  std::string text;  // string, status or error
  std::vector<RedisReply> elements;
};

// "host:port" split; nullopt unless both are there and the port is 1-65535.
struct RedisAddress {
  std::string host;
  uint16_t port = 0;
};
std::optional<RedisAddress> parse_redis_address(std::string_view host_port);

class RedisConnection {
 public:
  RedisConnection(net::any_io_executor executor, RedisAddress address);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Sends one command; the reply, or why there is none ("timeout",
  // "disconnected", "connect: ..."). A Redis error reply is a reply.
  // From any thread.
  Task<std::expected<RedisReply, std::string>> call(std::vector<std::string> argv,
                                                     std::chrono::milliseconds timeout);

 private:
  struct Call;
  static void on_reply(redisAsyncContext* ac, void* reply, void* privdata);
  static void complete(const std::shared_ptr<Call>& call, std::expected<RedisReply, std::string> result);
  void send(const std::shared_ptr<Call>& call, const std::vector<std::string>& argv);
  bool connect(std::string& error);
  // hiredis's event hooks.
  void arm_read();
  void arm_write();
  void cleanup();

  net::any_io_executor executor_;  // serialises every hiredis call (a strand, or a one-thread context)
  std::string host_;
  uint16_t port_;
  redisAsyncContext* ac_ = nullptr;  // null: not connected
  std::unique_ptr<net::posix::stream_descriptor> socket_;
  uint64_t generation_ = 0;  // bumped when a context goes: stale waits do nothing
  bool want_read_ = false, want_write_ = false;
  bool read_armed_ = false, write_armed_ = false;
};

}  // namespace arbiter
