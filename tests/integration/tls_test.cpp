// TLS end to end (issue 16): real gateway processes on loopback with
// certificates made for the test (support/test_pki): TLS 1.3 and ALPN on the
// listener, TLS 1.2 refused unless allowed, untrusted and missing client
// certificates refused, client certificates naming tenants, certificate
// reload without dropping connections, and HTTPS backends (another gateway
// with a TLS listener in front of a simulated engine) with their
// certificates checked: a private CA, the host, expiry, upstream mTLS.
#include <openssl/ssl.h>

#include <thread>

#include <gtest/gtest.h>

#include "integration/sim_harness.hpp"
#include "support/gateway_process.hpp"
#include "support/metrics_text.hpp"
#include "support/test_pki.hpp"
#include "support/tls_client.hpp"

namespace arbiter::test::tls_test {
namespace {

const std::string kChat = R"({"model":"m1","messages":[{"role":"user","content":"hi"}],"max_tokens":4})";
const std::string kStream =
    R"({"model":"m1","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"stream":true})";

HttpRequest chat(const std::string& body = kChat, Headers headers = {}) {
  HttpRequest r = sim_post("/v1/chat/completions", body);
  for (auto& h : headers) r.headers.push_back(std::move(h));
  return r;
}

// A gateway whose model m1 (or `model`) is a simulated engine in its own
// process, behind a TLS listener with `tls_extra` added to listener.tls.
std::string tls_gateway_yaml(const TestPki& pki, const std::string& cert, const std::string& tls_extra = "",
                             const std::string& extra = "", const std::string& model = "m1") {
  return "listener: {address: 127.0.0.1, port: 0, threads: 2, tls: {cert_file: \"" + pki.cert(cert) +
         "\", key_file: \"" + pki.key(cert) + "\"" + tls_extra + "}}\n" +
         "models:\n  - name: " + model + "\n    backends:\n      - {type: sim, max_concurrency: 8}\n" + extra;
}

class TlsTest : public ::testing::Test {
 protected:
  TempDir dir_{"arbiter-tls"};
  TestPki pki_{dir_.path(), "main"};
  TlsClientOptions trusting() const { return {.ca_file = pki_.ca_file()}; }
};

TEST_F(TlsTest, ListenerNegotiatesTls13WithAlpnAndServesRequests) {
  pki_.issue_server("server");
  GatewayProcess gw(tls_gateway_yaml(pki_, "server"));
  TlsConnection conn(gw.port(), trusting());
  EXPECT_EQ(conn.tls_version(), "TLSv1.3");
  EXPECT_EQ(conn.alpn(), "http/1.1");
  const auto whole = conn.request(chat());
  ASSERT_EQ(whole.status, 200) << whole.body;
  EXPECT_EQ(whole.json().at("usage").at("completion_tokens").as_int64(), 4);
  // The same connection, kept alive: a stream.
  const auto stream = conn.request(chat(kStream));
  ASSERT_EQ(stream.status, 200) << stream.body;
  EXPECT_EQ(sse_payloads(stream.body).size(), 5u) << stream.body;  // the role, then 4 tokens
  EXPECT_NE(stream.body.find("data: [DONE]"), std::string::npos);
  // By host name too (SNI localhost).
  TlsConnection by_name(gw.port(), TlsClientOptions{.ca_file = pki_.ca_file(), .host = "localhost"});
  EXPECT_EQ(by_name.request({.method = "GET", .target = "/healthz"}).status, 200);
}

TEST_F(TlsTest, Tls12IsRefusedByDefaultAndAcceptedWhenConfigured) {
  pki_.issue_server("server");
  TlsClientOptions tls12 = trusting();
  tls12.max_version = TLS1_2_VERSION;
  {
    GatewayProcess gw(tls_gateway_yaml(pki_, "server"));
    EXPECT_THROW(TlsConnection(gw.port(), tls12), std::runtime_error);
  }
  GatewayProcess gw(tls_gateway_yaml(pki_, "server", ", min_version: \"1.2\""));
  TlsConnection conn(gw.port(), tls12);
  EXPECT_EQ(conn.tls_version(), "TLSv1.2");
  EXPECT_EQ(conn.request(chat()).status, 200);
  TlsConnection modern(gw.port(), trusting());
  EXPECT_EQ(modern.tls_version(), "TLSv1.3");
}

