// The Batch API through the gateway in front of a real arbiter-sim (issue
// 47): a gateway killed with SIGKILL mid-batch and started again on the same
// folder finishes the batch with every line answered once, counted at the
// engine; a cancelled batch stops its lines' work on the engine. Replicas on
// one PostgreSQL (a real server) and one folder share their batches: any
// answers for any, one takes over the batch of one killed mid-batch.
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <sstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>

#include "integration/sim_harness.hpp"
#include "support/fake_upstream.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"
#include "support/harness.hpp"  // describe_output
#include "support/postgres_server.hpp"
#include "support/requests.hpp"

namespace arbiter::test {
namespace {

// `n` chat lines of `tokens` engine steps each, custom_ids line-0 .. line-(n-1).
std::string input_file(int n, int tokens) {
  std::string out;
  for (int i = 0; i < n; ++i) {
    boost::json::object line{{"custom_id", "line-" + std::to_string(i)},
                             {"method", "POST"},
                             {"url", "/v1/chat/completions"},
                             {"body", boost::json::parse(sim_chat(R"("max_tokens":)" + std::to_string(tokens) +
                                                                      R"(,"min_tokens":)" + std::to_string(tokens),
                                                                  "Line " + std::to_string(i), "m1"))}};
    out += boost::json::serialize(line) + "\n";
  }
  return out;
}

// POST /v1/files as a form upload, as the tenant `key` names.
HttpResponse upload_call(uint16_t port, const std::string& content, const char* key = kAlphaKey) {
  const std::string boundary = "arbiter-test-boundary";
  std::string body = "--" + boundary + "\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--" +
                     boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"in.jsonl\"\r\n" +
                     "Content-Type: application/jsonl\r\n\r\n" + content + "\r\n--" + boundary + "--\r\n";
  HttpResponse res = http_call(port, {.method = "POST",
                                            .target = "/v1/files",
                                            .headers = {{"authorization", std::string("Bearer ") + key},
                                                        {"content-type", "multipart/form-data; boundary=" + boundary}},
                                            .body = body},
                                     Millis(30'000));
  return res;
}

// The same: the new file's id.
std::string upload(uint16_t port, const std::string& content) {
  const HttpResponse res = upload_call(port, content);
  EXPECT_EQ(res.status, 200) << res.body;
  return std::string(res.json().at("id").as_string());
}

std::string create_batch(uint16_t port, const std::string& file) {
  const HttpResponse res =
      http_post(port, "/v1/batches",
                R"({"input_file_id":")" + file + R"(","endpoint":"/v1/chat/completions","completion_window":"24h"})",
                {{"authorization", std::string("Bearer ") + kAlphaKey}});
  EXPECT_EQ(res.status, 200) << res.body;
  return std::string(res.json().at("id").as_string());
}

boost::json::object batch_state(uint16_t port, const std::string& id) {
  const HttpResponse res = http_get(port, "/v1/batches/" + id, {{"authorization", std::string("Bearer ") + kAlphaKey}});
  EXPECT_EQ(res.status, 200) << res.body;
  return res.json().as_object();
}

// Polls the batch until `pred` holds; its last state.
template <class Pred>
boost::json::object wait_for_batch(uint16_t port, const std::string& id, Pred pred, Millis timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    boost::json::object state = batch_state(port, id);
    if (pred(state) || Clock::now() >= deadline) return state;
    std::this_thread::sleep_for(Millis(50));
  }
}

int64_t count(const boost::json::object& state, const char* which) {
  return state.at("request_counts").at(which).to_number<int64_t>();
}

// The output file's lines by custom_id, each once (a second one fails the test).
std::map<std::string, boost::json::object> output_lines(uint16_t port, const boost::json::object& done) {
  const HttpResponse output = http_get(port, "/v1/files/" + std::string(done.at("output_file_id").as_string()) + "/content",
                                       {{"authorization", std::string("Bearer ") + kAlphaKey}});
  EXPECT_EQ(output.status, 200) << output.body;
  std::map<std::string, boost::json::object> out;
  std::istringstream lines(output.body);
  for (std::string line; std::getline(lines, line);) {
    auto o = boost::json::parse(line).as_object();
    const std::string id(o.at("custom_id").as_string());
    EXPECT_TRUE(out.emplace(id, std::move(o)).second) << "twice: " << line;
  }
  return out;
}

bool ended(const boost::json::object& state) {
  const auto& status = state.at("status").as_string();
  return status != "in_progress" && status != "finalizing" && status != "cancelling";
}

// Cancels batch `id` through `port` once four of its lines hold the engine's
// four slots, and waits for it to end cancelled: the running lines aborted
// at once, not run to their 2,000 tokens.
void cancel_running(SimProcess& sim, uint16_t port, const std::string& id) {
  ASSERT_GE(sim.wait_for_metric("vllm:num_requests_running", [](double v) { return v >= 4; }, Millis(30'000)).value_or(0), 4);
  const HttpResponse cancel = http_post(port, "/v1/batches/" + id + "/cancel", "",
                                        {{"authorization", std::string("Bearer ") + kAlphaKey}});
  ASSERT_EQ(cancel.status, 200) << cancel.body;
  EXPECT_EQ(cancel.json().at("status").as_string(), "cancelling");
  const auto done = wait_for_batch(port, id, [](const auto& s) { return s.at("status").as_string() == "cancelled"; },
                                   Millis(30'000));
  ASSERT_EQ(done.at("status").as_string(), "cancelled") << boost::json::serialize(done);
  EXPECT_GE(sim.wait_for_metric("arbiter_sim_requests_aborted_total", [](double v) { return v >= 4; }, Millis(10'000))
                .value_or(0),
            4);
  EXPECT_EQ(sim.wait_for_metric("vllm:num_requests_running", [](double v) { return v == 0; }, Millis(10'000)).value_or(-1), 0);
  EXPECT_EQ(count(done, "completed"), 0);
}

// The batches' folder, and the usage store (the jobs' and files' records)
// beside it: a gateway started again on them finds the jobs, as one
// started again on its config folder does.
std::string config_yaml(uint16_t sim_port, const std::string& batch_dir) {
  GatewayConfig config;
  config.backend_ports = {sim_port};
  config.max_concurrency = 4;
  config.extra = "batches: {dir: \"" + batch_dir + "\"}\nstore: {path: \"" + batch_dir +
                 ".arbiter.db\"}\nhealth_probes: {enabled: false}\n";
  return config.to_yaml();
}

TEST(Batches, AGatewayKilledMidBatchFinishesItAfterARestartWithNoLineLostOrRunTwice) {
  constexpr int kLines = 40;
  SimProcess sim({"--profile", "tiny", "--model", "m1"});
  TempDir batches("arbiter-batches");
  std::string id;
  {
    GatewayProcess gateway(config_yaml(sim.port(), batches.path()));
    id = create_batch(gateway.port(), upload(gateway.port(), input_file(kLines, 150)));
    // Killed once a quarter of the lines are answered: others are running.
    const auto state = wait_for_batch(gateway.port(), id, [](const auto& s) { return count(s, "completed") >= 10; },
                                      Millis(60'000));
    ASSERT_GE(count(state, "completed"), 10);
    ASSERT_LT(count(state, "completed"), kLines) << "the batch ended before the kill: nothing to show";
    gateway.kill();
    gateway.wait_exit(Millis(10'000));
  }
  // The lines the kill cut off were aborted on the engine (their clients went away).
  EXPECT_GE(sim.wait_for_metric("arbiter_sim_requests_aborted_total", [](double v) { return v >= 1; }, Millis(10'000))
                .value_or(0),
            1);
  GatewayProcess restarted(config_yaml(sim.port(), batches.path()));
  const auto done = wait_for_batch(restarted.port(), id,
                                   [](const auto& s) { return ended(s); },
                                   Millis(90'000));
  ASSERT_EQ(done.at("status").as_string(), "completed") << boost::json::serialize(done);
  EXPECT_EQ(count(done, "completed"), kLines);
  EXPECT_EQ(count(done, "failed"), 0);
  EXPECT_TRUE(done.at("error_file_id").is_null());
  // Every line once in the output, each answered whole.
  const auto seen = output_lines(restarted.port(), done);
  for (const auto& [custom_id, o] : seen) {
    EXPECT_EQ(o.at("response").at("status_code").to_number<int>(), 200) << custom_id;
    EXPECT_EQ(o.at("response").at("body").at("usage").at("completion_tokens").to_number<int>(), 150) << custom_id;
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kLines));
  // Counted at the engine: each line ran to its end exactly once.
  EXPECT_EQ(sim.metric("vllm:request_success_total", {{"finished_reason", "length"}}).value_or(0), kLines)
      << sim.metrics();
}

TEST(Batches, ACancelledBatchStopsItsLinesOnTheEngine) {
  constexpr int kLines = 30;
  SimProcess sim({"--profile", "tiny", "--model", "m1"});
  TempDir batches("arbiter-batches");
  GatewayProcess gateway(config_yaml(sim.port(), batches.path()));
  const std::string id = create_batch(gateway.port(), upload(gateway.port(), input_file(kLines, 2000)));
  cancel_running(sim, gateway.port(), id);
}

// A gateway for the files' routes alone (its one engine is never reached),
// `batches` settings added after the folder's.
std::string files_only_yaml(const std::string& batch_dir, const std::string& batches = "") {
  GatewayConfig config;
  config.backend_ports = {1};
  config.extra = "batches: {dir: \"" + batch_dir + "\"" + batches + "}\nhealth_probes: {enabled: false}\n";
  return config.to_yaml();
}

TEST(Batches, UploadsHaveABodyLimitOfTheirOwn) {
  TempDir batches("arbiter-batches");
  GatewayConfig config;
  config.backend_ports = {1};
  config.max_body_bytes = 1u << 20;  // every other route: 1 MiB
  config.extra = "batches: {dir: \"" + batches.path() + "\", max_file_bytes: 3MiB}\nhealth_probes: {enabled: false}\n";
  GatewayProcess gateway(config.to_yaml());
  // 2 MiB of lines: over the listener's limit, within the uploads'.
  const std::string two_mib = input_file(12'000, 1);
  ASSERT_GT(two_mib.size(), 1u << 20);
  ASSERT_LT(two_mib.size(), 3u << 20);
  const HttpResponse taken = upload_call(gateway.port(), two_mib);
  EXPECT_EQ(taken.status, 200) << taken.body;
  const HttpResponse refused = upload_call(gateway.port(), input_file(24'000, 1));
  EXPECT_EQ(refused.status, 413) << refused.body;
  EXPECT_NE(refused.body.find(std::to_string(3u << 20)), std::string::npos) << refused.body;
  // The inference routes keep theirs.
  const HttpResponse chat = http_call(gateway.port(), chat_request(sim_chat("", std::string(1'200'000, 'x'), "m1")));
  EXPECT_EQ(chat.status, 413) << chat.body;
}

TEST(Batches, ATenantsFilesAreBoundedInAllAndOthersAreNotHeldBack) {
  TempDir batches("arbiter-batches");
  GatewayProcess gateway(files_only_yaml(batches.path(), ", max_tenant_bytes: 3KiB"));
  const std::string two_kib = input_file(12, 1).substr(0, 2048);
  const std::string lines = two_kib.substr(0, two_kib.rfind('\n') + 1);  // whole lines, under 2 KiB
  ASSERT_GT(lines.size(), 1536u);
  const std::string first = upload(gateway.port(), lines);
  const HttpResponse past = upload_call(gateway.port(), lines);
  EXPECT_EQ(past.status, 400) << past.body;
  EXPECT_NE(past.body.find("batches.max_tenant_bytes"), std::string::npos) << past.body;
  // Another tenant's bound is its own.
  EXPECT_EQ(upload_call(gateway.port(), lines, kBetaKey).status, 200);
  // Room made by a delete.
  const HttpResponse deleted =
      http_call(gateway.port(), {.method = "DELETE",
                                 .target = "/v1/files/" + first,
                                 .headers = {{"authorization", std::string("Bearer ") + kAlphaKey}}});
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_EQ(upload_call(gateway.port(), lines).status, 200);
}

TEST(Batches, AFolderThatCannotBeWrittenStopsTheBatchApiOnly) {
  FakeUpstream engine;
  GatewayConfig config;
  config.backend_ports = {engine.port()};
  // Under a file: no folder can be made there (a read-only config mount alike).
  config.extra = "batches: {dir: \"/dev/null/batches\"}\n";
  GatewayProcess gateway(config.to_yaml());
  EXPECT_EQ(http_call(gateway.port(), chat_request(chat_body())).status, 200) << describe_output(gateway);
  const HttpResponse files = http_get(gateway.port(), "/v1/files", {{"authorization", std::string("Bearer ") + kAlphaKey}});
  EXPECT_EQ(files.status, 500) << files.body;
  EXPECT_NE(files.body.find("batches.dir"), std::string::npos) << files.body;
  EXPECT_NE(gateway.stderr_text().find("batches_unavailable"), std::string::npos);
}

TEST(Batches, FilesArePagedNewestFirstOrOldestFirst) {
  TempDir batches("arbiter-batches");
  GatewayProcess gateway(files_only_yaml(batches.path()));
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(upload(gateway.port(), input_file(1, 1)));
  auto page = [&](const std::string& query) {
    const HttpResponse res = http_get(gateway.port(), "/v1/files" + query, {{"authorization", std::string("Bearer ") + kAlphaKey}});
    EXPECT_EQ(res.status, 200) << res.body;
    return res.json().as_object();
  };
  auto ids_of = [](const boost::json::object& p) {
    std::vector<std::string> out;
    for (const auto& f : p.at("data").as_array()) out.emplace_back(f.at("id").as_string());
    return out;
  };
  const auto first = page("?limit=2");
  EXPECT_EQ(ids_of(first), (std::vector<std::string>{ids[2], ids[1]}));
  EXPECT_TRUE(first.at("has_more").as_bool());
  const auto rest = page("?limit=2&after=" + ids[1]);
  EXPECT_EQ(ids_of(rest), (std::vector<std::string>{ids[0]}));
  EXPECT_FALSE(rest.at("has_more").as_bool());
  EXPECT_EQ(ids_of(page("?order=asc")), ids);
  EXPECT_EQ(http_get(gateway.port(), "/v1/files?limit=0", {{"authorization", std::string("Bearer ") + kAlphaKey}}).status, 400);
}

TEST(Batches, LinesYieldTheirSlotsToInteractiveWorkAndStillEndWhole) {
  constexpr int kLines = 6;
  constexpr int kTokens = 400;
  SimProcess sim({"--profile", "tiny", "--model", "m1"});
  TempDir batches("arbiter-batches");
  GatewayConfig config;
  config.backend_ports = {sim.port()};
  config.max_concurrency = 2;
  config.backend_extra = ", continue_final_message: true";  // a preempted chat line resumes where it was
  config.alpha_classes = "[realtime, batch, chat]";
  config.extra = "batches: {dir: \"" + batches.path() + "\"}\n"
                 "health_probes: {enabled: false}\n"
                 "classes:\n"
                 "  - {name: realtime, min_share: 0.5, weight: 4}\n"
                 "  - {name: batch, background: true, preemptible: true, max_queue_wait_ms: 600000}\n"
                 "  - {name: chat}\n"
                 "scheduler: {preempt_after_ms: 50}\n"
                 "default_class: chat\n";
  GatewayProcess gateway(config.to_yaml());
  const std::string id = create_batch(gateway.port(), upload(gateway.port(), input_file(kLines, kTokens)));
  ASSERT_GE(sim.wait_for_metric("vllm:num_requests_running", [](double v) { return v >= 2; }, Millis(30'000)).value_or(0), 2);
  // Interactive work arrives while the batch holds both slots.
  std::vector<std::future<HttpResponse>> interactive;
  for (int i = 0; i < 2; ++i) {
    interactive.push_back(std::async(std::launch::async, [&] {
      return http_call(gateway.port(), gateway_post("/v1/chat/completions",
                                                    sim_chat(R"("max_tokens":4,"min_tokens":4)", "Quick!", "m1"),
                                                    kAlphaKey, "realtime"),
                       Millis(30'000));
    }));
  }
  for (auto& f : interactive) EXPECT_EQ(f.get().status, 200);
  const auto done = wait_for_batch(gateway.port(), id, [](const auto& s) { return ended(s); }, Millis(90'000));
  ASSERT_EQ(done.at("status").as_string(), "completed") << boost::json::serialize(done);
  EXPECT_EQ(count(done, "completed"), kLines);
  // The interactive requests took their slots from running lines...
  const auto metrics = http_get(gateway.admin_port(), "/metrics").body;
  EXPECT_GE(metric_value(metrics, "arbiter_scheduler_events_total", {{"class", "batch"}, {"event", "preempted"}}).value_or(0), 1)
      << describe_output(gateway);
  // ...and those lines still answered whole: every token they asked for.
  const auto seen = output_lines(gateway.port(), done);
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kLines));
  for (const auto& [custom_id, o] : seen) {
    const std::string text(o.at("response").at("body").at("choices").at(0).at("message").at("content").as_string());
    EXPECT_EQ(word_count(text), static_cast<std::size_t>(kTokens)) << custom_id;
  }
}

// Batches of the other endpoints OpenAI's Batch API takes: Responses lines
// answered with response objects, embedding lines with embeddings.
TEST(Batches, ResponsesAndEmbeddingsLinesRun) {
  TempDir dir("arbiter-batch");
  SimProcess sim({"--profile", "tiny", "--model", "m1"});
  GatewayProcess gateway(config_yaml(sim.port(), dir.file("batches")));
  const std::pair<std::string, std::string> kinds[] = {
      {"/v1/responses", R"({"model":"m1","input":"Say something.","max_output_tokens":3})"},
      {"/v1/embeddings", R"({"model":"m1","input":"Say something."})"}};
  for (const auto& [endpoint, body] : kinds) {
    std::string content;
    for (int i = 0; i < 3; ++i) {
      content += R"({"custom_id":"l)" + std::to_string(i) + R"(","method":"POST","url":")" + endpoint +
                 R"(","body":)" + body + "}\n";
    }
    const std::string file = upload(gateway.port(), content);
    const HttpResponse created = http_post(
        gateway.port(), "/v1/batches",
        R"({"input_file_id":")" + file + R"(","endpoint":")" + endpoint + R"(","completion_window":"24h"})",
        {{"authorization", std::string("Bearer ") + kAlphaKey}});
    ASSERT_EQ(created.status, 200) << created.body;
    const std::string id(created.json().at("id").as_string());
    const auto done = wait_for_batch(gateway.port(), id, ended, Millis(30'000));
    ASSERT_EQ(done.at("status").as_string(), "completed") << boost::json::serialize(done);
    EXPECT_EQ(count(done, "completed"), 3);
    const auto lines = output_lines(gateway.port(), done);
    ASSERT_EQ(lines.size(), 3u);
    for (const auto& [custom_id, line] : lines) {
      const auto& response = line.at("response").as_object();
      EXPECT_EQ(response.at("status_code").as_int64(), 200) << endpoint;
      const auto& answer = response.at("body").as_object();
      EXPECT_EQ(answer.at("object").as_string(), endpoint == "/v1/responses" ? "response" : "list") << endpoint;
    }
  }
}

// A replica on the shared database and folder, its own name and spool; a
// batch whose replica stops renewing is taken over after 3 s.
std::string replica_yaml(uint16_t sim_port, const std::string& batch_dir, const std::string& url,
                         const std::string& spool, const std::string& name) {
  GatewayConfig config;
  config.backend_ports = {sim_port};
  config.max_concurrency = 4;
  config.extra = "batches: {dir: \"" + batch_dir + "\", takeover_s: 3}\nstore: {url: \"" + url + "\", path: \"" +
                 spool + "\", replica: " + name + "}\nhealth_probes: {enabled: false}\n";
  return config.to_yaml();
}

// An engine, a real PostgreSQL and a folder that replicas share.
struct ReplicaSite {
  SimProcess sim{{"--profile", "tiny", "--model", "m1"}};
  PostgresServer server;
  TempDir dir{"arbiter-batch-replicas"};
  ReplicaSite() { server.create_database("batches"); }
  // Replica `name`'s config (its own spool).
  std::string yaml(const std::string& name) {
    return replica_yaml(sim.port(), dir.file("batches"), server.url("batches"), dir.file(name + "-spool"), name);
  }
};

TEST(BatchReplicas, AnyReplicaShowsABatchAndOneTakesOverTheBatchOfAReplicaKilledMidway) {
  constexpr int kLines = 40;
  ReplicaSite site;
  SimProcess& sim = site.sim;
  GatewayProcess a(site.yaml("gw-a"));
  std::string id;
  {
    GatewayProcess b(site.yaml("gw-b"));
    // Uploaded through one replica, the batch made through the other: b runs it.
    id = create_batch(b.port(), upload(a.port(), input_file(kLines, 150)));
    // Its progress, live on the replica that does not run it.
    const auto state = wait_for_batch(a.port(), id, [](const auto& s) { return count(s, "completed") >= 10; },
                                      Millis(60'000));
    ASSERT_GE(count(state, "completed"), 10) << boost::json::serialize(state);
    ASSERT_EQ(state.at("status").as_string(), "in_progress");
    b.kill();
    b.wait_exit(Millis(10'000));
  }
  // a claims it once b's lease runs out and runs the lines b had not answered.
  const auto done = wait_for_batch(a.port(), id, [](const auto& s) { return ended(s); }, Millis(90'000));
  ASSERT_EQ(done.at("status").as_string(), "completed") << boost::json::serialize(done);
  EXPECT_EQ(count(done, "completed"), kLines);
  EXPECT_EQ(count(done, "failed"), 0);
  const auto seen = output_lines(a.port(), done);
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kLines));
  // Counted at the engine: each line ran to its end exactly once.
  EXPECT_EQ(sim.metric("vllm:request_success_total", {{"finished_reason", "length"}}).value_or(0), kLines)
      << sim.metrics();
  // b made it, a ended it.
  EXPECT_EQ(a.stderr_text().find("batch_created"), std::string::npos);
  EXPECT_NE(a.stderr_text().find("batch_ended"), std::string::npos);
}

TEST(BatchReplicas, ACancelOnOneReplicaStopsTheLinesAnotherRuns) {
  constexpr int kLines = 30;
  ReplicaSite site;
  SimProcess& sim = site.sim;
  GatewayProcess a(site.yaml("gw-a"));
  GatewayProcess b(site.yaml("gw-b"));
  const std::string id = create_batch(a.port(), upload(a.port(), input_file(kLines, 2000)));
  // a runs it; b is asked, a takes the cancel up at its next renewal.
  cancel_running(sim, b.port(), id);
  // Another tenant's cancel of it: not found, on either replica.
  const HttpResponse other = http_post(b.port(), "/v1/batches/" + id + "/cancel", "",
                                       {{"authorization", std::string("Bearer ") + kBetaKey}});
  EXPECT_EQ(other.status, 404) << other.body;
}

// A replica's batch with the store (PostgreSQL) killed once four lines are
// answered and started again once `lost` (its lines outlived two thirds of
// the lease: they stop) or at once (the lines may end in the outage: the
// batch cannot be finalized until the store is back). Either way the batch
// ends completed once the store is back, every line answered once.
void store_outage_mid_batch(int lines, int tokens, bool lost) {
  ReplicaSite site;
  SimProcess& sim = site.sim;
  PostgresServer& server = site.server;
  GatewayProcess a(site.yaml("gw-a"));
  const std::string id = create_batch(a.port(), upload(a.port(), input_file(lines, tokens)));
  ASSERT_GE(count(wait_for_batch(a.port(), id, [](const auto& s) { return count(s, "completed") >= 4; }, Millis(60'000)),
                  "completed"),
            4);
  server.kill();
  if (lost) {
    // Unrenewed for two thirds of takeover_s (2 s of 3), its lines stop: a
    // replica that could not see them go must not run them beside another.
    const auto until = Clock::now() + Millis(30'000);
    while (a.stderr_text().find("batch_lost") == std::string::npos && Clock::now() < until) {
      std::this_thread::sleep_for(Millis(50));
    }
    ASSERT_NE(a.stderr_text().find("batch_lost"), std::string::npos) << a.stderr_text();
    EXPECT_GE(a.wait_for_metric("arbiter_batches_lost_total", [](double v) { return v >= 1; }, Millis(10'000))
                  .value_or(0),
              1);
    EXPECT_GE(a.wait_for_metric("arbiter_batch_lease_failures_total", [](double v) { return v >= 2; }, Millis(10'000))
                  .value_or(0),
              2)
        << "two unanswered renewals at least";
    EXPECT_EQ(sim.wait_for_metric("vllm:num_requests_running", [](double v) { return v == 0; }, Millis(10'000)).value_or(-1),
              0);
  }
  server.restart();
  // Back (the API answers 500 until the replica reconnects): the replica
  // claims its batch again and runs what was not answered.
  const auto back = Clock::now() + Millis(30'000);
  while (http_get(a.port(), "/v1/batches/" + id, {{"authorization", std::string("Bearer ") + kAlphaKey}}).status != 200 &&
         Clock::now() < back) {
    std::this_thread::sleep_for(Millis(50));
  }
  const auto done = wait_for_batch(a.port(), id, [](const auto& s) { return ended(s); }, Millis(90'000));
  ASSERT_EQ(done.at("status").as_string(), "completed") << boost::json::serialize(done);
  EXPECT_EQ(count(done, "completed"), lines);
  EXPECT_EQ(output_lines(a.port(), done).size(), static_cast<std::size_t>(lines));
  EXPECT_EQ(sim.metric("vllm:request_success_total", {{"finished_reason", "length"}}).value_or(0), lines)
      << sim.metrics();
}

TEST(BatchReplicas, AReplicaThatLosesTheStoreStopsItsLinesAndFinishesTheBatchOnceItIsBack) {
  // Three waves of four lines of ~2 s each: two still to run at the outage.
  store_outage_mid_batch(12, 2000, /*lost=*/true);
}

TEST(BatchReplicas, ABatchWhoseLinesEndInAStoreOutageIsFinalizedOnceItIsBack) {
  // Short lines: they may all be answered before the lease's two thirds.
  store_outage_mid_batch(16, 150, /*lost=*/false);
}

}  // namespace
}  // namespace arbiter::test
