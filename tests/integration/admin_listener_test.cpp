// The admin listener and its token (issue 16, defect 5; on by default since
// issue 42): /metrics and /admin/* are served on it only, on loopback unless
// set, never on the public port; they ask for the admin token when one is
// set; an API port open beyond this host without auth is named; and the
// embedded simulated engines answer only the gateway.
#include <dirent.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "support/harness.hpp"
#include "support/http_client.hpp"
#include "support/requests.hpp"

namespace arbiter::test {
namespace {

constexpr const char* kAdminToken = "adm-3c1f9e7a55d2";

std::string admin_section(const TempDir& dir, bool enabled) {
  dir.write("admin_token", std::string(kAdminToken) + "\n");
  return std::string("admin: {enabled: ") + (enabled ? "true" : "false") + ", port: 0, token_file: " +
         dir.file("admin_token") + "}\n";
}

TEST(AdminListener, TakesMetricsAndUsageOffThePublicPortBehindTheToken) {
  TempDir dir("arbiter-admin");
  GatewayConfig config;
  config.extra = admin_section(dir, true);
  Harness h(config);
  const uint16_t admin = h.gateway().admin_port();
  ASSERT_NE(admin, 0) << describe_output(h.gateway());
  ASSERT_NE(admin, h.port());

  // Public port: inference and probes, nothing that shows tenants.
  EXPECT_EQ(http_call(h.port(), chat_request(chat_body())).status, 200);
  EXPECT_EQ(http_get(h.port(), "/healthz").status, 200);
  EXPECT_EQ(http_get(h.port(), "/readyz").status, 200);
  EXPECT_EQ(http_get(h.port(), "/metrics", {bearer(kAdminToken)}).status, 404);
  EXPECT_EQ(http_get(h.port(), "/admin/usage", {bearer(kAdminToken)}).status, 404);

  // Admin port: probes open; the rest needs the token, scheme in any case.
  EXPECT_EQ(http_get(admin, "/healthz").status, 200);
  EXPECT_EQ(http_get(admin, "/readyz").status, 200);
  const auto no_token = http_get(admin, "/metrics");
  EXPECT_EQ(no_token.status, 401) << no_token.body;
  EXPECT_EQ(no_token.header("www-authenticate").value_or(""), "Bearer");
  EXPECT_EQ(http_get(admin, "/admin/usage", {bearer("wrong")}).status, 401);
  EXPECT_EQ(http_get(admin, "/admin/usage", {{"authorization", std::string("Bearer ") + kAdminToken + "x"}}).status,
            401);
  const Headers lower_case_scheme{{"authorization", std::string("bearer ") + kAdminToken}};
  const auto metrics = http_get(admin, "/metrics", lower_case_scheme);
  ASSERT_EQ(metrics.status, 200) << metrics.body;
  EXPECT_EQ(metric_value(metrics.body, "arbiter_admin_unauthorized_total"), 3.0);
  EXPECT_EQ(h.gateway().wait_for_metric("arbiter_requests_total", [](double v) { return v == 1; }, Millis(5'000),
                                        {{"tenant", "alpha"}}, admin, lower_case_scheme),
            1.0);
  EXPECT_EQ(http_get(admin, "/admin/usage", {bearer(kAdminToken)}).status, 200);
  // No inference on the admin port.
  EXPECT_EQ(http_call(admin, chat_request(chat_body())).status, 404);
  EXPECT_EQ(http_get(admin, "/v1/models", {bearer(kAlphaKey)}).status, 404);
}

// TCP listening sockets of `pid`: port -> local address as /proc/net/tcp
// writes it (hex, e.g. 0100007F for 127.0.0.1).
std::map<uint16_t, std::string> listening(pid_t pid);

TEST(AdminListener, ByDefaultTheOperatorRoutesAreOnALoopbackListenerOnly) {
  // The config names no admin section (the harness adds only `port: 0`, so
  // tests side by side do not race for 9090).
  Harness h;
  const uint16_t admin = h.admin_port();
  ASSERT_NE(admin, 0) << describe_output(h.gateway());
  EXPECT_EQ(listening(h.gateway().pid()).at(admin), "0100007F") << "the admin listener is on 127.0.0.1";
  for (const char* path : {"/metrics", "/admin/usage"}) {
    EXPECT_EQ(http_get(h.port(), path).status, 404) << path;
    EXPECT_EQ(http_get(admin, path).status, 200) << path;
  }
  EXPECT_EQ(http_get(h.port(), "/healthz").status, 200);
  EXPECT_EQ(http_call(h.port(), chat_request(chat_body())).status, 200);
  // The defaults themselves: on, loopback, 9090.
  TempDir dir("arbiter-admin");
  const auto printed = run_command({arbiter_binary(), "--config",
                                    dir.write("c.yaml", "models: [{name: m, backends: [{url: 'http://127.0.0.1:9'}]}]\n"),
                                    "--print-config"},
                                   Millis(20'000));
  EXPECT_NE(printed.out.find("admin: {enabled: true, address: \"127.0.0.1\", port: 9090"), std::string::npos)
      << printed.out;
}

TEST(AdminListener, TurnedOffTheOperatorRoutesAreServedNowhere) {
  TempDir dir("arbiter-admin");
  GatewayConfig config;
  config.extra = admin_section(dir, false);
  Harness h(config);
  EXPECT_EQ(h.admin_port(), 0);
  EXPECT_EQ(http_get(h.port(), "/metrics", {bearer(kAdminToken)}).status, 404);
  EXPECT_EQ(http_get(h.port(), "/admin/usage", {bearer(kAdminToken)}).status, 404);
  EXPECT_EQ(http_get(h.port(), "/healthz").status, 200);
  EXPECT_NE(h.gateway().stderr_text().find("/metrics and /admin/* are served nowhere"), std::string::npos)
      << h.gateway().stderr_text();
}

TEST(AdminListener, AnApiPortOpenBeyondThisHostWithoutAuthIsNamed) {
  const std::string models = "models: [{name: m, backends: [{url: 'http://127.0.0.1:9'}]}]\n";
  const auto open = run_arbiter_check("listener: {address: 0.0.0.0, port: 8080}\n" + models);
  EXPECT_EQ(open.exit_code, 0) << open.err;
  EXPECT_NE(open.out.find("warning: auth.enabled is false on 0.0.0.0"), std::string::npos) << open.out;
  const auto local = run_arbiter_check("listener: {address: 127.0.0.1, port: 8080}\n" + models);
  EXPECT_EQ(local.out.find("warning"), std::string::npos) << local.out;
  const auto keyed = run_arbiter_check(
      "listener: {address: 0.0.0.0, port: 8080}\nauth: {enabled: true}\n"
      "tenants: [{name: a, api_keys: [" + std::string(kAlphaKey) + "]}]\n" + models);
  EXPECT_EQ(keyed.exit_code, 0) << keyed.err;
  EXPECT_EQ(keyed.out.find("warning"), std::string::npos) << keyed.out;
}

TEST(AdminListener, ConfigRefusesWhatWouldExposeIt) {
  const std::string base = "listener: {port: 8080}\nmodels: [{name: m, backends: [{url: 'http://127.0.0.1:9'}]}]\n";
  const auto same_port = run_arbiter_check(base + "admin: {enabled: true, port: 8080}\n");
  EXPECT_EQ(same_port.exit_code, 2);
  EXPECT_NE(same_port.err.find("admin.port: must differ from listener.port"), std::string::npos) << same_port.err;
  const auto open_to_all = run_arbiter_check(base + "admin: {enabled: true, address: 0.0.0.0}\n");
  EXPECT_EQ(open_to_all.exit_code, 2);
  EXPECT_NE(open_to_all.err.find("admin.address"), std::string::npos) << open_to_all.err;
  const auto unset = run_arbiter_check(base + "admin: {enabled: true, token_env: ARBITER_TEST_UNSET_TOKEN}\n");
  EXPECT_EQ(unset.exit_code, 2);
  EXPECT_NE(unset.err.find("ARBITER_TEST_UNSET_TOKEN is not set"), std::string::npos) << unset.err;
  EXPECT_EQ(run_arbiter_check(base + "admin: {enabled: true}\n").exit_code, 0);
}

// From /proc: its socket inodes, then the LISTEN rows of /proc/net/tcp.
std::map<uint16_t, std::string> listening(pid_t pid) {
  std::set<std::string> inodes;
  const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
  if (DIR* d = opendir(fd_dir.c_str())) {
    while (dirent* e = readdir(d)) {
      char target[256];
      const std::string link = fd_dir + "/" + e->d_name;
      const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
      if (n <= 0) continue;
      const std::string text(target, static_cast<std::size_t>(n));
      if (text.starts_with("socket:[")) inodes.insert(text.substr(8, text.size() - 9));
    }
    closedir(d);
  }
  std::map<uint16_t, std::string> ports;
  std::ifstream tcp("/proc/net/tcp");
  std::string line;
  std::getline(tcp, line);  // header
  while (std::getline(tcp, line)) {
    std::istringstream in(line);
    std::string slot, local, remote, state, queues, timer, retr, uid, timeout, inode;
    in >> slot >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode;
    if (state != "0A" || !inodes.contains(inode)) continue;
    const std::size_t colon = local.find(':');
    ports.emplace(static_cast<uint16_t>(std::stoul(local.substr(colon + 1), nullptr, 16)), local.substr(0, colon));
  }
  return ports;
}

TEST(AdminListener, EmbeddedSimulatedEnginesAnswerOnlyTheGateway) {
  GatewayProcess gw("listener: {port: 0, threads: 1}\n"
                    "models: [{name: m1, backends: [{type: sim, profile: tiny}]}]\n");
  std::map<uint16_t, std::string> sims = listening(gw.pid());
  sims.erase(gw.port());
  sims.erase(gw.admin_port());
  ASSERT_EQ(sims.size(), 1u) << "expected one simulated engine's port";
  const uint16_t sim = sims.begin()->first;

  // Through the gateway: served.
  const auto answer = http_call(gw.port(), chat_request(chat_body(false, 4)));
  EXPECT_EQ(answer.status, 200) << answer.body;
  // Straight to the engine: neither inference nor fault injection.
  const auto direct = http_post(sim, "/v1/chat/completions", chat_body(false, 4), {{"content-type", "application/json"}});
  EXPECT_EQ(direct.status, 401) << direct.body;
  const auto faults = http_post(sim, "/admin/faults", R"({"error_rate":1})", {{"content-type", "application/json"}});
  EXPECT_EQ(faults.status, 401) << faults.body;
  EXPECT_EQ(http_get(sim, "/admin/faults").status, 401);
  // Health and engine metrics stay open, as on vLLM.
  EXPECT_EQ(http_get(sim, "/health").status, 200);
  EXPECT_EQ(http_get(sim, "/metrics").status, 200);
  EXPECT_EQ(http_call(gw.port(), chat_request(chat_body(false, 4))).status, 200);
}

}  // namespace
}  // namespace arbiter::test
