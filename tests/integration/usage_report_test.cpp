// Usage and cost per team (issue 14): two tenants of different teams send
// requests through the real gateway to arbiter-sim; the access log, the
// metrics and GET /admin/usage (JSON and CSV) agree with the engine's usage
// and the configured prices. Cached prompt tokens come from an engine that
// reports them (a fake one: arbiter-sim does not).
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <thread>

#include "integration/sim_harness.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"
#include "support/harness.hpp"
#include "support/metrics_text.hpp"

namespace arbiter::test {
namespace {

// m1's prices: per million prompt and completion tokens, and per second of engine time.
constexpr double kInput = 2, kOutput = 10, kPerGpuSecond = 0.5;

struct Sent {
  int64_t prompt = 0, completion = 0, requests = 0;
  double cost = 0;  // from the access log
};

// The access-log lines with the engine's usage, once `n` are there (or 5 s passed).
std::vector<boost::json::object> answered_lines(const GatewayProcess& gateway, std::size_t n) {
  const auto deadline = Clock::now() + Millis(5'000);
  for (;;) {
    std::vector<boost::json::object> lines;
    for (auto& line : gateway.access_log()) {
      if (line.contains("completion_tokens")) lines.push_back(std::move(line));
    }
    if (lines.size() >= n || Clock::now() >= deadline) return lines;
    std::this_thread::sleep_for(Millis(20));
  }
}

// "ml,2,40,14,0,0.0123" -> the fields.
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string f; std::getline(in, f, ',');) out.push_back(f);
  return out;
}

TEST(UsageReport, TeamsAreChargedTheEnginesUsageAtTheConfiguredPrices) {
  SimProcess sim({"--profile", "tiny", "--model", "m1"});
  GatewayConfig config;
  config.backend_ports = {sim.port()};
  config.alpha_extra = ", team: ml";  // beta is in its own team, "beta"
  config.extra = "prices: [{model: m1, input_per_million: 2, output_per_million: 10, per_gpu_second: 0.5}]\n";
  GatewayProcess gateway(config.to_yaml());

  // alpha: 9 and 5 tokens; beta: 4 (max_tokens = min_tokens: the sim generates exactly that).
  std::map<std::string, Sent> by_team;
  const std::pair<const char*, int> requests[] = {{kAlphaKey, 9}, {kAlphaKey, 5}, {kBetaKey, 4}};
  for (const auto& [key, tokens] : requests) {
    const std::string limits = R"("max_tokens":)" + std::to_string(tokens) + R"(,"min_tokens":)" + std::to_string(tokens);
    const HttpResponse r =
        http_call(gateway.port(), gateway_post("/v1/chat/completions", sim_chat(limits, "Count.", "m1"), key, "chat"));
    ASSERT_EQ(r.status, 200) << r.body;
    const auto usage = r.json().at("usage").as_object();
    ASSERT_EQ(usage.at("completion_tokens").as_int64(), tokens);
    Sent& team = by_team[key == std::string(kAlphaKey) ? "ml" : "beta"];
    team.prompt += usage.at("prompt_tokens").as_int64();
    team.completion += tokens;
    ++team.requests;
  }
  // Refused before any engine saw it (beta may not claim batch): not usage.
  EXPECT_EQ(http_call(gateway.port(), gateway_post("/v1/chat/completions", sim_chat("", "Hi.", "m1"), kBetaKey, "batch")).status, 403);

  // Each line: the team, the engine's usage, and its cost at the prices.
  const auto lines = answered_lines(gateway, 3);
  ASSERT_EQ(lines.size(), 3u) << gateway.stdout_text();
  for (const auto& line : lines) {
    SCOPED_TRACE(boost::json::serialize(line));
    const std::string team(line.at("team").as_string());
    EXPECT_EQ(team, line.at("tenant") == "alpha" ? "ml" : "beta");
    EXPECT_EQ(line.at("cached_tokens").as_int64(), 0);
    const double engine_s = line.at("engine_ms").to_number<double>() / 1000;
    EXPECT_GT(engine_s, 0);
    const double tokens_cost = (static_cast<double>(line.at("prompt_tokens").as_int64()) * kInput +
                                static_cast<double>(line.at("completion_tokens").as_int64()) * kOutput) / 1e6;
    const double cost = line.at("cost").to_number<double>();
    EXPECT_NEAR(cost, tokens_cost + engine_s * kPerGpuSecond, 1e-6);  // engine_ms is logged to the microsecond
    by_team[team].cost += cost;
  }

  // The report by team, JSON: the engine's tokens, the logged costs.
  const HttpResponse json = http_get(gateway.admin_port(), "/admin/usage?group_by=team");
  ASSERT_EQ(json.status, 200) << json.body;
  EXPECT_EQ(json.header("content-type"), "application/json");
  const auto report = json.json().as_object();
  EXPECT_EQ(report.at("group_by"), (boost::json::array{"team"}));
  const auto& rows = report.at("rows").as_array();
  ASSERT_EQ(rows.size(), 2u) << json.body;
  for (const auto& row : rows) {
    const std::string team(row.at("team").as_string());
    SCOPED_TRACE(team);
    ASSERT_TRUE(by_team.contains(team)) << json.body;
    EXPECT_EQ(row.at("requests").as_int64(), by_team[team].requests);
    EXPECT_EQ(row.at("prompt_tokens").as_int64(), by_team[team].prompt);
    EXPECT_EQ(row.at("completion_tokens").as_int64(), by_team[team].completion);
    EXPECT_EQ(row.at("cached_tokens").as_int64(), 0);
    EXPECT_NEAR(row.at("cost").to_number<double>(), by_team[team].cost, 1e-12);
  }
  EXPECT_EQ(report.at("total").at("requests").as_int64(), 3);
  EXPECT_EQ(report.at("total").at("completion_tokens").as_int64(), 18);

  // The same by tenant, CSV.
  const HttpResponse csv = http_get(gateway.admin_port(), "/admin/usage?group_by=tenant,class&format=csv");
  ASSERT_EQ(csv.status, 200) << csv.body;
  EXPECT_EQ(csv.header("content-type"), "text/csv; charset=utf-8");
  std::istringstream in(csv.body);
  std::string header, alpha, beta, rest;
  std::getline(in, header);
  std::getline(in, alpha);
  std::getline(in, beta);
  EXPECT_FALSE(std::getline(in, rest)) << csv.body;
  EXPECT_EQ(header, "tenant,class,requests,prompt_tokens,completion_tokens,cached_tokens,cost");
  const auto a = csv_fields(alpha), b = csv_fields(beta);
  ASSERT_EQ(a.size(), 7u) << alpha;
  ASSERT_EQ(b.size(), 7u) << beta;
  EXPECT_EQ(a[0], "alpha");
  EXPECT_EQ(a[1], "chat");
  EXPECT_EQ(std::stoll(a[2]), 2);
  EXPECT_EQ(std::stoll(a[3]), by_team["ml"].prompt);
  EXPECT_EQ(std::stoll(a[4]), 14);
  EXPECT_NEAR(std::stod(a[6]), by_team["ml"].cost, 1e-12);
  EXPECT_EQ(b[0], "beta");
  EXPECT_EQ(std::stoll(b[4]), 4);
  EXPECT_NEAR(std::stod(b[6]), by_team["beta"].cost, 1e-12);

  // The metrics by team and model.
  const std::string text = http_get(gateway.admin_port(), "/metrics").body;
  EXPECT_EQ(metric_value(text, "arbiter_team_tokens_total", {{"team", "ml"}, {"model", "m1"}, {"kind", "completion"}}), 14);
  EXPECT_EQ(metric_value(text, "arbiter_team_tokens_total", {{"team", "beta"}, {"kind", "prompt"}}),
            static_cast<double>(by_team["beta"].prompt));
  EXPECT_NEAR(metric_value(text, "arbiter_cost_total", {{"team", "ml"}, {"model", "m1"}}).value_or(-1),
              by_team["ml"].cost, 1e-9);
}

TEST(UsageReport, CachedPromptTokensAreReportedAndPricedApart) {
  GatewayConfig config;
  config.extra = "prices: [{model: m1, input_per_million: 4, output_per_million: 8, cached_input_per_million: 1}]\n";
  Harness h(config);
  Respond answer;
  answer.body = R"({"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant",)"
                R"("content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":50,)"
                R"("total_tokens":1050,"prompt_tokens_details":{"cached_tokens":800}}})";
  h.upstream().push(answer);
  ASSERT_EQ(http_call(h.port(), gateway_post("/v1/chat/completions", sim_chat("", "Hi.", "m1"), kAlphaKey, "chat")).status,
            200);
  // 200 x 4 + 800 x 1 + 50 x 8 = 2000 per million.
  const auto lines = answered_lines(h.gateway(), 1);
  ASSERT_EQ(lines.size(), 1u) << h.gateway().stdout_text();
  EXPECT_EQ(lines[0].at("cached_tokens").as_int64(), 800);
  EXPECT_NEAR(lines[0].at("cost").to_number<double>(), 0.002, 1e-12);
  const auto report = http_get(h.admin_port(), "/admin/usage?group_by=model").json();
  EXPECT_EQ(report.at("rows").at(0).at("model"), "m1");
  EXPECT_EQ(report.at("rows").at(0).at("cached_tokens").as_int64(), 800);
  EXPECT_NEAR(report.at("total").at("cost").to_number<double>(), 0.002, 1e-12);
  EXPECT_EQ(h.metric("arbiter_tokens_total", {{"tenant", "alpha"}, {"kind", "cached"}}), 800);
  EXPECT_EQ(h.metric("arbiter_team_tokens_total", {{"team", "alpha"}, {"kind", "cached"}}), 800);
}

TEST(UsageReport, BadParametersAre400WithTheReason) {
  Harness h;
  for (const auto& [target, words] : std::vector<std::pair<std::string, std::string>>{
           {"/admin/usage?group_by=backend", "group_by: 'backend' is not tenant, team, model or class"},
           {"/admin/usage?from=yesterday", "from: 'yesterday' is not an RFC 3339 time"},
           {"/admin/usage?from=1714525200&to=1714521600", "from must be before to"},
           {"/admin/usage?format=xml", "format: 'xml' is not json or csv"}}) {
    SCOPED_TRACE(target);
    const HttpResponse r = http_get(h.admin_port(), target);
    EXPECT_EQ(r.status, 400);
    EXPECT_NE(r.json().at("error").at("message").as_string().find(words), std::string::npos) << r.body;
  }
  // Nothing used yet: an empty report.
  const HttpResponse empty = http_get(h.admin_port(), "/admin/usage");
  ASSERT_EQ(empty.status, 200);
  EXPECT_TRUE(empty.json().at("rows").as_array().empty());
  // Only GET.
  EXPECT_EQ(http_call(h.admin_port(), HttpRequest{.method = "POST", .target = "/admin/usage", .headers = {}, .body = ""}).status,
            405);
}

}  // namespace
}  // namespace arbiter::test
