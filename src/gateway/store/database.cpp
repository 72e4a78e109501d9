#include "gateway/store/database.hpp"

#include <cstdlib>

#include "gateway/store/postgres_store.hpp"
#include "gateway/store/sqlite_store.hpp"

namespace arbiter::store {

std::expected<std::unique_ptr<Database>, std::string> open_database(const StoreConfig& settings, std::string replica) {
  std::string url = settings.url;
  if (!settings.url_env.empty()) {
    const char* value = std::getenv(settings.url_env.c_str());
    if (value == nullptr || *value == '\0') {
      return std::unexpected("environment variable " + settings.url_env + " (store.url_env) is not set");
    }
    url = value;
  }
  if (!url.empty()) return PostgresStore::open(std::move(url), std::move(replica));
  return SqliteStore::open(settings.path, std::move(replica));
}

}  // namespace arbiter::store
