#include "gateway/pipeline_registry.hpp"

#include "gateway/observers/access_log/access_log_observer.hpp"
#include "gateway/stages/breaker/breaker_observer.hpp"
#include "gateway/observers/metrics/request_metrics.hpp"
#include "gateway/observers/store/store_observer.hpp"
#include "gateway/observers/tracing/tracing_observer.hpp"
#include "gateway/observers/usage/usage_observer.hpp"
#include "gateway/stages/auth/auth_stage.hpp"
#include "gateway/stages/breaker/breaker_stage.hpp"
#include "gateway/stages/cache/cache_stage.hpp"
#include "gateway/stages/caps/caps_stage.hpp"
#include "gateway/stages/degrade/degrade_stage.hpp"
#include "gateway/stages/hints/hints_stage.hpp"
#include "gateway/stages/parse/parse_stage.hpp"
#include "gateway/stages/quota/quota_stage.hpp"
#include "gateway/stages/rollout/alias_stage.hpp"
#include "gateway/stages/route/route_stage.hpp"
#include "gateway/stages/supersede/supersede_stage.hpp"

namespace arbiter {
namespace {

bool always(const Config&) { return true; }

const StageEntry kStages[] = {
    stage_entry<AuthStage>([](const PipelineParts&) -> std::unique_ptr<AdmissionStage> {
      return std::make_unique<AuthStage>();
    }),
    stage_entry<ParseStage>([](const PipelineParts& p) -> std::unique_ptr<AdmissionStage> {
      return std::make_unique<ParseStage>(p.config.limits.max_json_depth);
    }),
    stage_entry<AliasStage>(
        [](const PipelineParts& p) -> std::unique_ptr<AdmissionStage> {
          return std::make_unique<AliasStage>(p.rollouts, p.metrics);
        },
        [](const Config& c) { return !c.aliases.empty(); }),
    stage_entry<RouteStage>([](const PipelineParts& p) -> std::unique_ptr<AdmissionStage> {
      return std::make_unique<RouteStage>(p.pools);
    }),
    stage_entry<HintsStage>([](const PipelineParts& p) -> std::unique_ptr<AdmissionStage> {
      return std::make_unique<HintsStage>(p.metrics);
    }),
    stage_entry<CacheStage>([](const PipelineParts& p) -> std::unique_ptr<AdmissionStage> {
      return std::make_unique<CacheStage>(p.cache, p.overload);
    }),
    stage_entry<BreakerStage>([](const PipelineParts& p) -> std::unique_ptr<AdmissionStage> {
      return std::make_unique<BreakerStage>(p.breakers);
    }),
    stage_entry<DegradeStage>([](const PipelineParts& p) -> std::unique_ptr<AdmissionStage> {
      return std::make_unique<DegradeStage>(p.overload);
    }),
    stage_entry<CapsStage>([](const PipelineParts& p) -> std::unique_ptr<AdmissionStage> {
      return std::make_unique<CapsStage>(p.pools, p.metrics);
    }),
    stage_entry<QuotaStage>([](const PipelineParts& p) -> std::unique_ptr<AdmissionStage> {
      return std::make_unique<QuotaStage>(p.config, p.quotas);
    }),
    stage_entry<SupersedeStage>([](const PipelineParts&) -> std::unique_ptr<AdmissionStage> {
      return std::make_unique<SupersedeStage>();
    }),
};

const ObserverEntry kObservers[] = {
    {"metrics", always,
     [](const PipelineParts& p) -> std::unique_ptr<CompletionObserver> {
       return std::make_unique<RequestMetrics>(p.config, p.metrics);
     }},
    {"access_log", [](const Config& c) { return c.log.access_log; },
     [](const PipelineParts& p) -> std::unique_ptr<CompletionObserver> {
       if (p.access_log == nullptr) return nullptr;
       return std::make_unique<AccessLogObserver>(*p.access_log);
     }},
    {"quota", always,
     [](const PipelineParts&) -> std::unique_ptr<CompletionObserver> { return std::make_unique<QuotaObserver>(); }},
    {"usage", always,
     [](const PipelineParts& p) -> std::unique_ptr<CompletionObserver> {
       return std::make_unique<UsageObserver>(p.config, p.usage);
     }},
    {"breaker", always,
     [](const PipelineParts& p) -> std::unique_ptr<CompletionObserver> {
       return std::make_unique<BreakerObserver>(p.breakers);
     }},
    {"rollout", [](const Config& c) { return !c.aliases.empty(); },
     [](const PipelineParts& p) -> std::unique_ptr<CompletionObserver> {
       return std::make_unique<RolloutObserver>(p.rollouts);
     }},
    {"cache", always,
     [](const PipelineParts& p) -> std::unique_ptr<CompletionObserver> {
       return std::make_unique<CacheObserver>(p.cache);
     }},
    {"tracing", [](const Config& c) { return !c.tracing.endpoint.empty(); },
     [](const PipelineParts& p) -> std::unique_ptr<CompletionObserver> {
       if (p.traces == nullptr) return nullptr;
       return std::make_unique<TracingObserver>(p.config.tracing, *p.traces);
     }},
    {"store", [](const Config& c) { return c.store.enabled; },
     [](const PipelineParts& p) -> std::unique_ptr<CompletionObserver> {
       if (p.store == nullptr) return nullptr;
       return std::make_unique<StoreObserver>(*p.store, p.config.store);
     }},
};

}  // namespace

std::span<const StageEntry> stage_registry() { return kStages; }
std::span<const ObserverEntry> observer_registry() { return kObservers; }

std::string describe_pipeline(const Config& config) {
  std::string out;
  for (const Phase phase : kPhases) {
    std::string names;
    for (const StageEntry& s : kStages) {
      if (s.phase == phase && s.in(config)) names += (names.empty() ? "" : ", ") + std::string(s.name);
    }
    if (!names.empty()) out += std::string(phase_name(phase)) + ": " + names + "; ";
  }
  out += "handler: dispatch; observers: ";
  std::string observers;
  for (const ObserverEntry& o : kObservers) {
    if (o.enabled(config)) observers += (observers.empty() ? "" : ", ") + std::string(o.name);
  }
  return out + observers;
}

}  // namespace arbiter
