// store.audit_sample: read and checked with the config, and applied by the
// request id's hash: the share asked for, the same requests every time,
// the kinds not listed all kept.
#include <gtest/gtest.h>

#include "gateway/config_yaml.hpp"
#include "gateway/observers/store/store_observer.hpp"
#include "support/temp_dir.hpp"

namespace arbiter {
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

}  // namespace
}  // namespace arbiter
