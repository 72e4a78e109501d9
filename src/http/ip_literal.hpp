// A backend's host as its URL writes it ("10.0.0.5", "[fd00::5]",
// "engine.internal"), read as an IP address when it is one: what connecting
// (no resolving), certificate checks (the certificate's IP names) and SNI
// (names only) go by.
#pragma once

#include <optional>
#include <string_view>

#include "http/asio.hpp"

namespace arbiter {

// The address; nullopt for a name. An IPv6 address may come in brackets.
inline std::optional<net::ip::address> ip_literal(std::string_view host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  beast::error_code ec;
  const auto address = net::ip::make_address(host, ec);
  if (ec) return std::nullopt;
  return address;
}

}  // namespace arbiter
