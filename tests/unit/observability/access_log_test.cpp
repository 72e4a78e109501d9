// The access-log line: the tenant's team always; cached tokens with the
// engine's usage; engine time and cost only for requests that reached an
// engine (cost: of a priced model). The hand-written line is byte for byte
// what the fmt + Boost.JSON formatting it replaced wrote, with `ts` in UTC.
#include "observability/access_log.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <ctime>
#include <limits>
#include <vector>

#include <boost/json.hpp>
#include <fmt/chrono.h>

namespace arbiter {
namespace {

using namespace std::chrono;

std::string text_of(const AccessRecord& r) {
  fmt::memory_buffer out;
  append_access_line(r, out);
  return fmt::to_string(out);
}

boost::json::object line(const AccessRecord& r) {
  const std::string text = text_of(r);
  EXPECT_TRUE(text.ends_with("}\n"));
  return boost::json::parse(text).as_object();
}

// The formatting before it was hand-written (fmt and boost::json::serialize),
// `ts` taken as UTC.
std::string reference_line(const AccessRecord& r) {
  const auto quoted = [](std::string_view v) { return boost::json::serialize(boost::json::string_view(v)); };
  std::string line;
  auto out = std::back_inserter(line);
  fmt::format_to(out,
                 R"({{"ts":"{:%FT%T}Z","request_id":{},"tenant":{},"team":{},"class":{},"model":{},)"
                 R"("backend":{},"route":{},"status":{},"stream":{},"bytes_in":{},"bytes_out":{},)"
                 R"("queue_ms":{:.3f})",
                 fmt::gmtime(system_clock::to_time_t(r.ts)), quoted(r.request_id), quoted(r.tenant),
                 quoted(r.team), quoted(r.cls), quoted(r.model), quoted(r.backend), quoted(r.route), r.status,
                 r.stream, r.bytes_in, r.bytes_out, r.queue_ms);
  if (!r.wait_reason.empty()) fmt::format_to(out, R"(,"wait_reason":"{}")", r.wait_reason);
  if (r.upstream_ms >= 0) fmt::format_to(out, R"(,"upstream_ms":{:.3f})", r.upstream_ms);
  if (r.ttfb_ms >= 0) fmt::format_to(out, R"(,"ttfb_ms":{:.3f})", r.ttfb_ms);
  if (r.preemptions > 0) fmt::format_to(out, R"(,"preemptions":{})", r.preemptions);
  if (r.prompt_tokens >= 0) {
    fmt::format_to(out, R"(,"prompt_tokens":{},"completion_tokens":{},"cached_tokens":{})", r.prompt_tokens,
                   r.completion_tokens, r.cached_tokens);
  }
  if (r.engine_ms >= 0) fmt::format_to(out, R"(,"engine_ms":{:.3f})", r.engine_ms);
  if (r.cost >= 0) fmt::format_to(out, R"(,"cost":{})", r.cost);
  fmt::format_to(out, R"(,"duration_ms":{:.3f})", r.duration_ms);
  if (!r.error.empty()) fmt::format_to(out, R"(,"error":{})", quoted(r.error));
  if (!r.degraded.empty()) fmt::format_to(out, R"(,"degraded":{})", quoted(r.degraded));
  if (!r.cache.empty()) fmt::format_to(out, R"(,"cache":{})", quoted(r.cache));
  line += "}\n";
  return line;
}

TEST(AccessLog, ARequestThatRanCarriesItsTeamTokensEngineTimeAndCost) {
  const AccessRecord r{.tenant = "alpha", .team = "ml", .prompt_tokens = 40, .completion_tokens = 9,
                       .cached_tokens = 32, .engine_ms = 12.5, .cost = 1.25e-5};
  const auto o = line(r);
  EXPECT_EQ(o.at("tenant"), "alpha");
  EXPECT_EQ(o.at("team"), "ml");
  EXPECT_EQ(o.at("prompt_tokens"), 40);
  EXPECT_EQ(o.at("completion_tokens"), 9);
  EXPECT_EQ(o.at("cached_tokens"), 32);
  EXPECT_DOUBLE_EQ(o.at("engine_ms").to_number<double>(), 12.5);
  EXPECT_EQ(o.at("cost").to_number<double>(), 1.25e-5);  // exactly: the shortest text that reads back
}

TEST(AccessLog, ARefusedRequestHasNoTokensEngineTimeOrCost) {
  const AccessRecord r{.tenant = "beta", .team = "web", .status = 429};
  const auto o = line(r);
  EXPECT_EQ(o.at("team"), "web");
  for (const char* key : {"prompt_tokens", "completion_tokens", "cached_tokens", "engine_ms", "cost"}) {
    EXPECT_FALSE(o.contains(key)) << key;
  }
}

TEST(AccessLog, WhatStagedDegradationChangedIsItsOwnFieldAndOnlyWhenItDid) {
  EXPECT_FALSE(line(AccessRecord{.status = 200}).contains("degraded"));
  const auto o = line(AccessRecord{.status = 429, .degraded = "shedding/shed"});
  EXPECT_EQ(o.at("degraded"), "shedding/shed");
}

TEST(AccessLog, TheResultCachesPartIsItsOwnFieldAndOnlyWhenItTookPart) {
  EXPECT_FALSE(line(AccessRecord{.status = 200}).contains("cache"));
  EXPECT_EQ(line(AccessRecord{.status = 200, .cache = "hit"}).at("cache"), "hit");
}

TEST(AccessLog, AnUnpricedModelHasEngineTimeButNoCost) {
  const AccessRecord r{.engine_ms = 3, .cost = -1};
  const auto o = line(r);
  EXPECT_TRUE(o.contains("engine_ms"));
  EXPECT_FALSE(o.contains("cost"));
}

TEST(AccessLog, TheLineIsTheFormatItReplacedByteForByte) {
  std::string every_byte;
  for (int c = 1; c < 256; ++c) every_byte.push_back(static_cast<char>(c));
  const auto ts = sys_days{2026y / 3 / 7} + 4h + 5min + 6s + 789ms;
  const AccessRecord records[] = {
      {.ts = ts, .request_id = "r-1", .tenant = "alpha", .team = "ml", .cls = "chat", .model = "m1",
       .backend = "b1", .route = "/v1/chat/completions", .status = 200, .stream = true, .bytes_in = 1024,
       .bytes_out = 987654321, .queue_ms = 0.0004, .wait_reason = "capacity", .preemptions = 2,
       .prompt_tokens = 40, .completion_tokens = 9, .cached_tokens = 32, .engine_ms = 12.3456, .cost = 1e6,
       .upstream_ms = 1.0005, .ttfb_ms = 2.25, .duration_ms = 99999.9999, .degraded = "high/cap, high/variant", .cache = "near"},
      {.ts = ts, .request_id = every_byte, .tenant = "t\"e\\n", .status = 503, .cost = 0.1 + 0.2,
       .error = "shutting_down \"now\"\n"},
      {.ts = system_clock::time_point{}, .status = 499},
  };
  for (const AccessRecord& r : records) EXPECT_EQ(text_of(r), reference_line(r));
}

// Clean strings are copied 8 bytes at a time, checked a word at a time: a
// byte to escape is found at any position of a string of any length, and
// bytes from 0x80 up (UTF-8) pass as they are.
TEST(AccessLog, AByteToEscapeIsFoundWhereverItSits) {
  for (std::size_t n = 0; n <= 40; ++n) {
    const std::string clean(n, 'x');
    const AccessRecord plain{.tenant = clean};
    ASSERT_EQ(text_of(plain), reference_line(plain)) << n;
    for (std::size_t at = 0; at < n; ++at) {
      for (const char c : {'"', '\\', '\n', '\x01', '\x1f', '\x20', '\x7f', '\x80', '\xc3', '\xff'}) {
        std::string text = clean;
        text[at] = c;
        const AccessRecord r{.request_id = text, .model = text};
        ASSERT_EQ(text_of(r), reference_line(r)) << n << " " << at << " " << int{static_cast<unsigned char>(c)};
      }
    }
  }
}

// The timestamp's text is kept per thread for the last second formatted:
// every line still shows its own second, across minute, day and year ends,
// back in time (a clock stepped back) and from one line to the next.
TEST(AccessLog, EachLineShowsItsOwnSecondThroughTheCachedTimestamp) {
  const auto new_year = sys_days{2027y / 1 / 1};
  const system_clock::time_point times[] = {
      new_year - 2s + 999ms, new_year - 1s, new_year - 1s + 999ms, new_year, new_year + 1ms,
      new_year - 1s + 500ms,  // back across the year's end
      new_year + 59s + 999ms, new_year + 1min, new_year + 24h - 1ns, new_year + 24h,
      sys_days{2026y / 2 / 28} + 23h + 59min + 59s, sys_days{2026y / 3 / 1},
      system_clock::time_point{}, system_clock::time_point{} - 1s,  // 1969-12-31T23:59:59
      new_year + 1ms,
  };
  for (const auto ts : times) {
    const AccessRecord r{.ts = ts};
    ASSERT_EQ(text_of(r), reference_line(r)) << ts.time_since_epoch().count();
  }
}

// Milliseconds are written to 3 decimals by hand: the same digits as fmt's
// "{:.3f}" (the exact value, ties to even) over the range and at the ties.
TEST(AccessLog, MillisecondsHaveFmtsDigitsEverywhere) {
  std::vector<double> values = {0, 0.0005, 0.0625, 0.1875, 1.0005, 2.5, 999.9995, 1e12 - 1, 1e12, 4.5e15, -0.0, -1.5,
                                std::numeric_limits<double>::denorm_min(), 1e-300, 0x1p-11, 0x1p-12, 0x1.0000000000001p-11,
                                std::nextafter(1e12, 0.0), 0x1p39 + 0.0005};
  for (int k = 0; k < 4096; ++k) values.push_back(k / 16.0 + 1.0 / 2048);  // halves of a thousandth, exactly
  uint64_t x = 88172645463325252u;  // xorshift: values across magnitudes
  for (int i = 0; i < 20000; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    values.push_back(static_cast<double>(x % 1'000'000'000) / std::pow(10.0, static_cast<double>(x % 13)));
  }
  for (const double v : values) {
    const AccessRecord r{.queue_ms = v, .duration_ms = v * 3};
    ASSERT_EQ(text_of(r), reference_line(r)) << v;
  }
}

// The defect it fixes: `ts` carries a Z, but fmt wrote local time.
TEST(AccessLog, TimestampIsUtcWhateverTheLocalZone) {
  const char* before = std::getenv("TZ");
  const std::string saved = before ? before : "";
  ::setenv("TZ", "JST-9", 1);  // UTC+9, without tzdata
  ::tzset();
  const AccessRecord r{.ts = sys_days{2026y / 1 / 31} + 23h + 59min + 59s + 999ms};
  const std::string ts(line(r).at("ts").as_string());
  if (before) {
    ::setenv("TZ", saved.c_str(), 1);
  } else {
    ::unsetenv("TZ");
  }
  ::tzset();
  EXPECT_EQ(ts, "2026-01-31T23:59:59Z");
}

}  // namespace
}  // namespace arbiter
