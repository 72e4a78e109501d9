// The usage and audit store live (issue 46), on a real SQLite file or a real
// PostgreSQL server and real arbiter-sim engines: the gateway killed with
// SIGKILL under load loses no answered request (after a restart the store
// holds every one, once, and the audit trail verifies), and the usage
// report comes back from the store; the store out for 30 s under load (the
// SQLite file locked by another process, the PostgreSQL server killed)
// fails no request, spools, and drains after with no row lost or doubled; a
// replica started later reports the usage another replica stored.
#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <cstdio>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "integration/sim_harness.hpp"
#include "support/child_process.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"
#include "support/harness.hpp"  // describe_output
#include "support/metrics_text.hpp"
#include "support/postgres_server.hpp"
#include "support/temp_dir.hpp"

namespace arbiter::test::usage_store_test {
namespace {

// The sqlite3 CLI's answer to `sql` on `db`, one line per row.
std::vector<std::string> query(const std::string& db, const std::string& sql) {
  const std::string command = "sqlite3 -readonly '" + db + "' \"" + sql + "\"";
  std::FILE* out = ::popen(command.c_str(), "r");
  std::vector<std::string> rows;
  if (out == nullptr) return rows;
  char line[4096];
  while (std::fgets(line, sizeof line, out)) {
    std::string text(line);
    if (!text.empty() && text.back() == '\n') text.pop_back();
    rows.push_back(text);
  }
  ::pclose(out);
  return rows;
}

// Where a test's gateway keeps its store, and how the test reads it.
struct StoreSite {
  std::string section;  // the config's store: section
  std::function<std::vector<std::string>(const std::string&)> query;
};

StoreSite sqlite_site(const std::string& db) {
  return {.section = "store: {path: \"" + db + "\"}",
          .query = [db](const std::string& sql) { return query(db, sql); }};
}

// The journal in `dir`, the rows in database `db` of `server`.
StoreSite postgres_site(PostgresServer& server, const std::string& db, const TempDir& dir,
                        const std::string& replica = "") {
  server.create_database(db);
  std::string section = "store: {url: \"" + server.url(db) + "\", path: \"" + dir.file(db + "-spool") + "\"";
  if (!replica.empty()) section += ", replica: " + replica;
  return {.section = section + "}", .query = [&server, db](const std::string& sql) { return server.query(db, sql); }};
}

GatewayConfig store_config(uint16_t sim_port, const StoreSite& site) {
  GatewayConfig config;
  config.backend_ports = {sim_port};
  config.max_concurrency = 16;
  config.extra = "admin: {port: 0}\n" + site.section + "\n";
  return config;
}

HttpRequest chat(int tokens) {
  return gateway_post("/v1/chat/completions",
                      sim_chat("\"max_tokens\":" + std::to_string(tokens) + ",\"min_tokens\":" + std::to_string(tokens),
                               "Some words.", "m1"),
                      kAlphaKey, "chat");
}

// Clients sending requests one after another until `stop`; the ids of
// those answered 200 in full, and how many got anything else (or no answer).
class Load {
 public:
  Load(uint16_t port, int clients) {
    for (int c = 0; c < clients; ++c) {
      threads_.emplace_back([this, port] {
        while (!stop_) {
          HttpResponse r;
          try {
            r = http_call(port, chat(8), Millis(30'000));
          } catch (const std::exception&) {  // the gateway killed under it
            r.status = 0;
          }
          if (r.status != 200) {
            if (!stop_) other_.fetch_add(1);
            continue;
          }
          std::lock_guard lock(mu_);
          answered_.insert(r.header("x-request-id").value_or(""));
        }
      });
    }
  }
  ~Load() { finish(); }
  void finish() {
    stop_ = true;
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  std::size_t answered() {
    std::lock_guard lock(mu_);
    return answered_.size();
  }
  std::set<std::string> ids() {
    std::lock_guard lock(mu_);
    return answered_;
  }
  int others() const { return other_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> other_{0};
  std::mutex mu_;
  std::set<std::string> answered_;
  std::vector<std::thread> threads_;
};

void wait_until(const std::function<bool()>& done, Millis timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(Millis(20));
}

void killed_under_load_loses_no_answered_request(const StoreSite& site, TempDir& dir) {
  SimProcess sim({"--profile", "tiny", "--model", "m1"});
  const std::string yaml = store_config(sim.port(), site).to_yaml();
  std::set<std::string> answered;
  {
    GatewayProcess gateway(yaml);
    Load load(gateway.port(), 8);
    wait_until([&] { return load.answered() >= 300; }, Millis(60'000));
    gateway.kill();  // SIGKILL, mid-load
    ASSERT_TRUE(gateway.wait_exit(Millis(10'000)).has_value());
    load.finish();
    answered = load.ids();
  }
  ASSERT_GE(answered.size(), 300u);
  GatewayProcess again(yaml);
  // The journal's rows are written at the start, before anything new.
  EXPECT_EQ(again.wait_for_metric("arbiter_store_spool_rows", [](double v) { return v == 0; }, Millis(30'000)), 0)
      << describe_output(again);
  // Every answer's rows were journaled before its last byte left.
  std::set<std::string> stored;
  for (const std::string& id : site.query("SELECT request_id FROM usage")) stored.insert(id);
  std::size_t missing = 0;
  for (const std::string& id : answered) missing += !stored.contains(id);
  EXPECT_EQ(missing, 0u) << "of " << answered.size() << " answered requests";
  // Once each, and every request's decision is in the trail.
  EXPECT_EQ(site.query("SELECT COUNT(*) - COUNT(DISTINCT request_id) FROM usage"), std::vector<std::string>{"0"});
  const auto dispatched = site.query("SELECT COUNT(DISTINCT request_id) FROM audit WHERE kind = 'dispatched'");
  ASSERT_EQ(dispatched.size(), 1u);
  EXPECT_GE(std::stoul(dispatched[0]), answered.size());
  // The report after the restart counts them, from the store.
  const auto report = http_get(again.admin_port(), "/admin/usage").json();
  EXPECT_GE(report.at("total").at("requests").as_int64(), static_cast<int64_t>(answered.size()));
  // The hash chain holds.
  ChildProcess verify({arbiter_binary(), "--config", again.config_path(), "--audit-verify"}, dir.file("verify.out"),
                      dir.file("verify.err"));
  EXPECT_EQ(verify.wait(Millis(30'000)), 0) << read_file(dir.file("verify.out")) << read_file(dir.file("verify.err"));
}

TEST(UsageStore, AGatewayKilledUnderLoadLosesNoAnsweredRequest) {
  TempDir dir("arbiter-store");
  killed_under_load_loses_no_answered_request(sqlite_site(dir.file("usage.db")), dir);
}

TEST(UsageStore, AGatewayKilledUnderLoadLosesNoAnsweredRequestInPostgres) {
  TempDir dir("arbiter-store");
  PostgresServer server;
  killed_under_load_loses_no_answered_request(postgres_site(server, "killed", dir), dir);
}

// The store out for 30 s (`begin_outage` to `end_outage`) under a steady
// load: no request fails, the rows spool, and once it is back the spool
// drains with every request's row there once.
void outage_under_load_fails_no_request_and_drains(const StoreSite& site, const std::function<void()>& begin_outage,
                                                   const std::function<void()>& end_outage) {
  SimProcess sim({"--profile", "tiny", "--model", "m1"});
  GatewayProcess gateway(store_config(sim.port(), site).to_yaml());
  ASSERT_EQ(http_call(gateway.port(), chat(4)).status, 200);
  EXPECT_EQ(gateway.wait_for_metric("arbiter_store_rows_written_total", [](double v) { return v >= 1; },
                                    Millis(10'000), {{"kind", "usage"}}),
            1);
  std::size_t sent = 1;
  {
    Load load(gateway.port(), 4);
    begin_outage();
    EXPECT_EQ(gateway.wait_for_metric("arbiter_store_up", [](double v) { return v == 0; }, Millis(20'000)), 0)
        << describe_output(gateway);
    std::this_thread::sleep_for(std::chrono::seconds(30));  // the outage's length, the load going on
    EXPECT_GT(metric_value(http_get(gateway.admin_port(), "/metrics").body, "arbiter_store_spool_rows").value_or(0),
              0);
    load.finish();
    EXPECT_EQ(load.others(), 0) << "requests failed while the store was out";
    sent += load.answered();
  }
  ASSERT_GT(sent, 100u);
  end_outage();
  EXPECT_EQ(gateway.wait_for_metric("arbiter_store_spool_rows", [](double v) { return v == 0; }, Millis(60'000)), 0)
      << describe_output(gateway);
  EXPECT_EQ(metric_value(http_get(gateway.admin_port(), "/metrics").body, "arbiter_store_up"), 1);
  EXPECT_EQ(site.query("SELECT COUNT(*), COUNT(DISTINCT request_id) FROM usage"),
            std::vector<std::string>{std::to_string(sent) + "|" + std::to_string(sent)});
  EXPECT_EQ(metric_value(http_get(gateway.admin_port(), "/metrics").body, "arbiter_store_rows_dropped_total"), 0);
}

TEST(UsageStore, AStoreLockedUnderLoadFailsNoRequestAndDrainsAfter) {
  TempDir dir("arbiter-store");
  const std::string db = dir.file("usage.db");
  std::unique_ptr<ChildProcess> locker;
  outage_under_load_fails_no_request_and_drains(
      sqlite_site(db),
      [&] {  // another process holds the database's write lock
        locker = std::make_unique<ChildProcess>(
            std::vector<std::string>{"/usr/bin/sqlite3", db, "BEGIN EXCLUSIVE;", ".shell sleep 35"},
            dir.file("lock.out"), dir.file("lock.err"));
      },
      [&] {
        locker->signal(SIGKILL);  // the lock goes with it
        locker->wait(Millis(10'000));
      });
}

TEST(UsageStore, PostgresKilledUnderLoadFailsNoRequestAndDrainsAfter) {
  TempDir dir("arbiter-store");
  PostgresServer server;
  outage_under_load_fails_no_request_and_drains(
      postgres_site(server, "outage", dir), [&] { server.kill(); }, [&] { server.restart(); });
}

TEST(UsageStore, AReplicaStartedLaterReportsWhatAnotherStoredInPostgres) {
  SimProcess sim({"--profile", "tiny", "--model", "m1"});
  TempDir dir("arbiter-store");
  PostgresServer server;
  const StoreSite first = postgres_site(server, "shared", dir, "gw-a");
  GatewayProcess a(store_config(sim.port(), first).to_yaml());
  for (int i = 0; i < 20; ++i) ASSERT_EQ(http_call(a.port(), chat(4)).status, 200);
  EXPECT_EQ(a.wait_for_metric("arbiter_store_rows_written_total", [](double v) { return v >= 20; }, Millis(10'000),
                              {{"kind", "usage"}}),
            20);
  // Another replica on the same database (its own journal, its own name).
  GatewayConfig second = store_config(sim.port(), first);
  second.extra = "admin: {port: 0}\nstore: {url: \"" + server.url("shared") + "\", path: \"" + dir.file("b-spool") +
                 "\", replica: gw-b}\n";
  GatewayProcess b(second.to_yaml());
  const auto report = http_get(b.admin_port(), "/admin/usage").json();
  EXPECT_EQ(report.at("total").at("requests").as_int64(), 20);
  ASSERT_EQ(http_call(b.port(), chat(4)).status, 200);
  EXPECT_EQ(b.wait_for_metric("arbiter_store_rows_written_total", [](double v) { return v >= 1; }, Millis(10'000),
                              {{"kind", "usage"}}),
            1);
  EXPECT_EQ(first.query("SELECT replica, COUNT(*) FROM usage GROUP BY replica ORDER BY replica"),
            (std::vector<std::string>{"gw-a|20", "gw-b|1"}));
}

}  // namespace
}  // namespace arbiter::test::usage_store_test
