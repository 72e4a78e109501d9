// Fault settings: the admin API's JSON and the deterministic draws.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "sim/faults.hpp"

namespace arbiter::sim {
namespace {

TEST(SimFaults, JsonUpdatesOnlyTheFieldsGiven) {
  Faults f;
  f.hang_rate = 0.5;
  ASSERT_TRUE(apply_faults_json(f, R"({"error_rate":0.1,"error_status":429,"kv_blocks":64})"));
  EXPECT_EQ(f.error_rate, 0.1);
  EXPECT_EQ(f.error_status, 429);
  EXPECT_EQ(f.kv_blocks, 64u);
  EXPECT_EQ(f.hang_rate, 0.5);  // untouched

  const auto doc = boost::json::parse(faults_json(f)).as_object();
  EXPECT_EQ(doc.at("error_rate").as_double(), 0.1);
  EXPECT_EQ(doc.at("error_status").as_int64(), 429);
  EXPECT_EQ(doc.at("hang_rate").as_double(), 0.5);
  EXPECT_EQ(doc.at("kv_blocks").to_number<std::uint64_t>(), 64u);
  EXPECT_EQ(doc.size(), 8u);
}

TEST(SimFaults, InvalidJsonLeavesFaultsUnchanged) {
  Faults f;
  const std::vector<std::pair<std::string_view, std::string_view>> cases = {
      {"[1]", "JSON object"},
      {R"({"error_rate":2})", "error_rate must be within [0, 1]"},
      {R"({"error_rate":"x"})", "'error_rate' must be a number"},
      {R"({"error_status":404})", "error_status must be 429, 500 or 503"},
      {R"({"kv_blocks":-1})", "'kv_blocks' must be a non-negative integer"},
      {R"({"oops":1})", "unknown fault 'oops'"},
      {R"({"error_rate":0.5,"oops":1})", "unknown fault"},
  };
  for (const auto& [body, message] : cases) {
    const auto r = apply_faults_json(f, body);
    ASSERT_FALSE(r) << body;
    EXPECT_NE(r.error().find(message), std::string::npos) << r.error();
    EXPECT_EQ(f.error_rate, 0.0);
  }
}

TEST(SimFaults, DrawsAreDeterministicAndNearTheRate) {
  int hits = 0;
  for (std::uint64_t n = 0; n < 10'000; ++n) {
    const bool hit = fault_hits(0.1, 7, 0, FaultKind::kError, n);
    EXPECT_EQ(hit, fault_hits(0.1, 7, 0, FaultKind::kError, n));
    hits += hit;
  }
  EXPECT_NEAR(hits, 1'000, 150);
  EXPECT_FALSE(fault_hits(0, 7, 0, FaultKind::kError, 1));
  EXPECT_TRUE(fault_hits(1, 7, 0, FaultKind::kError, 1));
  // Other seeds, engines and kinds draw differently.
  int same_seed = 0, same_engine = 0, same_kind = 0;
  for (std::uint64_t n = 0; n < 1'000; ++n) {
    const bool a = fault_hits(0.5, 7, 0, FaultKind::kError, n);
    same_seed += a == fault_hits(0.5, 8, 0, FaultKind::kError, n);
    same_engine += a == fault_hits(0.5, 7, 1, FaultKind::kError, n);
    same_kind += a == fault_hits(0.5, 7, 0, FaultKind::kHang, n);
  }
  EXPECT_LT(same_seed, 650);
  EXPECT_LT(same_engine, 650);
  EXPECT_LT(same_kind, 650);
}

}  // namespace
}  // namespace arbiter::sim
