// A TLS 1.3 (or 1.2) HTTP/1.1 client connection for the TLS tests: it
// connects, completes the handshake (throwing with OpenSSL's reason when it
// fails) and then sends requests over the kept-alive connection, each
// bounded by its timeout, like HttpConnection (support/http_client.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "support/http_client.hpp"

namespace arbiter::test {

// Whom to trust, what to offer.
struct TlsClientOptions {
  std::string ca_file;    // the CA the server's certificate must chain to
  std::string cert_file;  // a client certificate (mTLS), with key_file
  std::string key_file;
  std::string host = "127.0.0.1";  // SNI (a name) and the name or address to verify
  int min_version = 0;    // e.g. TLS1_2_VERSION; 0: OpenSSL's default
  int max_version = 0;    // e.g. TLS1_2_VERSION to offer only TLS 1.2
};

class TlsConnection {
 public:
  TlsConnection(uint16_t port, const TlsClientOptions& options, Millis timeout = kDefaultTimeout);
  ~TlsConnection();
  TlsConnection(const TlsConnection&) = delete;
  TlsConnection& operator=(const TlsConnection&) = delete;

  // Sends a request (Host and Content-Length filled in) and reads the whole
  // response; throws when the connection fails.
  HttpResponse request(const HttpRequest& request, Millis timeout = kDefaultTimeout);

  std::string tls_version() const;  // "TLSv1.3"
  std::string alpn() const;         // the protocol the server chose
  std::string peer_serial() const;  // the server certificate's serial number (hex)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace arbiter::test
