#include "gateway/observers/tracing/tracing_config_section.hpp"

#include <boost/url/parse.hpp>

#include "yaml/setting_rows.hpp"

namespace arbiter {
namespace {

using namespace setting_rows;

constexpr SettingKey<TracingConfig> kTracingKeys[] = {
    {"endpoint", "an http:// URL of an OTLP/HTTP traces receiver (empty: off)",
     read_text<TracingConfig, &TracingConfig::endpoint>, write_text_if_set<TracingConfig, &TracingConfig::endpoint>},
    {"sample", "a share in [0, 1]", read_number<TracingConfig, &TracingConfig::sample, 0.0, 1.0>,
     write_number<TracingConfig, &TracingConfig::sample>},
    {"service_name", "a name", read_text<TracingConfig, &TracingConfig::service_name>,
     write_text<TracingConfig, &TracingConfig::service_name>},
    {"flush_ms", "milliseconds in [10, 60000]", read_ms<TracingConfig, &TracingConfig::flush, 10, 60'000>,
     write_ms<TracingConfig, &TracingConfig::flush>},
    {"max_queued_spans", "an integer in [100, 10000000]",
     read_integer<TracingConfig, &TracingConfig::max_queued_spans, 100, 10'000'000>,
     write_integer<TracingConfig, &TracingConfig::max_queued_spans>},
};

void check_tracing(YamlReader& r, std::string_view section, const Config& c) {
  const std::string& endpoint = c.tracing.endpoint;
  if (endpoint.empty()) return;
  auto url = boost::urls::parse_absolute_uri(endpoint);
  if (!url || url->scheme() != "http" || url->host().empty()) {
    r.error(std::string(section) + ".endpoint", "must be an http:// URL, e.g. http://127.0.0.1:4318/v1/traces");
  }
  if (c.tracing.service_name.empty()) r.error(std::string(section) + ".service_name", "must not be empty");
}

}  // namespace

std::span<const SettingKey<TracingConfig>> tracing_keys() { return kTracingKeys; }

ConfigSection tracing_section() {
  return flat_section<TracingConfig, &Config::tracing, tracing_keys, check_tracing>("tracing");
}

}  // namespace arbiter