TEST_F(TlsTest, ClientsThatDoNotTrustTheCaOrSpeakPlainHttpAreNotServed) {
  pki_.issue_server("server");
  GatewayProcess gw(tls_gateway_yaml(pki_, "server"));
  TestPki other(dir_.path(), "other");
  try {
    TlsConnection conn(gw.port(), TlsClientOptions{.ca_file = other.ca_file()});
    ADD_FAILURE() << "a client that does not trust the CA completed the handshake";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("certificate verify failed"), std::string::npos) << e.what();
  }
  // Plain HTTP on the TLS port gets no HTTP answer.
  HttpConnection plain(gw.port());
  plain.send({.method = "GET", .target = "/healthz"});
  EXPECT_THROW(plain.read_head(), std::runtime_error);
}

TEST_F(TlsTest, BadCertificateOrKeyAtStartIsAConfigError) {
  pki_.issue_server("server");
  pki_.issue_server("second");
  const std::string mismatched = "listener: {port: 0, tls: {cert_file: \"" + pki_.cert("server") + "\", key_file: \"" +
                                 pki_.key("second") + "\"}}\nmodels:\n  - name: m1\n    backends:\n      - {type: sim}\n";
  const CommandResult mismatch = run_arbiter_check(mismatched);
  EXPECT_EQ(mismatch.exit_code, 2) << mismatch.out << mismatch.err;
  EXPECT_NE((mismatch.out + mismatch.err).find("listener.tls: cannot load the private key from " + pki_.key("second") + ": key values mismatch"), std::string::npos)
      << mismatch.out << mismatch.err;
  const std::string missing = "listener: {port: 0, tls: {cert_file: \"" + dir_.file("none.pem") +
                              "\", key_file: \"" + pki_.key("server") + "\"}}\nmodels:\n  - name: m1\n    backends:\n      - {type: sim}\n";
  const CommandResult absent = run_arbiter_check(missing);
  EXPECT_EQ(absent.exit_code, 2);
  EXPECT_NE((absent.out + absent.err).find("cannot load the certificate chain from"), std::string::npos)
      << absent.out << absent.err;
}

