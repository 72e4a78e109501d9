// Which requests the result cache may answer and which answers it may keep
// (docs/cache.md): only repeatable ones by default (temperature 0 or a
// seed, or an embedding; one choice, no log probabilities, no tools unless the class allows
// them), and what the client's `cache-control` header asks: `no-cache` (do
// not answer from the cache, but keep the fresh answer), `no-store`
// (neither) and `max-age=N` (answers up to N seconds old only; it also opts
// a sampled request in: the client accepts a repeated answer).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/request.hpp"

namespace arbiter::cache {

struct CacheDirectives {
  bool no_cache = false;
  bool no_store = false;
  std::optional<int64_t> max_age_s;
};

// `cache-control` as RFC 9111 writes it: comma-separated directives, case
// insensitive, unknown ones ignored; a malformed max-age is ignored.
CacheDirectives read_cache_control(std::string_view value);

struct CacheUse {
  bool lookup = false;  // an answer may come from the cache
  bool store = false;   // the fresh answer may be kept
  // Why neither, for arbiter_cache_requests_total's `result` (the skip kind).
  std::string_view skipped;
};

CacheUse decide_cache_use(const RequestInfo& info, const CacheDirectives& d, bool enabled, bool tools_allowed);

}  // namespace arbiter::cache
