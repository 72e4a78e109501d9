#include "gateway/store/database.hpp"

#include <unistd.h>

#include <cstdlib>

#include "gateway/store/postgres_store.hpp"
#include "gateway/store/sqlite_store.hpp"

namespace arbiter::store {

std::string replica_name(const StoreConfig& settings) {
  if (!settings.replica.empty()) return settings.replica;
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 && name[0] ? name : "arbiter";
}

std::expected<std::string, std::string> postgres_url(const StoreConfig& settings) {
  if (settings.url_env.empty()) return settings.url;
  const char* value = std::getenv(settings.url_env.c_str());
  if (value == nullptr || *value == '\0') {
    return std::unexpected("environment variable " + settings.url_env + " (store.url_env) is not set");
  }
  return std::string(value);
}

std::expected<std::unique_ptr<Database>, std::string> open_database(const StoreConfig& settings, std::string replica) {
  auto url = postgres_url(settings);
  if (!url) return std::unexpected(url.error());
  if (!url->empty()) return PostgresStore::open(std::move(*url), std::move(replica));
  return SqliteStore::open(settings.path, std::move(replica));
}

}  // namespace arbiter::store
