// Certificates for TLS tests, made with the OpenSSL API into a directory: a
// private CA and certificates it signs (servers, clients, expired ones, ones
// for another host). Keys are P-256.
#pragma once

#include <openssl/types.h>

#include <string>
#include <vector>

namespace arbiter::test {

struct CertSpec {
  std::string common_name;
  std::vector<std::string> dns;  // subjectAltName DNS entries
  std::vector<std::string> ips;  // subjectAltName IP entries
  long valid_from_s = -3600;     // notBefore, seconds from now
  long valid_until_s = 86'400;   // notAfter, seconds from now (negative: expired)
};

class TestPki {
 public:
  // A new CA ("<dir>/<name>-ca.pem"), its key kept in memory.
  TestPki(std::string dir, std::string name);
  ~TestPki();
  TestPki(const TestPki&) = delete;
  TestPki& operator=(const TestPki&) = delete;

  const std::string& ca_file() const { return ca_file_; }
  // Issues "<dir>/<file>.pem" and "<dir>/<file>.key", signed by this CA.
  void issue(const std::string& file, const CertSpec& spec);
  // For 127.0.0.1 and localhost.
  void issue_server(const std::string& file) { issue(file, {.common_name = "localhost", .dns = {"localhost"}, .ips = {"127.0.0.1"}}); }
  std::string cert(const std::string& file) const { return dir_ + "/" + file + ".pem"; }
  std::string key(const std::string& file) const { return dir_ + "/" + file + ".key"; }

 private:
  std::string dir_;
  std::string ca_file_;
  EVP_PKEY* ca_key_ = nullptr;
  X509* ca_cert_ = nullptr;
};

}  // namespace arbiter::test
