// The listener's TLS context, reloaded when its files change: the server
// checks their modification times every second (reload_if_changed); new
// connections get the new certificate, open ones keep theirs. A file that
// does not load (a half-written certificate, a key that does not match yet)
// keeps the old context until the files change again.
#pragma once

#include <array>
#include <chrono>
#include <ctime>
#include <expected>
#include <mutex>
#include <optional>
#include <string>

#include "http/tls_context.hpp"

namespace arbiter {

class ServerTls {
 public:
  static constexpr std::chrono::seconds kCheckEvery{1};

  // The first context; an error when the files do not load.
  static std::expected<std::shared_ptr<ServerTls>, std::string> load(ListenerTlsConfig config);

  const std::string& cert_file() const { return config_.cert_file; }
  // The context for a new connection.
  TlsContext current() const;

  // Rebuilds the context when a file changed. nullopt: nothing changed;
  // else an empty string (reloaded) or why the new files were refused.
  std::optional<std::string> reload_if_changed();

 private:
  struct Stamp {
    std::timespec mtime{};
    long long size = -1;
    bool operator==(const Stamp& o) const {
      return mtime.tv_sec == o.mtime.tv_sec && mtime.tv_nsec == o.mtime.tv_nsec && size == o.size;
    }
  };
  using Stamps = std::array<Stamp, 3>;  // cert, key, client CA
  ServerTls(ListenerTlsConfig config, TlsContext context, Stamps stamps);
  static Stamps stamps_of(const ListenerTlsConfig& config);

  const ListenerTlsConfig config_;
  Stamps seen_;  // the files' stamps when last loaded or refused
  mutable std::mutex mu_;
  TlsContext current_;  // guarded by mu_
};

}  // namespace arbiter
