#include "support/test_pki.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <atomic>
#include <cstdio>
#include <ctime>
#include <stdexcept>

namespace arbiter::test {

namespace {

std::atomic<long> next_serial{1};

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("TestPki: ") + what + " failed");
}

void add_ext(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  check(ext != nullptr, "an extension");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A certificate for `key`, with `issuer` (null: self-signed) signing it.
X509* make_cert(EVP_PKEY* key, const CertSpec& spec, X509* issuer, EVP_PKEY* issuer_key, bool ca) {
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  // Serials unique across processes and runs of this one.
  ASN1_INTEGER_set(X509_get_serialNumber(cert), (static_cast<long>(::time(nullptr)) << 16) + next_serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert), spec.valid_from_s);
  X509_gmtime_adj(X509_getm_notAfter(cert), spec.valid_until_s);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(spec.common_name.c_str()),
                             -1, -1, 0);
  X509_set_issuer_name(cert, issuer ? X509_get_subject_name(issuer) : name);
  X509* signer = issuer ? issuer : cert;
  add_ext(cert, signer, NID_subject_key_identifier, "hash");
  if (ca) {
    add_ext(cert, signer, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(cert, signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    add_ext(cert, signer, NID_authority_key_identifier, "keyid:always");
    add_ext(cert, signer, NID_basic_constraints, "critical,CA:FALSE");
    std::string san;
    for (const auto& d : spec.dns) san += (san.empty() ? "" : ",") + std::string("DNS:") + d;
    for (const auto& ip : spec.ips) san += (san.empty() ? "" : ",") + std::string("IP:") + ip;
    if (!san.empty()) add_ext(cert, signer, NID_subject_alt_name, san);
  }
  check(X509_sign(cert, issuer_key, EVP_sha256()) > 0, "signing");
  return cert;
}

void write_pem(const std::string& path, X509* cert, EVP_PKEY* key) {
  FILE* f = std::fopen(path.c_str(), "w");
  check(f != nullptr, "opening a file");
  const bool ok = cert ? PEM_write_X509(f, cert) == 1
                       : PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
  std::fclose(f);
  check(ok, "writing PEM");
}

}  // namespace

TestPki::TestPki(std::string dir, std::string name) : dir_(std::move(dir)), ca_file_(dir_ + "/" + name + "-ca.pem") {
  ca_key_ = EVP_EC_gen("P-256");
  check(ca_key_ != nullptr, "making a key");
  ca_cert_ = make_cert(ca_key_, {.common_name = name + " test CA", .valid_until_s = 86'400 * 30}, nullptr, ca_key_, true);
  write_pem(ca_file_, ca_cert_, nullptr);
}

TestPki::~TestPki() {
  X509_free(ca_cert_);
  EVP_PKEY_free(ca_key_);
}

void TestPki::issue(const std::string& file, const CertSpec& spec) {
  EVP_PKEY* pkey = EVP_EC_gen("P-256");
  check(pkey != nullptr, "making a key");
  X509* x = make_cert(pkey, spec, ca_cert_, ca_key_, false);
  // Each file appears whole (renamed into place), the key first.
  write_pem(key(file) + ".tmp", nullptr, pkey);
  write_pem(cert(file) + ".tmp", x, nullptr);
  std::rename((key(file) + ".tmp").c_str(), key(file).c_str());
  std::rename((cert(file) + ".tmp").c_str(), cert(file).c_str());
  X509_free(x);
  EVP_PKEY_free(pkey);
}

}  // namespace arbiter::test
