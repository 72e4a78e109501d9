// store.audit_sample: read and checked with the config, and applied by the
// request id's hash: the share asked for, the same requests every time,
// the kinds not listed all kept. And the rows a request leaves: its
// `dispatched` detail as docs/audit.md names its fields.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include "gateway/config_yaml.hpp"
#include "gateway/observers/store/store_observer.hpp"
#include "gateway/pipeline/request_context.hpp"
#include "loopback.hpp"
#include "support/temp_dir.hpp"

namespace arbiter::store_observer_test {
namespace {

const std::string kModels = "models: [{name: m, backends: [{url: 'http://127.0.0.1:9'}]}]\n";

TEST(StoreObserver, AuditSampleIsCheckedWithTheConfig) {
  const auto ok = parse_config(kModels + "store: {audit_sample: {dispatched: 0.1, degraded: 0}}\n");
  ASSERT_TRUE(ok) << ::testing::PrintToString(ok.error());
  EXPECT_EQ(ok->store.audit_sample,
            (std::vector<std::pair<std::string, double>>{{"dispatched", 0.1}, {"degraded", 0}}));
  const auto unknown = parse_config(kModels + "store: {audit_sample: {dispached: 0.1}}\n");
  ASSERT_FALSE(unknown);
  EXPECT_NE(::testing::PrintToString(unknown.error()).find("store.audit_sample.dispached"), std::string::npos)
      << ::testing::PrintToString(unknown.error());
  EXPECT_FALSE(parse_config(kModels + "store: {audit_sample: {dispatched: 2}}\n"));
  EXPECT_FALSE(parse_config(kModels + "store: {audit_sample: [dispatched]}\n"));
}

TEST(StoreObserver, SamplesTheShareAskedForTheSameRequestsEveryTime) {
  test::TempDir dir("store-observer");
  StoreConfig settings;
  settings.path = dir.file("usage.db");
  settings.audit_sample = {{"dispatched", 0.1}, {"degraded", 0}};
  auto writer = StoreWriter::open(settings);
  ASSERT_TRUE(writer) << writer.error();
  const StoreObserver observer(**writer, settings);
  int kept = 0;
  for (int i = 0; i < 20'000; ++i) {
    const std::string id = "req-" + std::to_string(i * 7919);
    const bool keep = observer.sampled("dispatched", id);
    EXPECT_EQ(observer.sampled("dispatched", id), keep);  // the same every time
    kept += keep;
    EXPECT_FALSE(observer.sampled("degraded", id));
    EXPECT_TRUE(observer.sampled("refused", id));  // not listed: all
  }
  EXPECT_GT(kept, 1'700);
  EXPECT_LT(kept, 2'300);
}

// A dispatched request's rows: its usage and its `dispatched` decision,
// whose detail carries each field it has (and leaves out those it has not).
TEST(StoreObserver, ADispatchedRequestsDetailNamesWhereAndWhyItRan) {
  test::TempDir dir("store-observer-detail");
  StoreConfig settings;
  settings.path = dir.file("usage.db");
  auto writer = StoreWriter::open(settings);
  ASSERT_TRUE(writer) << writer.error();
  (*writer)->start();
  StoreObserver observer(**writer, settings);
  net::io_context ioc;
  testing::Loopback loop{ioc};
  const std::string long_backend(300, 'b');  // longer than any fixed room
  for (int i = 0; i < 2; ++i) {
    http::request<http::string_body> r{http::verb::post, "/v1/chat/completions", 11};
    HttpRequest req(std::move(r));
    RequestContext ctx(Route::kChatCompletions, req, loop.conn());
    ctx.rec.ts = std::chrono::system_clock::now();  // within the retention
    ctx.rec.request_id = "req-" + std::to_string(i);
    ctx.rec.tenant = "team-a";
    ctx.rec.cls = "chat";
    ctx.rec.model = "m1";
    ctx.rec.status = 200;
    ctx.rec.backend = i == 0 ? "http://10.0.0.7:8000" : long_backend;
    ctx.rec.queue_ms = i == 0 ? 12.345 : 0;
    ctx.rec.wait_reason = i == 0 ? "min_share" : "";
    ctx.dispatch_queue_ms = ctx.rec.queue_ms;
    ctx.placement = {.reason = i == 0 ? "prefix_affinity" : "least_loaded",
                     .prefix_blocks = static_cast<uint16_t>(i == 0 ? 7 : 0),
                     .borrowed_from = i == 0 ? "batch" : ""};
    observer.on_answer_end(ctx);
  }
  (*writer)->stop();
  const auto rows = (*writer)->recent_audit(10);
  ASSERT_TRUE(rows) << rows.error();
  ASSERT_EQ(rows->size(), 2u) << (rows->empty() ? "" : (*rows)[0].request_id + " " + (*rows)[0].detail);
  std::map<std::string, std::string> detail;
  for (const store::AuditRow& row : *rows) {
    EXPECT_EQ(row.kind, "dispatched");
    EXPECT_EQ(row.tenant, "team-a");
    detail[row.request_id] = row.detail;
  }
  EXPECT_EQ(detail["req-0"],
            "backend=http://10.0.0.7:8000 placement=prefix_affinity queue_ms=12.3 wait_reason=min_share status=200 "
            "prefix_blocks=7 borrowed_from=batch");
  EXPECT_EQ(detail["req-1"], "backend=" + long_backend + " placement=least_loaded queue_ms=0.0 wait_reason=none status=200");
}

}  // namespace
}  // namespace arbiter::store_observer_test
