// The chain the registry assembles for a config, by phase (what
// --print-config prints first): every stage in its phase, the observers the
// config turns on.
#include "gateway/pipeline_registry.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "gateway/config_yaml.hpp"

namespace arbiter {
namespace {

TEST(PipelineRegistry, DescribesTheChainAConfigGives) {
  auto config = parse_config("models: [{name: m, backends: [{url: 'http://127.0.0.1:9'}]}]\n");
  ASSERT_TRUE(config) << ::testing::PrintToString(config.error());
  EXPECT_EQ(describe_pipeline(*config),
            "authenticate: auth; parse: parse; route: route, hints; protect: breaker; "
            "admit: caps, quota, supersede; handler: dispatch; observers: metrics, access_log, quota, usage, breaker");
  auto quiet = parse_config("log: {access_log: false}\nmodels: [{name: m, backends: [{url: 'http://127.0.0.1:9'}]}]\n");
  ASSERT_TRUE(quiet);
  EXPECT_TRUE(describe_pipeline(*quiet).ends_with("observers: metrics, quota, usage, breaker"))
      << "no access-log observer without the access log: " << describe_pipeline(*quiet);
}

TEST(PipelineRegistry, StagesAreListedInPhaseOrder) {
  const auto stages = stage_registry();
  EXPECT_TRUE(std::is_sorted(stages.begin(), stages.end(),
                             [](const StageEntry& a, const StageEntry& b) { return a.phase < b.phase; }))
      << "the pipeline would reorder them: list a stage where it runs";
}

}  // namespace
}  // namespace arbiter
