// What a config reload (Gateway::reload) compares between the running
// config and the new one: which settings only a restart applies, which
// models and sections changed, and how the old scheduler's numbers map to
// the new one's.
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/config.hpp"
#include "gateway/dispatch/dispatcher.hpp"

namespace arbiter {

// A config as --print-config writes it (every default filled in), parsed
// once: what the comparisons below read, section by section.
struct PrintedConfig {
  explicit PrintedConfig(const Config& config);
  YAML::Node root;
};

// The key paths (as --check names them) whose values differ and that only
// a restart applies: the listeners, the log, the server's limits and client
// timeouts, the quota store (its connection and the replicas its leases
// are shared by) and the result cache's store. Empty: the new config may be
// applied live (quotas and traffic breakers included: QuotaBook::reconfigure).
std::vector<std::string> restart_only_changes(const PrintedConfig& running, const PrintedConfig& next);

// The models whose settings (backends included) differ, or that are gone:
// their cached answers may no longer be what they would answer.
std::vector<std::string> changed_models(const PrintedConfig& running, const PrintedConfig& next);

// Whether the printed `section` (a top-level key) is the same in both.
bool same_section(const PrintedConfig& running, const PrintedConfig& next, const char* section);

// Pools by their pool name, classes and tenants by name (the anonymous
// tenant to the anonymous tenant), backends by name within a pool.
CarryMap carry_map(const Config& running, const Config& next);

}  // namespace arbiter