// mTLS: a verified client certificate names a tenant; an API key that names
// one comes first.
TEST_F(TlsTest, ClientCertificateNamesItsTenant) {
  pki_.issue_server("server");
  pki_.issue("svc", {.common_name = "svc.internal"});
  pki_.issue("stranger", {.common_name = "nobody.internal"});
  const std::string tenants =
      "auth: {enabled: true}\n"
      "tenants:\n"
      "  - {name: alpha, api_keys: [sk-alpha-1]}\n"
      "  - {name: svc, client_cert_names: [svc.internal]}\n";
  GatewayProcess gw(tls_gateway_yaml(pki_, "server",
                                     ", client_cert: optional, client_ca_file: \"" + pki_.ca_file() + "\"", tenants));
  TlsClientOptions svc = trusting();
  svc.cert_file = pki_.cert("svc");
  svc.key_file = pki_.key("svc");
  TlsConnection with_cert(gw.port(), svc);
  const auto mapped = with_cert.request(chat(kChat, {{"x-request-id", "by-cert"}}));
  EXPECT_EQ(mapped.status, 200) << mapped.body;
  const auto keyed = with_cert.request(chat(kChat, {{"x-request-id", "by-key"}, {"authorization", "Bearer sk-alpha-1"}}));
  EXPECT_EQ(keyed.status, 200) << keyed.body;
  auto tenant_of = [&](const std::string& id) {
    const auto line = gw.wait_for_log([&](const boost::json::object& o) { return o.contains("request_id") && o.at("request_id").is_string() && o.at("request_id").as_string() == id; },
                                      Millis(5'000));
    return line ? std::string(line->at("tenant").as_string()) : std::string("(no log line)");
  };
  EXPECT_EQ(tenant_of("by-cert"), "svc");
  EXPECT_EQ(tenant_of("by-key"), "alpha");

  // No certificate (optional): no tenant, so 401 with auth on.
  TlsConnection without(gw.port(), trusting());
  EXPECT_EQ(without.request(chat()).status, 401);
  // A certificate that verifies but names no tenant: 401 too.
  TlsClientOptions stranger = trusting();
  stranger.cert_file = pki_.cert("stranger");
  stranger.key_file = pki_.key("stranger");
  TlsConnection unknown(gw.port(), stranger);
  EXPECT_EQ(unknown.request(chat()).status, 401);
  // A certificate from another CA is refused even though it is optional.
  TestPki other(dir_.path(), "other");
  other.issue("svc", {.common_name = "svc.internal"});
  TlsClientOptions forged = trusting();
  forged.cert_file = other.cert("svc");
  forged.key_file = other.key("svc");
  EXPECT_ANY_THROW({
    TlsConnection conn(gw.port(), forged);
    conn.request(chat());  // TLS 1.3: the server's refusal may come after the client's handshake
  });
}

TEST_F(TlsTest, RequiredClientCertificateRefusesClientsWithout) {
  pki_.issue_server("server");
  pki_.issue("svc", {.common_name = "svc.internal"});
  GatewayProcess gw(tls_gateway_yaml(pki_, "server",
                                     ", client_cert: required, client_ca_file: \"" + pki_.ca_file() + "\""));
  EXPECT_ANY_THROW({
    TlsConnection conn(gw.port(), trusting());
    conn.request(chat());
  });
  TlsClientOptions svc = trusting();
  svc.cert_file = pki_.cert("svc");
  svc.key_file = pki_.key("svc");
  TlsConnection conn(gw.port(), svc);
  EXPECT_EQ(conn.request(chat()).status, 200);
}

TEST_F(TlsTest, ReloadedCertificateServesNewConnectionsAndKeepsOpenOnes) {
  pki_.issue_server("server");
  GatewayProcess gw(tls_gateway_yaml(pki_, "server"));
  TlsConnection old_conn(gw.port(), trusting());
  ASSERT_EQ(old_conn.request(chat()).status, 200);
  const std::string first = old_conn.peer_serial();

  pki_.issue_server("server");  // new key and certificate, renamed into place
  std::string seen = first;
  const auto deadline = Clock::now() + Millis(15'000);
  while (seen == first && Clock::now() < deadline) {
    std::this_thread::sleep_for(Millis(200));
    TlsConnection probe(gw.port(), trusting());
    seen = probe.peer_serial();
  }
  EXPECT_NE(seen, first) << "new connections still get the old certificate";
  TlsConnection fresh(gw.port(), trusting());
  EXPECT_EQ(fresh.request(chat()).status, 200);
  // The connection opened before the reload still works.
  const auto again = old_conn.request(chat());
  EXPECT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(old_conn.peer_serial(), first);

  // A broken file is refused: the current certificate stays.
  const std::string current = seen;
  dir_.write("server.pem", "not a certificate\n");
  const auto logged = Clock::now() + Millis(15'000);
  while (gw.stderr_text().find("tls_reload_failed") == std::string::npos && Clock::now() < logged) {
    std::this_thread::sleep_for(Millis(100));
  }
  EXPECT_NE(gw.stderr_text().find("tls_reload_failed"), std::string::npos) << gw.stderr_text();
  TlsConnection after_bad(gw.port(), trusting());
  EXPECT_EQ(after_bad.peer_serial(), current);
  EXPECT_EQ(after_bad.request(chat()).status, 200);
}

// HTTPS backends: the gateway in front of TLS gateways (each serving a
// simulated engine), verifying their certificates against a private CA.
class HttpsUpstreamTest : public TlsTest {
 protected:
  // The front gateway: plain listener, model `name` on https://127.0.0.1:port.
  static std::string front_model(const std::string& name, uint16_t port, const std::string& extra) {
    return "  - name: " + name + "\n    backends:\n      - {url: \"https://127.0.0.1:" + std::to_string(port) +
           "\", max_concurrency: 8" + extra + "}\n";
  }
  static std::string front_yaml(const std::string& models, const std::string& extra = "") {
    return "listener: {address: 127.0.0.1, port: 0, threads: 2}\n"
           "retries: {max_retries: 0}\n" + extra +
           "models:\n" + models;
  }
};

TEST_F(HttpsUpstreamTest, PrivateCaBackendServesWholeAnswersAndStreams) {
  pki_.issue_server("upstream");
  GatewayProcess upstream(tls_gateway_yaml(pki_, "upstream"));
  GatewayProcess front(front_yaml(front_model("m1", upstream.port(), ", ca_file: \"" + pki_.ca_file() + "\"")));
  HttpConnection conn(front.port());
  const auto whole = conn.request(chat());
  ASSERT_EQ(whole.status, 200) << whole.body;
  EXPECT_EQ(whole.json().at("usage").at("completion_tokens").as_int64(), 4);
  const auto stream = conn.request(chat(kStream));
  ASSERT_EQ(stream.status, 200) << stream.body;
  EXPECT_EQ(sse_payloads(stream.body).size(), 5u) << stream.body;
  EXPECT_NE(stream.body.find("data: [DONE]"), std::string::npos);
  // Kept-alive upstream connections are reused: several more in a row.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(conn.request(chat()).status, 200);
  // The engine monitor scrapes the HTTPS backend's /metrics too: answered
  // (a gateway answers /metrics on its public port 404: "unusable", not "failed").
  const auto deadline = Clock::now() + Millis(10'000);
  double answered = 0;
  std::string metrics;
  while (answered < 3 && Clock::now() < deadline) {
    metrics = http_get(front.admin_port(), "/metrics").body;
    answered = metric_value(metrics, "arbiter_backend_scrapes_total", {{"outcome", "ok"}}).value_or(0) +
               metric_value(metrics, "arbiter_backend_scrapes_total", {{"outcome", "unusable"}}).value_or(0);
    std::this_thread::sleep_for(Millis(100));
  }
  EXPECT_GE(answered, 3) << metrics;
  EXPECT_EQ(metric_value(metrics, "arbiter_backend_scrapes_total", {{"outcome", "failed"}}).value_or(0), 0) << metrics;
}

TEST_F(HttpsUpstreamTest, BackendAtAnIpv6LiteralIsVerifiedByItsIpAddress) {
  // url: https://[::1]:port: the certificate must name the address (an IP
  // subjectAltName), and no SNI is sent for an address.
  pki_.issue("upstream6", {.common_name = "engine", .ips = {"::1"}});
  std::string upstream_yaml = tls_gateway_yaml(pki_, "upstream6");
  upstream_yaml.replace(upstream_yaml.find("address: 127.0.0.1"), 18, "address: \"::1\"");
  GatewayProcess upstream(upstream_yaml);
  GatewayProcess front(front_yaml("  - name: m1\n    backends:\n      - {url: \"https://[::1]:" +
                                  std::to_string(upstream.port()) + "\", ca_file: \"" + pki_.ca_file() + "\"}\n"));
  const auto answer = HttpConnection(front.port()).request(chat());
  EXPECT_EQ(answer.status, 200) << answer.body << front.stderr_text();
  // A certificate that names only "localhost" does not cover the address.
  pki_.issue("upstream6_by_name", {.common_name = "localhost", .dns = {"localhost"}});
  std::string by_name_yaml = tls_gateway_yaml(pki_, "upstream6_by_name");
  by_name_yaml.replace(by_name_yaml.find("address: 127.0.0.1"), 18, "address: \"::1\"");
  GatewayProcess by_name(by_name_yaml);
  GatewayProcess front_by_name(front_yaml("  - name: m1\n    backends:\n      - {url: \"https://[::1]:" +
                                          std::to_string(by_name.port()) + "\", ca_file: \"" + pki_.ca_file() +
                                          "\"}\n"));
  const auto refused = HttpConnection(front_by_name.port()).request(chat());
  EXPECT_EQ(refused.status, 502) << refused.body;
  EXPECT_NE(refused.body.find("IP address mismatch"), std::string::npos) << refused.body;
}

TEST_F(HttpsUpstreamTest, BadBackendCertificatesAreRefusedWithA502) {
  pki_.issue_server("good");
  pki_.issue("wrong-host", {.common_name = "other.example", .dns = {"other.example"}});
  pki_.issue("expired", {.common_name = "localhost", .dns = {"localhost"}, .ips = {"127.0.0.1"},
                         .valid_from_s = -7200, .valid_until_s = -3600});
  GatewayProcess wrong(tls_gateway_yaml(pki_, "wrong-host", "", "", "m-wrong"));
  GatewayProcess expired(tls_gateway_yaml(pki_, "expired", "", "", "m-expired"));
  GatewayProcess good(tls_gateway_yaml(pki_, "good", "", "", "m-untrusted"));
  const std::string ca = ", ca_file: \"" + pki_.ca_file() + "\"";
  GatewayProcess front(front_yaml(front_model("m-wrong", wrong.port(), ca) +
                                  front_model("m-expired", expired.port(), ca) +
                                  // No ca_file: the system's store, which does not know the private CA.
                                  front_model("m-untrusted", good.port(), ""),
                                  // Failed scrapes would mark the backends down (503) before the requests.
                                  "engine_signals: {enabled: false}\n"));
  auto answer = [&](const std::string& model) {
    return http_call(front.port(), chat(R"({"model":")" + model + R"(","messages":[{"role":"user","content":"hi"}],"max_tokens":4})"));
  };
  const auto wrong_host = answer("m-wrong");
  EXPECT_EQ(wrong_host.status, 502) << wrong_host.body;
  EXPECT_NE(wrong_host.body.find("TLS handshake with the backend failed"), std::string::npos) << wrong_host.body;
  EXPECT_NE(wrong_host.body.find("IP address mismatch"), std::string::npos) << wrong_host.body;
  const auto too_old = answer("m-expired");
  EXPECT_EQ(too_old.status, 502) << too_old.body;
  EXPECT_NE(too_old.body.find("certificate has expired"), std::string::npos) << too_old.body;
  const auto untrusted = answer("m-untrusted");
  EXPECT_EQ(untrusted.status, 502) << untrusted.body;
  EXPECT_NE(untrusted.body.find("unable to get local issuer certificate"), std::string::npos) << untrusted.body;
  // Never a plaintext fallback: no request reached the gateways behind.
  for (GatewayProcess* upstream : {&wrong, &expired, &good}) {
    EXPECT_TRUE(upstream->access_log().empty()) << upstream->stdout_text();
  }
}

TEST_F(HttpsUpstreamTest, BackendThatRequiresAClientCertificateGetsTheGatewaysOne) {
  pki_.issue_server("upstream");
  pki_.issue("gateway-client", {.common_name = "arbiter-gateway"});
  GatewayProcess upstream(tls_gateway_yaml(
      pki_, "upstream", ", client_cert: required, client_ca_file: \"" + pki_.ca_file() + "\""));
  const std::string ca = ", ca_file: \"" + pki_.ca_file() + "\"";
  const std::string identity =
      ca + ", cert_file: \"" + pki_.cert("gateway-client") + "\", key_file: \"" + pki_.key("gateway-client") + "\"";
  const std::string no_scrapes = "engine_signals: {enabled: false}\n";
  GatewayProcess with_cert(front_yaml(front_model("m1", upstream.port(), identity), no_scrapes));
  const auto served = http_call(with_cert.port(), chat());
  EXPECT_EQ(served.status, 200) << served.body;
  GatewayProcess without(front_yaml(front_model("m1", upstream.port(), ca), no_scrapes));
  const auto refused = http_call(without.port(), chat());
  EXPECT_EQ(refused.status, 502) << refused.body;
}

}  // namespace
}  // namespace arbiter::test::tls_test
