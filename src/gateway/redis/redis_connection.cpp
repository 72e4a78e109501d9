#include "gateway/redis/redis_connection.hpp"

#include <charconv>
#include <mutex>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

namespace arbiter {

// One call in flight: its timer runs on the caller's executor; the reply
// (on the connection's thread) fills `result` and cancels the timer there.
struct RedisConnection::Call {
  explicit Call(net::any_io_executor ex) : executor(ex), timer(ex) {}
  net::any_io_executor executor;
  net::steady_timer timer;
  std::mutex mu;
  std::optional<std::expected<RedisReply, std::string>> result;
  bool abandoned = false;  // the caller timed out
};

namespace {

RedisReply convert(const redisReply* r) {
  RedisReply out;
  switch (r->type) {
    case REDIS_REPLY_INTEGER:
      out.type = RedisReply::Type::kInteger;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
      out.type = r->type == REDIS_REPLY_STRING   ? RedisReply::Type::kString
                 : r->type == REDIS_REPLY_STATUS ? RedisReply::Type::kStatus
                                                 : RedisReply::Type::kError;
      out.text.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ARRAY:
      out.type = RedisReply::Type::kArray;
      for (std::size_t i = 0; i < r->elements; ++i) out.elements.push_back(convert(r->element[i]));
      break;
    default:
      break;  // nil
  }
  return out;
}

}  // namespace

std::optional<RedisAddress> parse_redis_address(std::string_view host_port) {
  const auto colon = host_port.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  int port = 0;
  const char* end = host_port.data() + host_port.size();
  if (std::from_chars(host_port.data() + colon + 1, end, port).ptr != end || port < 1 || port > 65535) {
    return std::nullopt;
  }
  return RedisAddress{.host = std::string(host_port.substr(0, colon)), .port = static_cast<uint16_t>(port)};
}

RedisConnection::RedisConnection(net::any_io_executor executor, RedisAddress address)
    : executor_(executor), host_(std::move(address.host)), port_(address.port) {}

RedisConnection::~RedisConnection() {
  // Pending calls get their callbacks (null replies) from the free.
  if (ac_) redisAsyncFree(ac_);
}

Task<std::expected<RedisReply, std::string>> RedisConnection::call(std::vector<std::string> argv,
                                                                    std::chrono::milliseconds timeout) {
  auto call = std::make_shared<Call>(co_await net::this_coro::executor);
  call->timer.expires_after(timeout);
  net::post(executor_, [this, call, argv = std::move(argv)] { send(call, argv); });
  (void)co_await call->timer.async_wait(kAsTuple);
  std::lock_guard lock(call->mu);
  if (call->result) co_return std::move(*call->result);
  call->abandoned = true;
  co_return std::unexpected(std::string("timeout"));
}

void RedisConnection::complete(const std::shared_ptr<Call>& call, std::expected<RedisReply, std::string> result) {
  {
    std::lock_guard lock(call->mu);
    if (call->abandoned || call->result) return;
    call->result = std::move(result);
  }
  net::post(call->executor, [call] { call->timer.cancel(); });
}

void RedisConnection::on_reply(redisAsyncContext*, void* reply, void* privdata) {
  std::unique_ptr<std::shared_ptr<Call>> call(static_cast<std::shared_ptr<Call>*>(privdata));
  if (reply) {
    complete(*call, convert(static_cast<redisReply*>(reply)));
  } else {
    complete(*call, std::unexpected(std::string("disconnected")));
  }
}

void RedisConnection::send(const std::shared_ptr<Call>& call, const std::vector<std::string>& argv) {
  std::string error;
  if (!ac_ && !connect(error)) {
    complete(call, std::unexpected("connect: " + error));
    return;
  }
  std::vector<const char*> args;
  std::vector<size_t> lens;
  for (const std::string& a : argv) {
    args.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* privdata = new std::shared_ptr<Call>(call);
  if (redisAsyncCommandArgv(ac_, &RedisConnection::on_reply, privdata, static_cast<int>(args.size()), args.data(),
                            lens.data()) != REDIS_OK) {
    delete privdata;
    complete(call, std::unexpected(std::string("disconnected")));
  }
}

bool RedisConnection::connect(std::string& error) {
  redisAsyncContext* ac = redisAsyncConnect(host_.c_str(), port_);
  if (!ac || ac->err) {
    error = ac ? ac->errstr : "out of memory";
    if (ac) redisAsyncFree(ac);
    return false;
  }
  ac_ = ac;
  ++generation_;
  socket_ = std::make_unique<net::posix::stream_descriptor>(executor_, ac->c.fd);
  ac->ev.data = this;
  ac->ev.addRead = [](void* self) {
    auto* c = static_cast<RedisConnection*>(self);
    c->want_read_ = true;
    c->arm_read();
  };
  ac->ev.delRead = [](void* self) { static_cast<RedisConnection*>(self)->want_read_ = false; };
  ac->ev.addWrite = [](void* self) {
    auto* c = static_cast<RedisConnection*>(self);
    c->want_write_ = true;
    c->arm_write();
  };
  ac->ev.delWrite = [](void* self) { static_cast<RedisConnection*>(self)->want_write_ = false; };
  ac->ev.cleanup = [](void* self) { static_cast<RedisConnection*>(self)->cleanup(); };
  // Failures surface as null replies to the pending calls; the context is
  // freed by hiredis and cleanup() forgets it.
  redisAsyncSetConnectCallback(ac, [](const redisAsyncContext*, int) {});
  redisAsyncSetDisconnectCallback(ac, [](const redisAsyncContext*, int) {});
  return true;
}

void RedisConnection::arm_read() {
  if (read_armed_ || !socket_) return;
  read_armed_ = true;
  socket_->async_wait(net::posix::stream_descriptor::wait_read, [this, gen = generation_](beast::error_code ec) {
    if (gen != generation_) return;  // that context is gone
    read_armed_ = false;
    if (ec || !want_read_ || !ac_) return;
    redisAsyncHandleRead(ac_);  // may free the context (cleanup)
    if (gen == generation_ && want_read_) arm_read();
  });
}

void RedisConnection::arm_write() {
  if (write_armed_ || !socket_) return;
  write_armed_ = true;
  socket_->async_wait(net::posix::stream_descriptor::wait_write, [this, gen = generation_](beast::error_code ec) {
    if (gen != generation_) return;
    write_armed_ = false;
    if (ec || !want_write_ || !ac_) return;
    redisAsyncHandleWrite(ac_);
    if (gen == generation_ && want_write_) arm_write();
  });
}

void RedisConnection::cleanup() {
  // hiredis is freeing the context and closes the socket itself.
  ++generation_;
  if (socket_) (void)socket_->release();
  socket_.reset();
  ac_ = nullptr;
  want_read_ = want_write_ = read_armed_ = write_armed_ = false;
}

}  // namespace arbiter
