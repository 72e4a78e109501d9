// Loads and validates the YAML config. Every problem is reported, each with
// the path of the key it concerns (e.g. "models[0].backends[1].url"), and
// unknown keys are errors so a typo never silently falls back to a default.
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"

namespace arbiter {

// The keys of the list entries read by hand (the flat sections are tables:
// yaml/setting_keys.hpp): a test checks them against docs/configuration.md.
inline constexpr std::string_view kTenantKeys[] = {"name", "team", "weight", "api_keys", "api_key_sha256",
                                                    "allowed_classes", "quotas", "quota_store_down",
                                                    "client_cert_names"};
inline constexpr std::string_view kTeamKeys[] = {"name", "quotas", "dynamic_quota"};
inline constexpr std::string_view kDynamicQuotaKeys[] = {"members", "per_member", "complexity", "limit",
                                                          "recompute_s"};
inline constexpr std::string_view kQuotaKeys[] = {"requests_per_minute", "tokens_per_minute", "tokens_per_day",
                                                   "max_concurrent", "classes", "models"};
inline constexpr std::string_view kModelKeys[] = {"name", "backends", "degraded", "fallback"};
inline constexpr std::string_view kPriceKeys[] = {"model", "input_per_million", "output_per_million",
                                                   "cached_input_per_million", "per_gpu_second"};
inline constexpr std::string_view kBackendKeys[] = {
    "name", "type", "url", "profile", "max_num_seqs", "max_concurrency", "priority_scheduling",
    "continue_final_message", "engine", "prefill_tokens_per_s", "prefix_cache_tokens", "classes", "lend",
    "api_key_env", "api_key_file", "ca_file", "cert_file", "key_file"};

using ConfigErrors = std::vector<std::string>;

std::expected<Config, ConfigErrors> parse_config(std::string_view yaml_text);
std::expected<Config, ConfigErrors> load_config_file(const std::string& path);

}  // namespace arbiter
