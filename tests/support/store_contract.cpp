#include "support/store_contract.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace arbiter::test {

namespace {

using store::AuditView;
using store::RowView;
using store::UsageView;

constexpr int64_t kHour = 3'600'000;
constexpr int64_t kT0 = 1'796'600'000'000 / kHour * kHour;

UsageView usage(int64_t ts, std::string_view tenant) {
  return {.ts_ms = ts, .request_id = "r", .tenant = tenant, .team = "ml", .model = "m1", .klass = "chat",
          .status = 200, .prompt_tokens = 10, .completion_tokens = 5, .cached_tokens = 2, .engine_ms = 1.5,
          .cost = 0.25, .tokens_from = "engine"};
}

AuditView audit(int64_t ts, std::string_view detail) {
  return {.ts_ms = ts, .kind = "dispatched", .request_id = "r", .tenant = "t", .klass = "chat", .model = "m1",
          .detail = detail};
}

}  // namespace

void check_writes_once_keeps_its_place_sums_and_verifies(const StoreUnderTest& store) {
  {
    auto db = store.open("gw-1");
    ASSERT_NE(db, nullptr);
    std::vector<std::pair<uint64_t, RowView>> rows{{1, usage(kT0 + 10, "a")}, {2, audit(kT0 + 10, "one")},
                                                   {3, usage(kT0 + kHour + 5, "a")}, {4, usage(kT0 + 20, "b")}};
    ASSERT_TRUE(db->write(rows));
    ASSERT_TRUE(db->write(rows));  // replayed: ignored, no error
    EXPECT_EQ(db->written(), 4u);
    ASSERT_TRUE(db->write({{5, audit(kT0 + 30, "two")}, {6, audit(kT0 + 40, "three")}}));
  }
  auto db = store.open("gw-1");
  ASSERT_NE(db, nullptr);
  EXPECT_EQ(db->written(), 6u);
  const auto hours = db->hourly_usage_since(kT0);
  ASSERT_TRUE(hours) << hours.error();
  ASSERT_EQ(hours->size(), 3u);  // (hour 0, a), (hour 0, b), (hour 1, a)
  uint64_t requests = 0, tokens = 0;
  double cost = 0;
  for (const store::HourlyUsage& h : *hours) {
    requests += h.requests;
    tokens += h.prompt_tokens + h.completion_tokens;
    cost += h.cost;
    EXPECT_EQ(h.hour_ms % kHour, 0);
  }
  EXPECT_EQ(requests, 3u);
  EXPECT_EQ(tokens, 45u);
  EXPECT_DOUBLE_EQ(cost, 0.75);
  const auto recent = db->recent_audit(2);
  ASSERT_TRUE(recent) << recent.error();
  ASSERT_EQ(recent->size(), 2u);
  EXPECT_EQ((*recent)[0].detail, "three");
  EXPECT_EQ((*recent)[1].detail, "two");
  // The chain goes on after the reopen: three batches, of one, two and one rows.
  ASSERT_TRUE(db->write({{7, audit(kT0 + 50, "four")}}));
  auto verdict = db->verify();
  ASSERT_TRUE(verdict) << verdict.error();
  EXPECT_TRUE(verdict->ok) << verdict->problem;
  EXPECT_EQ(verdict->batches, 3);
  EXPECT_EQ(verdict->rows, 4);
  // The rows as SQL sees them (the audit view over the batches).
  ASSERT_EQ(db->recent_audit(10).value().size(), 4u);
  // An edited row is found, in its batch.
  store.edit("UPDATE audit_batches SET rows = replace(rows, '\"two\"', '\"forged\"') WHERE batch = 2");
  verdict = db->verify();
  ASSERT_TRUE(verdict) << verdict.error();
  EXPECT_FALSE(verdict->ok);
  EXPECT_NE(verdict->problem.find("batch 2"), std::string::npos) << verdict->problem;
  store.edit("UPDATE audit_batches SET rows = replace(rows, '\"forged\"', '\"two\"') WHERE batch = 2");
  ASSERT_TRUE(db->verify().value().ok);
  // A row removed is found too.
  const std::string six = ",[6," + std::to_string(kT0 + 40) + ",\"dispatched\",\"r\",\"t\",\"chat\",\"m1\",\"three\"]";
  store.edit("UPDATE audit_batches SET rows = replace(rows, '" + six + "', '') WHERE batch = 2");
  verdict = db->verify();
  ASSERT_TRUE(verdict) << verdict.error();
  EXPECT_FALSE(verdict->ok);
  EXPECT_NE(verdict->problem.find("holds 1 rows"), std::string::npos) << verdict->problem;
  // And rows that are no longer an array of rows.
  store.edit("UPDATE audit_batches SET rows = 'gone' WHERE batch = 3");
  verdict = db->verify();
  ASSERT_TRUE(verdict) << verdict.error();
  EXPECT_FALSE(verdict->ok);
}

