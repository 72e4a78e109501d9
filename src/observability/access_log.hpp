// One structured JSON line per request. Never contains an API key: the
// tenant name is logged, not the credential. The line is formatted into a
// caller's reused buffer (no allocation once it has grown to a line's size)
// and handed to a BatchedLineWriter (observability/batched_line_writer.hpp),
// which writes it off the request path.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace arbiter {

struct AccessRecord {
  std::chrono::system_clock::time_point ts;  // when the request arrived
  std::string request_id;
  std::string tenant;
  std::string team;      // the tenant's team (cost allocation)
  std::string cls;       // request class
  std::string model;
  std::string backend;   // empty when none was chosen
  std::string route;     // request path
  int status = 0;        // as answered; 499 when the client went away
  bool stream = false;
  std::size_t bytes_in = 0;
  std::size_t bytes_out = 0;
  double queue_ms = 0;     // waiting for a backend (all runs when preempted)
  std::string_view wait_reason;  // why it waited (first dispatch, or its 503); empty: it did not
  uint32_t preemptions = 0;  // times preempted and resumed
  int64_t prompt_tokens = -1;      // as billed (RequestContext::billed); -1 when nothing is
  int64_t completion_tokens = -1;  // likewise
  // Where the billed tokens come from: "engine" (its usage), "events" (a
  // stream's events counted, the prompt estimated), "estimate" (a whole
  // answer without usage: the admission estimates). A fixed name.
  std::string_view tokens_from;
  int64_t cached_tokens = 0;       // of prompt_tokens, served from the engine's prefix cache
  double engine_ms = -1;   // time it held an engine (all runs); -1 if never dispatched
  double cost = -1;        // at its model's prices (docs/usage.md); -1 when unpriced or never dispatched
  double upstream_ms = -1; // upstream response header latency; -1 if none
  double ttfb_ms = -1;     // first body byte to the client; -1 if none
  double duration_ms = 0;
  std::string error;       // gateway-side error code, if any
  // What staged degradation changed: "<stage>/<action>", a comma list
  // ("high/cap, high/variant"); empty: nothing.
  std::string degraded;
  // The result cache's part: "hit", "near", "miss" or "coalesced"; empty
  // when the request was not one the cache takes. One of fixed names.
  std::string_view cache;
  // The version (hash) of the config the request ran under: replicas that
  // drifted apart show. Hex digits; empty: not known.
  std::string_view config;
};

// Appends the record's line, '\n' included, to `out`. `ts` is UTC, to the
// second ("2026-01-31T23:59:59Z"); strings are escaped as Boost.JSON's
// serializer escapes them.
void append_access_line(const AccessRecord& r, fmt::memory_buffer& out);

}  // namespace arbiter
