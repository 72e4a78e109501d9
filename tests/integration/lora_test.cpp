// LoRA adapters through the gateway, against real arbiter-sim processes
// that serve them (and answer 404 for an adapter they do not have, as vLLM
// does): a request for an adapter reaches only a backend that lists it, an
// adapter's requests stay where it is loaded, /v1/models lists adapters with
// their parent, and an unknown name is a clear 404.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "integration/sim_harness.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"
#include "support/metrics_text.hpp"

namespace arbiter::test {
namespace {

HttpResponse ask(const GatewayProcess& gateway, const std::string& model, int i) {
  return http_call(gateway.port(),
                   gateway_post("/v1/chat/completions",
                                sim_chat(R"("max_tokens":2)", "question " + std::to_string(i), model), kAlphaKey,
                                "chat"),
                   Millis(30'000));
}

std::string backend_name(uint16_t port) { return "127.0.0.1:" + std::to_string(port); }

TEST(Lora, AdapterRequestsReachOnlyBackendsServingThem) {
  SimProcess a({"--profile", "tiny", "--model", "m1", "--lora-modules", "sql,support"});
  SimProcess b({"--profile", "tiny", "--model", "m1", "--lora-modules", "support,legal=/adapters/legal"});
  SimProcess c({"--profile", "tiny", "--model", "m1"});
  GatewayConfig config;
  config.backend_ports = {a.port(), b.port(), c.port()};
  config.backend_extras = {", adapters: [sql, support]", ", adapters: [support, legal]", ""};
  GatewayProcess gateway(config.to_yaml());
  const std::map<std::string, std::set<std::string>> allowed = {
      {"sql", {backend_name(a.port())}},
      {"support", {backend_name(a.port()), backend_name(b.port())}},
      {"legal", {backend_name(b.port())}},
      {"m1", {backend_name(a.port()), backend_name(b.port()), backend_name(c.port())}}};
  std::map<std::string, std::set<std::string>> seen;
  const char* models[] = {"sql", "support", "legal", "m1"};
  for (int i = 0; i < 32; ++i) {
    const std::string model = models[i % 4];
    const HttpResponse r = ask(gateway, model, i);
    // A sim without the adapter would have answered 404.
    ASSERT_EQ(r.status, 200) << model << ": " << r.body;
    const std::string backend = r.header("x-arbiter-backend").value_or("(none)");
    EXPECT_TRUE(allowed.at(model).contains(backend)) << model << " reached " << backend;
    seen[model].insert(backend);
  }
  EXPECT_EQ(seen["sql"], allowed.at("sql"));
  EXPECT_EQ(seen["legal"], allowed.at("legal"));
  // Each sim ran requests of the adapters it serves and no others.
  EXPECT_GT(a.metric("vllm:request_success_total", {{"finished_reason", "length"}}).value_or(0), 0);
  EXPECT_GT(b.metric("vllm:request_success_total", {{"finished_reason", "length"}}).value_or(0), 0);
}

TEST(Lora, AnAdaptersRequestsStayWhereItIsLoaded) {
  // Two backends serving both adapters with one adapter slot each: each
  // adapter settles on a backend of its own and stays there.
  SimProcess a({"--profile", "tiny", "--model", "m1", "--lora-modules", "x,y"});
  SimProcess b({"--profile", "tiny", "--model", "m1", "--lora-modules", "x,y"});
  GatewayConfig config;
  config.backend_ports = {a.port(), b.port()};
  config.backend_extra = ", adapters: [x, y], max_loras: 1";
  GatewayProcess gateway(config.to_yaml());
  std::map<std::string, std::set<std::string>> seen;
  for (int i = 0; i < 12; ++i) {
    const std::string model = i % 4 < 2 ? "x" : "y";  // x x y y: turns alone would split each adapter
    const HttpResponse r = ask(gateway, model, i);
    ASSERT_EQ(r.status, 200) << r.body;
    seen[model].insert(r.header("x-arbiter-backend").value_or("(none)"));
  }
  ASSERT_EQ(seen["x"].size(), 1u);
  ASSERT_EQ(seen["y"].size(), 1u);
  EXPECT_NE(*seen["x"].begin(), *seen["y"].begin());
  // Counted: each adapter loaded once, then found loaded five times.
  const std::string metrics = http_get(gateway.admin_port(), "/metrics").body;
  for (const char* adapter : {"x", "y"}) {
    const Labels loaded{{"model", "m1"}, {"adapter", adapter}, {"placement", "adapter_loaded"}};
    const Labels load{{"model", "m1"}, {"adapter", adapter}, {"placement", "adapter_load"}};
    EXPECT_EQ(metric_value(metrics, "arbiter_lora_dispatches_total", loaded), 5) << adapter;
    EXPECT_EQ(metric_value(metrics, "arbiter_lora_dispatches_total", load), 1) << adapter;
  }
}

TEST(Lora, ModelsListAdaptersWithTheirParentAndUnknownNamesAre404) {
  SimProcess a({"--profile", "tiny", "--model", "m1", "--lora-modules", "sql"});
  GatewayConfig config;
  config.backend_ports = {a.port()};
  config.backend_extra = ", adapters: [sql]";
  GatewayProcess gateway(config.to_yaml());
  HttpRequest list{.method = "GET", .target = "/v1/models", .headers = {bearer(kAlphaKey)}};
  const HttpResponse models = http_call(gateway.port(), list, Millis(10'000));
  ASSERT_EQ(models.status, 200) << models.body;
  bool listed = false;
  const boost::json::value listing = boost::json::parse(models.body);
  for (const auto& m : listing.at("data").as_array()) {
    if (m.at("id").as_string() != "sql") continue;
    listed = true;
    EXPECT_EQ(m.at("parent").as_string(), "m1");
  }
  EXPECT_TRUE(listed) << models.body;
  list.target = "/v1/models/sql";
  EXPECT_EQ(http_call(gateway.port(), list, Millis(10'000)).status, 200);

  const HttpResponse unknown = ask(gateway, "no-such-adapter", 0);
  EXPECT_EQ(unknown.status, 404);
  EXPECT_NE(unknown.body.find("no-such-adapter"), std::string::npos) << unknown.body;
  // The sim itself refuses an adapter it does not serve, as vLLM does.
  const HttpResponse direct =
      http_call(a.port(), sim_post("/v1/chat/completions", sim_chat(R"("max_tokens":2)", "hi", "other")), Millis(10'000));
  EXPECT_EQ(direct.status, 404);
  // And reports the adapters it ran in vLLM's LoRA gauge.
  ASSERT_EQ(ask(gateway, "sql", 1).status, 200);
  EXPECT_NE(a.metrics().find("vllm:lora_requests_info{max_lora=\"1\""), std::string::npos);
}

}  // namespace
}  // namespace arbiter::test
