// Copies what the scheduler and the backend monitor know into the metrics
// registry when /metrics is scraped: gauges (queue depths, slots in
// flight, backend verdicts) and the scheduler's event counters. Cheap, and
// off the request path.
#pragma once

#include <array>

#include <string>
#include <unordered_map>
#include <vector>

#include "core/config.hpp"
#include "core/scheduler.hpp"
#include "gateway/backend_monitor.hpp"
#include "gateway/gateway_metrics.hpp"

namespace arbiter {

// The tenant queue gauges the last export set: the scheduler lists only the
// tenant queues it holds, and one that empties drops out, so the next export
// sets its gauge back to 0 rather than leaving its last depth. Kept by the
// caller, used under the scheduler's lock.
using ShownTenantQueues = std::vector<metrics::Gauge*>;

// `pool_index`: model name -> its pools (a model with per-class pools sums
// them per class).
void export_scheduler_state(const sched::Scheduler& scheduler, const Config& config,
                            const std::unordered_map<std::string, std::vector<std::size_t>>& pool_index,
                            GatewayMetrics& metrics, ShownTenantQueues& shown);
// A monitor's counters as last exported, per backend (its snapshot order).
using ExportedMonitorCounts = std::vector<std::array<uint64_t, 4>>;
void export_monitor_state(const BackendMonitor& monitor, const Config& config, GatewayMetrics& metrics,
                          ExportedMonitorCounts& exported);

}  // namespace arbiter
