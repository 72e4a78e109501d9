// OpenSSL contexts for the two ends the gateway speaks TLS on: its listener
// (certificate and key, TLS 1.3 unless 1.2 is allowed, ALPN http/1.1,
// optional client certificates) and its HTTPS backends (CA verification of
// the engine's certificate and host, SNI, an optional client certificate).
// Files are read when a context is built: a bad one is an error message,
// never a context without it.
#pragma once

#include <expected>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"
#include "http/stream.hpp"

namespace arbiter {

using TlsContext = std::shared_ptr<ssl::context>;

// The listener's context (listener.tls).
std::expected<TlsContext, std::string> make_server_tls(const ListenerTlsConfig& config);
// A backend's context (url https://, ca_file, cert_file, key_file).
std::expected<TlsContext, std::string> make_client_tls(const BackendConfig& backend);
// The same for a backend the config loader accepted: null for plain HTTP;
// throws std::runtime_error when its files no longer load.
TlsContext client_tls_for(const BackendConfig& backend);

// Before a client handshake on `ssl` (an Asio TLS stream's native_handle()):
// SNI (a host name, not an IP literal) and the name or address the engine's
// certificate must carry.
void prepare_client_handshake(SSL* ssl, const std::string& host);

// Why a handshake failed: Asio's error, and the certificate check's verdict
// when it is what failed ("certificate has expired", "IP address mismatch").
std::string handshake_failure(SSL* ssl, const beast::error_code& ec);

// After a server handshake: the subject CN and the DNS and URI SANs of the
// client's certificate when it sent one and it verified; empty otherwise.
std::vector<std::string> verified_peer_names(TlsStream& stream);

}  // namespace arbiter
