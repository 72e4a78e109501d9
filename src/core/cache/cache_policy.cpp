#include "core/cache/cache_policy.hpp"

#include <charconv>

#include "core/ascii_text.hpp"
#include "core/cache/cache_config.hpp"

namespace arbiter::cache {
std::string_view scope_name(Scope scope) {
  switch (scope) {
    case Scope::kTenant: return "tenant";
    case Scope::kTeam: return "team";
    case Scope::kGlobal: return "global";
  }
  return "tenant";
}

std::optional<Scope> scope_from_name(std::string_view name) {
  for (const Scope s : {Scope::kTenant, Scope::kTeam, Scope::kGlobal}) {
    if (name == scope_name(s)) return s;
  }
  return std::nullopt;
}

CacheDirectives read_cache_control(std::string_view value) {
  CacheDirectives d;
  while (!value.empty()) {
    const std::size_t comma = value.find(',');
    const std::string_view item = trim_ascii(value.substr(0, comma));
    value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
    const std::size_t eq = item.find('=');
    const std::string_view name = trim_ascii(item.substr(0, eq));
    if (iequals_ascii(name, "no-cache")) {
      d.no_cache = true;
    } else if (iequals_ascii(name, "no-store")) {
      d.no_store = true;
    } else if (iequals_ascii(name, "max-age") && eq != std::string_view::npos) {
      std::string_view arg = trim_ascii(item.substr(eq + 1));
      if (arg.size() >= 2 && arg.front() == '"' && arg.back() == '"') arg = arg.substr(1, arg.size() - 2);
      int64_t seconds = 0;
      const auto [end, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), seconds);
      if (ec == std::errc() && end == arg.data() + arg.size() && seconds >= 0) d.max_age_s = seconds;
    }
  }
  return d;
}

CacheUse decide_cache_use(const RequestInfo& info, const CacheDirectives& d, bool enabled, bool tools_allowed) {
  if (!enabled) return {.skipped = "disabled"};
  if (info.route == Route::kResponses) return {.skipped = "route"};  // its answers' shape is not kept (yet)
  if (d.no_store) return {.skipped = "no_store"};
  if (info.choices != 1) return {.skipped = "choices"};
  if (info.logprobs) return {.skipped = "logprobs"};
  if (info.tools && !tools_allowed) return {.skipped = "tools"};
  // An embedding is the same for the same input: nothing is sampled.
  const bool repeatable = info.greedy || info.seeded || info.route == Route::kEmbeddings;
  if (!repeatable && !d.max_age_s) return {.skipped = "sampled"};
  return {.lookup = !d.no_cache, .store = true};
}

}  // namespace arbiter::cache
