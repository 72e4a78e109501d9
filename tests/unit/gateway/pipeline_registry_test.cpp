// The chain the registry assembles for a config, by phase (what
// --print-config prints first): every stage in its phase, the observers the
// config turns on.
#include "gateway/pipeline_registry.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gateway/config_yaml.hpp"
#include "gateway/pipeline/pipeline.hpp"

namespace arbiter {
namespace {

TEST(PipelineRegistry, DescribesTheChainAConfigGives) {
  auto config = parse_config("models: [{name: m, backends: [{url: 'http://127.0.0.1:9'}]}]\n");
  ASSERT_TRUE(config) << ::testing::PrintToString(config.error());
  EXPECT_EQ(describe_pipeline(*config),
            "authenticate: auth; parse: parse; route: route, hints; answer_early: cache; protect: breaker, degrade; "
            "admit: caps, quota, supersede; handler: dispatch; observers: metrics, access_log, quota, usage, breaker, "
            "cache, store");
  // A stage the config does not use is left out: the alias stage only with aliases.
  auto aliased = parse_config("models: [{name: m, backends: [{url: 'http://127.0.0.1:9'}]}]\n"
                              "aliases: [{name: a, targets: [{model: m}]}]\n");
  ASSERT_TRUE(aliased) << ::testing::PrintToString(aliased.error());
  EXPECT_NE(describe_pipeline(*aliased).find("route: alias, route, hints;"), std::string::npos)
      << describe_pipeline(*aliased);
  EXPECT_NE(describe_pipeline(*aliased).find("breaker, rollout, cache"), std::string::npos) << describe_pipeline(*aliased);
  auto quiet = parse_config("log: {access_log: false}\nmodels: [{name: m, backends: [{url: 'http://127.0.0.1:9'}]}]\n");
  ASSERT_TRUE(quiet);
  EXPECT_TRUE(describe_pipeline(*quiet).ends_with("observers: metrics, quota, usage, breaker, cache, store"))
      << "no access-log observer without the access log: " << describe_pipeline(*quiet);
  auto unstored = parse_config("store: {enabled: false}\nmodels: [{name: m, backends: [{url: 'http://127.0.0.1:9'}]}]\n");
  ASSERT_TRUE(unstored);
  EXPECT_TRUE(describe_pipeline(*unstored).ends_with("breaker, cache")) << "no store observer without the store";
}

TEST(PipelineRegistry, StagesAreListedInPhaseOrder) {
  const auto stages = stage_registry();
  EXPECT_TRUE(std::is_sorted(stages.begin(), stages.end(),
                             [](const StageEntry& a, const StageEntry& b) { return a.phase < b.phase; }))
      << "the pipeline would reorder them: list a stage where it runs";
}

// docs/architecture.md, "Adding a feature", as code: a stage is a class
// that declares its name and phase; its registry entry takes both from it;
// the pipeline puts it in its phase's place wherever it is added.
class SampleCache final : public AdmissionStage {
 public:
  static constexpr std::string_view kName = "sample_cache";
  static constexpr Phase kPhase = Phase::kAnswerEarly;
  std::string_view name() const override { return kName; }
  Phase phase() const override { return kPhase; }
  Verdict admit(RequestContext&) override { return Verdict::go(); }
};

// A stand-in for a registry entry's stage: its name and phase.
class StandIn final : public AdmissionStage {
 public:
  explicit StandIn(const StageEntry& entry) : entry_(entry) {}
  std::string_view name() const override { return entry_.name; }
  Phase phase() const override { return entry_.phase; }
  Verdict admit(RequestContext&) override { return Verdict::go(); }

 private:
  const StageEntry& entry_;
};

TEST(PipelineRegistry, AStageAddedByTheRecipeRunsInItsPhasesPlace) {
  constexpr StageEntry entry = stage_entry<SampleCache>(
      [](const PipelineParts&) -> std::unique_ptr<AdmissionStage> { return std::make_unique<SampleCache>(); });
  EXPECT_EQ(entry.name, "sample_cache");
  EXPECT_EQ(entry.phase, Phase::kAnswerEarly);
  Pipeline pipeline;
  pipeline.add_stage(std::make_unique<SampleCache>());  // added first, on purpose
  for (const StageEntry& e : stage_registry()) pipeline.add_stage(std::make_unique<StandIn>(e));
  std::vector<std::string> order;
  for (const auto& s : pipeline.stages()) order.emplace_back(s->name());
  EXPECT_EQ(order, (std::vector<std::string>{"auth", "parse", "alias", "route", "hints", "sample_cache", "cache",
                                             "breaker", "degrade", "caps", "quota", "supersede"}));
}

}  // namespace
}  // namespace arbiter
