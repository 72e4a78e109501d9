#include "support/tls_client.hpp"

#include <openssl/bn.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <stdexcept>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

namespace arbiter::test {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
using net::ip::tcp;
using boost::system::error_code;

struct TlsConnection::Impl {
  net::io_context ioc;
  ssl::context ctx{ssl::context::tls_client};
  tcp::socket sock{ioc};
  std::optional<ssl::stream<tcp::socket&>> tls;
  boost::beast::flat_buffer buf;

  // Runs one operation to completion or until the deadline (then the
  // socket is closed and TimeoutError thrown).
  template <class Start>
  error_code run(Start start, Millis timeout, const char* what) {
    std::optional<error_code> result;
    start([&result](error_code ec, auto&&...) { result = ec; });
    ioc.restart();
    ioc.run_for(timeout);
    if (!result) {
      error_code ignored;
      sock.close(ignored);
      ioc.restart();
      ioc.run();
      throw TimeoutError(std::string("TlsConnection: timed out ") + what);
    }
    return *result;
  }
};

TlsConnection::TlsConnection(uint16_t port, const TlsClientOptions& options, Millis timeout)
    : impl_(std::make_unique<Impl>()) {
  SSL_CTX* ctx = impl_->ctx.native_handle();
  if (options.min_version) SSL_CTX_set_min_proto_version(ctx, options.min_version);
  if (options.max_version) SSL_CTX_set_max_proto_version(ctx, options.max_version);
  if (!options.ca_file.empty()) impl_->ctx.load_verify_file(options.ca_file);
  impl_->ctx.set_verify_mode(ssl::verify_peer);
  if (!options.cert_file.empty()) {
    impl_->ctx.use_certificate_chain_file(options.cert_file);
    impl_->ctx.use_private_key_file(options.key_file, ssl::context::pem);
  }
  static constexpr unsigned char kAlpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  SSL_CTX_set_alpn_protos(ctx, kAlpn, sizeof kAlpn);

  const tcp::endpoint ep(net::ip::make_address("127.0.0.1"), port);
  auto ec = impl_->run([&](auto handler) { impl_->sock.async_connect(ep, handler); }, timeout, "connecting");
  if (ec) throw std::runtime_error("TlsConnection: connect failed: " + ec.message());
  impl_->tls.emplace(impl_->sock, impl_->ctx);
  SSL* s = impl_->tls->native_handle();
  error_code not_ip;
  net::ip::make_address(options.host, not_ip);
  if (not_ip) {
    SSL_set_tlsext_host_name(s, options.host.c_str());
    SSL_set1_host(s, options.host.c_str());
  } else {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s), options.host.c_str());
  }
  ec = impl_->run([&](auto handler) { impl_->tls->async_handshake(ssl::stream_base::client, handler); }, timeout,
                  "in the TLS handshake");
  if (ec) {
    std::string why = ec.message();
    if (const long v = SSL_get_verify_result(s); v != X509_V_OK) {
      why += std::string(" (") + X509_verify_cert_error_string(v) + ")";
    }
    throw std::runtime_error("TlsConnection: TLS handshake failed: " + why);
  }
}

TlsConnection::~TlsConnection() = default;

HttpResponse TlsConnection::request(const HttpRequest& request, Millis timeout) {
  http::request<http::string_body> req;
  req.method_string(request.method);
  req.target(request.target);
  req.version(11);
  req.set(http::field::host, "127.0.0.1");
  for (const auto& [k, v] : request.headers) req.set(k, v);
  req.body() = request.body;
  if (!request.body.empty() || request.method == "POST") req.prepare_payload();
  auto ec = impl_->run([&](auto handler) { http::async_write(*impl_->tls, req, handler); }, timeout,
                       "writing the request");
  if (ec) throw std::runtime_error("TlsConnection: write failed: " + ec.message());
  http::response_parser<http::string_body> parser;
  parser.body_limit(64u << 20);
  ec = impl_->run([&](auto handler) { http::async_read(*impl_->tls, impl_->buf, parser, handler); }, timeout,
                  "reading the response");
  if (ec) throw std::runtime_error("TlsConnection: reading the response failed: " + ec.message());
  HttpResponse out;
  const auto& res = parser.get();
  out.status = static_cast<int>(res.result_int());
  for (const auto& f : res) {
    std::string name(f.name_string());
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    out.headers.emplace_back(std::move(name), std::string(f.value()));
  }
  out.body = res.body();
  return out;
}

std::string TlsConnection::tls_version() const { return SSL_get_version(impl_->tls->native_handle()); }

std::string TlsConnection::alpn() const {
  const unsigned char* data = nullptr;
  unsigned len = 0;
  SSL_get0_alpn_selected(impl_->tls->native_handle(), &data, &len);
  return std::string(reinterpret_cast<const char*>(data), len);
}

std::string TlsConnection::peer_serial() const {
  X509* cert = SSL_get0_peer_certificate(impl_->tls->native_handle());
  if (!cert) return "";
  BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr);
  char* hex = BN_bn2hex(bn);
  std::string out(hex);
  OPENSSL_free(hex);
  BN_free(bn);
  return out;
}

}  // namespace arbiter::test
