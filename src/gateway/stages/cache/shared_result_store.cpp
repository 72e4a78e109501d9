#include "gateway/stages/cache/shared_result_store.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace arbiter {
namespace {

constexpr std::chrono::milliseconds kSkipAfterFailure{1000};

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The metric's kind of a failed call (RedisConnection says "timeout",
// "disconnected" or "connect: ...").
std::string_view failure_kind(const std::string& error) {
  return error == "timeout" ? std::string_view("timeout") : std::string_view("unreachable");
}

}  // namespace

SharedResultStore::SharedResultStore(net::any_io_executor executor, const cache::CacheConfig& config,
                                     CacheMetrics& metrics)
    : executor_(executor),
      connection_(executor, *parse_redis_address(config.redis)),
      timeout_(config.redis_timeout),
      metrics_(metrics) {}

bool SharedResultStore::available() const { return steady_ms() >= skip_until_ms_.load(std::memory_order_relaxed); }

std::string SharedResultStore::key_of(std::string_view model, const cache::CacheKey& key) {
  return fmt::format("arbiter:cache:{}:{:016x}{:016x}", model, key.hi, key.lo);
}

void SharedResultStore::count_error(std::string_view kind) { metrics_.shared_errors.with({kind}).inc(); }

void SharedResultStore::failed(std::string_view why) {
  count_error(why);
  skip_until_ms_.store(steady_ms() + kSkipAfterFailure.count(), std::memory_order_relaxed);
}

Task<std::optional<StoredValue>> SharedResultStore::get(const cache::CacheKey& key, std::string scope,
                                                        std::string model,
                                                        std::optional<std::chrono::milliseconds> max_age) {
  // (Arguments built before the co_await: GCC 12 miscompiles a braced list in it.)
  std::vector<std::string> argv{"GET", key_of(model, key)};
  auto reply = co_await connection_.call(std::move(argv), timeout_);
  if (!reply) {
    failed(failure_kind(reply.error()));
    co_return std::nullopt;
  }
  if (reply->type == RedisReply::Type::kNil) co_return std::nullopt;
  if (reply->type != RedisReply::Type::kString) {
    failed("reply");
    co_return std::nullopt;
  }
  auto value = decode_stored(reply->text);
  if (!value) {
    count_error("value");
    co_return std::nullopt;
  }
  if (value->scope != scope || value->model != model) co_return std::nullopt;  // a collision: not this one's
  if (max_age && unix_ms() - value->stored_at_ms > max_age->count()) co_return std::nullopt;
  co_return value;
}

void SharedResultStore::put(const cache::CacheKey& key, StoredValue value, std::chrono::seconds ttl) {
  if (!available()) return;
  value.stored_at_ms = unix_ms();
  net::co_spawn(
      executor_,
      // Encoded (deflated) there, not on the request's thread.
      [this, key = key_of(value.model, key), value = std::move(value), ttl]() mutable -> Task<void> {
        std::vector<std::string> argv{"SET", std::move(key), encode_stored(value), "PX",
                                      std::to_string(ttl.count() * 1000)};
        auto reply = co_await connection_.call(std::move(argv), timeout_);
        if (!reply) failed(failure_kind(reply.error()));
      },
      net::detached);
}

Task<std::expected<std::size_t, std::string>> SharedResultStore::flush(std::string model) {
  // SCAN's MATCH is a glob: a model's own * ? [ ] \ are escaped.
  std::string pattern = "arbiter:cache:";
  if (model.empty()) {
    pattern += "*";
  } else {
    for (const char c : model) {
      if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') pattern += '\\';
      pattern += c;
    }
    pattern += ":*";
  }
  std::size_t deleted = 0;
  std::string cursor = "0";
  constexpr int kMaxRounds = 100'000;  // a bound on a store that keeps growing under the scan
  for (int round = 0; round < kMaxRounds; ++round) {
    std::vector<std::string> scan{"SCAN", cursor, "MATCH", pattern, "COUNT", "500"};
    auto reply = co_await connection_.call(std::move(scan), std::chrono::milliseconds(1000));
    if (!reply) co_return std::unexpected(reply.error());
    if (reply->type != RedisReply::Type::kArray || reply->elements.size() != 2) {
      co_return std::unexpected(std::string("unexpected SCAN reply"));
    }
    cursor = reply->elements[0].text;
    std::vector<std::string> unlink{"UNLINK"};
    for (const RedisReply& k : reply->elements[1].elements) unlink.push_back(k.text);
    if (unlink.size() > 1) {
      auto removed = co_await connection_.call(std::move(unlink), std::chrono::milliseconds(1000));
      if (!removed) co_return std::unexpected(removed.error());
      deleted += static_cast<std::size_t>(std::max(0LL, removed->integer));
    }
    if (cursor == "0") co_return deleted;
  }
  co_return std::unexpected(std::string("the store kept growing under the scan"));
}

}  // namespace arbiter
