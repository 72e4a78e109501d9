#include "http/server_tls.hpp"

#include <sys/stat.h>

namespace arbiter {

std::expected<std::shared_ptr<ServerTls>, std::string> ServerTls::load(ListenerTlsConfig config) {
  const Stamps stamps = stamps_of(config);
  auto context = make_server_tls(config);
  if (!context) return std::unexpected(context.error());
  return std::shared_ptr<ServerTls>(new ServerTls(std::move(config), std::move(*context), stamps));
}

ServerTls::ServerTls(ListenerTlsConfig config, TlsContext context, Stamps stamps)
    : config_(std::move(config)), seen_(stamps), current_(std::move(context)) {}

ServerTls::Stamps ServerTls::stamps_of(const ListenerTlsConfig& config) {
  Stamps out;
  const std::string* files[] = {&config.cert_file, &config.key_file, &config.client_ca_file};
  for (std::size_t i = 0; i < out.size(); ++i) {
    struct stat st{};
    if (!files[i]->empty() && ::stat(files[i]->c_str(), &st) == 0) {
      out[i].mtime = st.st_mtim;
      out[i].size = st.st_size;
    }
  }
  return out;
}

TlsContext ServerTls::current() const {
  std::lock_guard lock(mu_);
  return current_;
}

std::optional<std::string> ServerTls::reload_if_changed() {
  const Stamps now = stamps_of(config_);
  if (now == seen_) return std::nullopt;
  seen_ = now;
  auto context = make_server_tls(config_);
  if (!context) return context.error();
  std::lock_guard lock(mu_);
  current_ = std::move(*context);
  return std::string();
}

}  // namespace arbiter