void check_retention_cuts_a_prefix_that_leaves_the_trail_verifiable(const StoreUnderTest& store) {
  auto db = store.open("gw-1");
  ASSERT_NE(db, nullptr);
  uint64_t seq = 0;
  for (int day = 0; day < 5; ++day) {
    const int64_t ts = kT0 + day * 24 * kHour;
    ++seq;
    const uint64_t a = seq;
    ++seq;
    ASSERT_TRUE(db->write({{a, usage(ts, "a")}, {seq, audit(ts, "day")}}));
  }
  ASSERT_TRUE(db->prune(kT0 + 2 * 24 * kHour));  // days 0 and 1 go
  const auto hours = db->hourly_usage_since(0);
  ASSERT_TRUE(hours) << hours.error();
  EXPECT_EQ(hours->size(), 3u);
  const auto verdict = db->verify();
  ASSERT_TRUE(verdict) << verdict.error();
  EXPECT_TRUE(verdict->ok) << verdict->problem;
  EXPECT_EQ(verdict->batches, 3);
  EXPECT_EQ(verdict->rows, 3);
}

void check_a_large_batch_is_stored_row_for_row(const StoreUnderTest& store) {
  // Row i: tenant "t<i>", i prompt tokens, 2i completion, i % 3 cached, cost
  // i / 4, in hour i % 2: each row's sums tell whether it landed whole and
  // as itself (a store may write many rows at once; 37 is not a multiple of
  // any chunk size a store would pick). An audit row after every eighth.
  std::vector<std::string> tenants, details;  // built before any view of them is taken
  for (int i = 0; i < 40; ++i) {
    tenants.push_back(std::string("t").append(std::to_string(i)));
    details.push_back(std::string("after ").append(std::to_string(i)));
  }
  auto row = [&](int i) {
    UsageView u = usage(kT0 + (i % 2) * kHour + i, tenants[static_cast<std::size_t>(i)]);
    u.prompt_tokens = i;
    u.completion_tokens = 2 * i;
    u.cached_tokens = i % 3;
    u.cost = i / 4.0;
    return u;
  };
  std::vector<std::pair<uint64_t, RowView>> rows;
  uint64_t seq = 0;
  auto add = [&](int first, int last) {
    for (int i = first; i < last; ++i) {
      rows.emplace_back(++seq, row(i));
      if (i % 8 == 7) rows.emplace_back(++seq, audit(kT0 + i, details[static_cast<std::size_t>(i)]));
    }
  };
  auto db = store.open("gw-1");
  ASSERT_NE(db, nullptr);
  add(0, 37);
  ASSERT_TRUE(db->write(rows));
  add(37, 40);  // the same batch again with a new tail: only the tail is new
  ASSERT_TRUE(db->write(rows));
  EXPECT_EQ(db->written(), seq);
  const auto hours = db->hourly_usage_since(0);
  ASSERT_TRUE(hours) << hours.error();
  ASSERT_EQ(hours->size(), 40u);  // (hour, tenant): one each
  for (const store::HourlyUsage& h : *hours) {
    const int i = std::stoi(h.tenant.substr(1));
    EXPECT_EQ(h.hour_ms, kT0 + (i % 2) * kHour) << h.tenant;
    EXPECT_EQ(h.requests, 1u) << h.tenant;
    EXPECT_EQ(h.prompt_tokens, static_cast<uint64_t>(i)) << h.tenant;
    EXPECT_EQ(h.completion_tokens, static_cast<uint64_t>(2 * i)) << h.tenant;
    EXPECT_EQ(h.cached_tokens, static_cast<uint64_t>(i % 3)) << h.tenant;
    EXPECT_DOUBLE_EQ(h.cost, i / 4.0) << h.tenant;
    EXPECT_EQ(h.team, "ml");
    EXPECT_EQ(h.model, "m1");
    EXPECT_EQ(h.klass, "chat");
  }
  const auto verdict = db->verify();
  ASSERT_TRUE(verdict) << verdict.error();
  EXPECT_TRUE(verdict->ok) << verdict->problem;
  EXPECT_EQ(verdict->rows, 5);  // after 7, 15, 23, 31 and 39
}

}  // namespace arbiter::test
