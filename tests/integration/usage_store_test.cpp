// The usage and audit store live (issue 46), on a real SQLite file and real
// arbiter-sim engines: the gateway killed with SIGKILL under load loses no
// answered request (after a restart the store holds every one, once, and
// the audit trail verifies), and the usage report comes back from the
// store; the store locked by another process under load fails no request,
// spools, and drains after with no row lost or doubled.
#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <cstdio>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include "integration/sim_harness.hpp"
#include "support/child_process.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"
#include "support/harness.hpp"  // describe_output
#include "support/metrics_text.hpp"
#include "support/temp_dir.hpp"

namespace arbiter::test {
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

GatewayConfig store_config(uint16_t sim_port, const std::string& db) {
  GatewayConfig config;
  config.backend_ports = {sim_port};
  config.max_concurrency = 16;
  config.extra = "admin: {port: 0}\nstore: {path: \"" + db + "\"}\n";
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

TEST(UsageStore, AGatewayKilledUnderLoadLosesNoAnsweredRequest) {
  SimProcess sim({"--profile", "tiny", "--model", "m1"});
  TempDir dir("arbiter-store");
  const std::string db = dir.file("usage.db");
  const std::string yaml = store_config(sim.port(), db).to_yaml();
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
  std::set<std::string> stored;
  for (const std::string& id : query(db, "SELECT request_id FROM usage")) stored.insert(id);
  std::size_t missing = 0;
  for (const std::string& id : answered) missing += !stored.contains(id);
  EXPECT_EQ(missing, 0u) << "of " << answered.size() << " answered requests";
  // Once each, and every request's decision is in the trail.
  EXPECT_EQ(query(db, "SELECT COUNT(*) - COUNT(DISTINCT request_id) FROM usage"), std::vector<std::string>{"0"});
  const auto dispatched = query(db, "SELECT COUNT(DISTINCT request_id) FROM audit WHERE kind = 'dispatched'");
  ASSERT_EQ(dispatched.size(), 1u);
  EXPECT_GE(std::stoul(dispatched[0]), answered.size());
  // The report after the restart counts them, from the store.
  const auto report = http_get(again.admin_port(), "/admin/usage").json();
  EXPECT_GE(report.at("total").at("requests").as_int64(), static_cast<int64_t>(answered.size()));
  // The hash chain holds.
  ChildProcess verify({arbiter_binary(), "--config", again.config_path(), "--audit-verify"}, dir.file("verify.out"),
                      dir.file("verify.err"));
  EXPECT_EQ(verify.wait(Millis(30'000)), 0);
}

TEST(UsageStore, AStoreLockedUnderLoadFailsNoRequestAndDrainsAfter) {
  SimProcess sim({"--profile", "tiny", "--model", "m1"});
  TempDir dir("arbiter-store");
  const std::string db = dir.file("usage.db");
  GatewayProcess gateway(store_config(sim.port(), db).to_yaml());
  ASSERT_EQ(http_call(gateway.port(), chat(4)).status, 200);
  EXPECT_EQ(gateway.wait_for_metric("arbiter_store_rows_written_total", [](double v) { return v >= 1; },
                                    Millis(10'000), {{"kind", "usage"}}),
            1);
  std::size_t sent = 1;
  {
    // Another process holds the database's write lock for 30 s.
    ChildProcess locker({"/usr/bin/sqlite3", db, "BEGIN EXCLUSIVE;", ".shell sleep 35"}, dir.file("lock.out"),
                        dir.file("lock.err"));
    Load load(gateway.port(), 4);
    EXPECT_EQ(gateway.wait_for_metric("arbiter_store_up", [](double v) { return v == 0; }, Millis(20'000)), 0)
        << describe_output(gateway);
    std::this_thread::sleep_for(std::chrono::seconds(30));  // the outage's length, the load going on
    EXPECT_GT(metric_value(http_get(gateway.admin_port(), "/metrics").body, "arbiter_store_spool_rows").value_or(0),
              0);
    load.finish();
    EXPECT_EQ(load.others(), 0) << "requests failed while the store was locked";
    sent += load.answered();
    locker.signal(SIGKILL);  // the lock goes with it
    locker.wait(Millis(10'000));
  }
  ASSERT_GT(sent, 100u);
  EXPECT_EQ(gateway.wait_for_metric("arbiter_store_spool_rows", [](double v) { return v == 0; }, Millis(60'000)), 0)
      << describe_output(gateway);
  EXPECT_EQ(metric_value(http_get(gateway.admin_port(), "/metrics").body, "arbiter_store_up"), 1);
  EXPECT_EQ(query(db, "SELECT COUNT(*), COUNT(DISTINCT request_id) FROM usage"),
            std::vector<std::string>{std::to_string(sent) + "|" + std::to_string(sent)});
  EXPECT_EQ(metric_value(http_get(gateway.admin_port(), "/metrics").body, "arbiter_store_rows_dropped_total"), 0);
}

}  // namespace
}  // namespace arbiter::test
