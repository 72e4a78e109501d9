// What the inference routes' pipeline is assembled from: every admission
// stage and completion observer, one entry each, in the order they run
// inside their phase (the Pipeline puts each stage in its phase's place).
// A new feature adds its entry here and nothing else outside its folder;
// `--print-config` prints the chain a config gives (describe_pipeline).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"
#include "gateway/pipeline/stage.hpp"

namespace arbiter {

class BatchedLineWriter;
class ModelBreakers;
class ModelPool;
class OverloadControl;
class QuotaBook;
class ResultCache;
class RolloutBook;
class StoreWriter;
class TraceExporter;
class UsageBook;
struct GatewayMetrics;

// The gateway's parts the stages and observers hold on to.
struct PipelineParts {
  const Config& config;
  const std::vector<std::unique_ptr<ModelPool>>& pools;
  GatewayMetrics& metrics;
  ModelBreakers& breakers;
  OverloadControl& overload;
  QuotaBook& quotas;
  ResultCache& cache;
  UsageBook& usage;
  RolloutBook& rollouts;
  BatchedLineWriter* access_log;  // null: the access log is off
  StoreWriter* store;             // null: the usage and audit store is off
  TraceExporter* traces;          // null: tracing is off (no tracing.endpoint)
};

struct StageEntry {
  std::string_view name;
  Phase phase;
  std::unique_ptr<AdmissionStage> (*make)(const PipelineParts& parts);
  // Whether a config's pipeline has it; null: always. A stage a config
  // does not use costs its requests nothing (each generation assembles
  // its own pipeline).
  bool (*enabled)(const Config& config) = nullptr;

  bool in(const Config& config) const { return enabled == nullptr || enabled(config); }
};

struct ObserverEntry {
  std::string_view name;
  bool (*enabled)(const Config& config);
  // Null when a part it needs is missing (an access log with no writer).
  std::unique_ptr<CompletionObserver> (*make)(const PipelineParts& parts);
};

// A stage's entry: its name and phase as the class declares them (kName,
// kPhase), and how it is made.
template <class Stage>
constexpr StageEntry stage_entry(std::unique_ptr<AdmissionStage> (*make)(const PipelineParts&),
                                 bool (*enabled)(const Config&) = nullptr) {
  return {Stage::kName, Stage::kPhase, make, enabled};
}

std::span<const StageEntry> stage_registry();
std::span<const ObserverEntry> observer_registry();

// The chain a config gives: "authenticate: auth; parse: parse; route: route,
// hints; protect: breaker; admit: caps, quota, supersede; handler: dispatch;
// observers: metrics, access_log, quota, usage, breaker".
std::string describe_pipeline(const Config& config);

}  // namespace arbiter
