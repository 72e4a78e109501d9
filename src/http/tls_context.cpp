#include "http/tls_context.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <stdexcept>

#include "http/ip_literal.hpp"

namespace arbiter {

namespace {

constexpr unsigned char kAlpnHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

// ALPN: http/1.1 is the one protocol served; a client that offers ALPN
// without it is refused (RFC 7301), one that offers none is served.
int select_alpn(SSL*, const unsigned char** out, unsigned char* out_len, const unsigned char* in,
                unsigned in_len, void*) {
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, out_len, kAlpnHttp11, sizeof kAlpnHttp11, in, in_len) !=
      OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

std::string failure(const std::string& what, const std::string& file, const beast::error_code& ec) {
  return what + " " + file + ": " + ec.message();
}

// Certificate chain, then its key: OpenSSL checks the key against the
// certificate ("key values mismatch").
std::expected<void, std::string> load_identity(ssl::context& ctx, const std::string& cert_file,
                                               const std::string& key_file) {
  beast::error_code ec;
  ctx.use_certificate_chain_file(cert_file, ec);
  if (ec) return std::unexpected(failure("cannot load the certificate chain from", cert_file, ec));
  ctx.use_private_key_file(key_file, ssl::context::pem, ec);
  if (ec) return std::unexpected(failure("cannot load the private key from", key_file, ec));
  return {};
}

std::string asn1_text(const ASN1_STRING* s) {
  unsigned char* utf8 = nullptr;
  const int n = ASN1_STRING_to_UTF8(&utf8, s);
  if (n < 0) return {};
  std::string out(reinterpret_cast<const char*>(utf8), static_cast<std::size_t>(n));
  OPENSSL_free(utf8);
  return out;
}

}  // namespace

std::expected<TlsContext, std::string> make_server_tls(const ListenerTlsConfig& config) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* h = ctx->native_handle();
  SSL_CTX_set_min_proto_version(h, config.min_version == "1.2" ? TLS1_2_VERSION : TLS1_3_VERSION);
  SSL_CTX_set_options(h, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (auto loaded = load_identity(*ctx, config.cert_file, config.key_file); !loaded) {
    return std::unexpected(loaded.error());
  }
  SSL_CTX_set_alpn_select_cb(h, select_alpn, nullptr);
  static constexpr unsigned char kSessionContext[] = "arbiter";
  SSL_CTX_set_session_id_context(h, kSessionContext, sizeof kSessionContext - 1);
  if (config.client_cert != "off") {
    beast::error_code ec;
    ctx->load_verify_file(config.client_ca_file, ec);
    if (ec) return std::unexpected(failure("cannot load the client CA bundle from", config.client_ca_file, ec));
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(config.client_ca_file.c_str())) {
      SSL_CTX_set_client_CA_list(h, names);  // what the server asks for
    }
    int mode = SSL_VERIFY_PEER;
    if (config.client_cert == "required") mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    SSL_CTX_set_verify(h, mode, nullptr);
  }
  ERR_clear_error();
  return ctx;
}

std::expected<TlsContext, std::string> make_client_tls(const BackendConfig& backend) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  SSL_CTX* h = ctx->native_handle();
  SSL_CTX_set_min_proto_version(h, TLS1_3_VERSION);
  SSL_CTX_set_options(h, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  beast::error_code ec;
  if (!backend.ca_file.empty()) {
    ctx->load_verify_file(backend.ca_file, ec);
    if (ec) return std::unexpected(failure("cannot load the CA bundle from", backend.ca_file, ec));
  } else {
    ctx->set_default_verify_paths(ec);
    if (ec) return std::unexpected("cannot load the system's CA store: " + ec.message());
  }
  ctx->set_verify_mode(ssl::verify_peer);
  if (!backend.cert_file.empty()) {
    if (auto loaded = load_identity(*ctx, backend.cert_file, backend.key_file); !loaded) {
      return std::unexpected(loaded.error());
    }
  }
  SSL_CTX_set_alpn_protos(h, kAlpnHttp11, sizeof kAlpnHttp11);
  ERR_clear_error();
  return ctx;
}

TlsContext client_tls_for(const BackendConfig& backend) {
  if (!backend.tls) return nullptr;
  auto tls = make_client_tls(backend);
  if (!tls) throw std::runtime_error("backend " + backend.name + ": " + tls.error());
  return std::move(*tls);
}

void prepare_client_handshake(SSL* s, const std::string& host) {
  // An address (a URL's IPv6 one in brackets) is checked against the
  // certificate's IP names, and sent as no SNI (RFC 6066 allows names only).
  if (const auto address = ip_literal(host)) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s), address->to_string().c_str());
  } else {
    SSL_set_tlsext_host_name(s, host.c_str());
    SSL_set1_host(s, host.c_str());
  }
}

std::string handshake_failure(SSL* s, const beast::error_code& ec) {
  std::string out = ec.message();
  if (const long verdict = SSL_get_verify_result(s); verdict != X509_V_OK) {
    out += std::string(" (") + X509_verify_cert_error_string(verdict) + ")";
  }
  ERR_clear_error();
  return out;
}

std::vector<std::string> verified_peer_names(TlsStream& stream) {
  std::vector<std::string> names;
  SSL* s = stream.native_handle();
  X509* cert = SSL_get0_peer_certificate(s);
  if (!cert || SSL_get_verify_result(s) != X509_V_OK) return names;
  const X509_NAME* subject = X509_get_subject_name(cert);
  for (int i = X509_NAME_get_index_by_NID(subject, NID_commonName, -1); i >= 0;
       i = X509_NAME_get_index_by_NID(subject, NID_commonName, i)) {
    names.push_back(asn1_text(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i))));
  }
  auto* sans = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  for (int i = 0; sans && i < sk_GENERAL_NAME_num(sans); ++i) {
    const GENERAL_NAME* n = sk_GENERAL_NAME_value(sans, i);
    if (n->type == GEN_DNS) names.push_back(asn1_text(n->d.dNSName));
    if (n->type == GEN_URI) names.push_back(asn1_text(n->d.uniformResourceIdentifier));
  }
  if (sans) GENERAL_NAMES_free(sans);
  return names;
}

}  // namespace arbiter
