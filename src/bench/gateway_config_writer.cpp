#include "bench/gateway_config_writer.hpp"

#include <chrono>
#include <sstream>

#include "bench/live_request.hpp"
#include "yaml/setting_keys.hpp"

namespace arbiter::bench {
namespace {

const char* yes_no(bool b) { return b ? "true" : "false"; }

}  // namespace

std::string gateway_config_yaml(const Scenario& s, const GatewayConfigOptions& o,
                                std::vector<std::string>& warnings) {
  const EngineSpec& e = s.engine;
  const engine::Profile* profile = engine::find_profile(e.profile);
  if (o.engine_urls.empty() && profile != nullptr &&
      e.config.num_blocks != profile->config.num_blocks) {
    warnings.push_back("engine.num_blocks: type: sim backends take the profile's KV size");
  }
  if (o.engine_urls.empty() && profile != nullptr &&
      (e.config.max_num_batched_tokens != profile->config.max_num_batched_tokens ||
       e.config.block_size != profile->config.block_size)) {
    warnings.push_back(
        "engine.max_num_batched_tokens, block_size: type: sim backends take the profile's");
  }
  // Pools follow the scenario's engines: URLs in another number cannot be
  // split the same way, and then serve every class as one pool.
  const bool pools = !s.pools.empty() && (o.engine_urls.empty() || o.engine_urls.size() == e.count);
  if (!s.pools.empty() && !pools) {
    warnings.push_back("pools: " + std::to_string(o.engine_urls.size()) + " engine URLs for " +
                       std::to_string(e.count) + " engines; the URLs serve every class as one pool");
  }
  if (e.max_waiting != 0) {
    warnings.push_back(
        "engine.max_waiting: the gateway treats any waiting request as saturation (0)");
  }
  // Adaptive capacity runs the same controller live (gateway/backend_capacity.hpp)
  // as in virtual mode, which runs it only with engine signals.
  sched::AdaptiveCapacityConfig adaptive = e.adaptive;
  if (adaptive.enabled && !e.signals) {
    warnings.push_back("engine.adaptive_capacity: off without engine signals, as in virtual mode");
    adaptive.enabled = false;
  }
  if (s.degradation.enabled && o.policy == "hybrid" && !e.signals) {
    warnings.push_back("degradation: no stage without engine signals (its load comes from them)");
  }
  overload::DegradationConfig degradation = s.degradation;
  // As in virtual mode: hybrid degrades (by the scenario's section), the
  // baselines and hybrid-no-degradation do not.
  degradation.enabled = s.degradation.enabled && o.policy == "hybrid";
  if (e.variant_count > 0 && !o.engine_urls.empty()) {
    warnings.push_back("engine.variant: the engine URLs are the model's; its degraded variant is not written");
  }
  // The scenario's scheduler settings under the policy asked for.
  sched::SchedulerTunables scheduler = s.scheduler;
  if (auto policy = sched::policy_from_string(o.policy)) scheduler.policy = *policy;
  std::ostringstream out;
  out << "# arbiter gateway config for arbiter-bench scenario '" << s.name << "'.\n"
      << "# Written by: " << o.command << "\n"
      << "# Tenants authenticate with sk-bench-<tenant> (docs/arbiter-bench.md); live mode\n"
      << "# claims each request's class with x-arbiter-class.\n";
  for (const std::string& w : warnings) out << "# Not expressed: " << w << "\n";
  out << "listener: {address: 127.0.0.1, port: " << o.port << "}\n";
  // A listener on a free port gets an admin listener (/metrics) on one too:
  // gateways started side by side do not race for its default port.
  if (o.port == 0) out << "admin: {port: 0}\n";
  out << "auth: {enabled: true}\n"
      << "scheduler: {" << write_settings(scheduler_keys(), scheduler, ", ") << "}\n"
      << "engine_signals: {enabled: " << yes_no(e.signals)
      << ", interval_ms: " << static_cast<int64_t>(e.scrape_ms)
      << ", kv_saturation: " << e.kv_threshold << "}\n"
      << "adaptive_capacity: {" << write_settings(adaptive_capacity_keys(), adaptive, ", ") << "}\n"
      << "log: {access_log: false}\n"
      << "degradation: {" << write_settings(degradation_keys(), degradation, ", ") << "}\n"
      << "tenants:\n";
  // Each tenant lists every class: live mode claims the class of each
  // request, and a class that outranks the default is claimable only when
  // listed.
  std::string classes;
  for (const std::string& name : scheduler_class_names(s)) classes += (classes.empty() ? "" : ", ") + name;
  for (const TenantSpec& t : s.tenants) {
    out << "  - {name: " << t.name << ", weight: " << t.weight;
    if (t.max_running > 0) out << ", max_running: " << t.max_running;
    if (t.max_share > 0) out << ", max_share: " << t.max_share;
    out << ", api_keys: [" << tenant_api_key(t.name) << "], allowed_classes: [" << classes << "]}\n";
  }
  out << "classes:\n";
  for (const ClassSpec& c : s.classes) {
    if (!c.scheduler_class.empty()) continue;  // a stream of a class listed before
    out << "  - {name: " << c.name << ", " << write_class_policy(c.policy, ", ") << "}\n";
  }
  out << "models:\n  - name: " << o.model << "\n    backends:\n";
  const bool custom_seqs =
      profile != nullptr && e.config.max_num_seqs != profile->config.max_num_seqs;
  for (std::size_t i = 0; i < (o.engine_urls.empty() ? e.count : o.engine_urls.size()); ++i) {
    out << "      - {";
    if (o.engine_urls.empty()) {
      out << "type: sim, profile: " << e.profile;
      if (custom_seqs) out << ", max_num_seqs: " << e.config.max_num_seqs;
    } else {
      // The engines behind the URLs are the scenario's: their profile's prefill rate.
      out << "url: " << o.engine_urls[i]
          << ", prefill_tokens_per_s: " << engine::prefill_tokens_per_s(e.config);
    }
    // The scenario's per-class pools: its engines name their classes.
    if (pools) {
      const PoolLayout layout = pool_layout(s);
      const PoolGroup& group = s.pools[layout.pool_of_engine(i)];
      if (!group.classes.empty()) {
        out << ", classes: [";
        for (std::size_t k = 0; k < group.classes.size(); ++k) out << (k ? ", " : "") << group.classes[k];
        out << "]";
      }
      if (group.lend) out << ", lend: true";
    }
    // LoRA: the adapters this engine serves, as the virtual run places them.
    if (s.lora.adapters > 0) {
      const PoolLayout layout = pool_layout(s);
      const uint32_t pool = layout.pool_of_engine(i);
      out << ", max_loras: " << e.config.max_loras << ", adapters: [";
      const char* sep = "";
      for (uint32_t a = 1; a <= s.lora.adapters; ++a) {
        if (!serves_adapter(s.lora, i - layout.first[pool], layout.count[pool], static_cast<uint16_t>(a))) continue;
        out << sep << o.model << "-lora-" << a;
        sep = ", ";
      }
      out << "]";
    }
    // The index the virtual run sizes from the engines' KV cache (0: off).
    out << ", max_concurrency: " << e.max_concurrency
        << ", priority_scheduling: " << yes_no(e.priority_scheduling) << ", prefix_cache_tokens: "
        << (e.prefix_affinity ? engine::kv_cache_tokens(e.config) : 0) << "}\n";
  }
  // The degraded variant: a model of its own on its own engines, which the
  // first model names as `degraded` (staged degradation's high stage and the
  // model breaker send work there). Sim engines only: the URLs are the model's.
  if (e.variant_count > 0 && o.engine_urls.empty()) {
    out << "    degraded: " << o.model << "-variant\n"
        << "  - name: " << o.model << "-variant\n    backends:\n";
    for (uint32_t i = 0; i < e.variant_count; ++i) {
      out << "      - {type: sim, profile: " << e.variant_profile << ", max_concurrency: " << e.max_concurrency
          << ", priority_scheduling: " << yes_no(e.priority_scheduling) << ", prefix_cache_tokens: "
          << (e.prefix_affinity ? engine::kv_cache_tokens(e.variant_config) : 0) << "}\n";
    }
  }
  return out.str();
}

}  // namespace arbiter::bench
