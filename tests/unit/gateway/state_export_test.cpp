// export_scheduler_state: what /metrics shows of the scheduler. A tenant
// queue that empties drops out of the scheduler's list; its gauge must go
// back to 0 rather than keep its last depth (bench/soak.sh found it stuck).
#include "gateway/admin/state_export.hpp"

#include <gtest/gtest.h>

#include "../core/scheduler_test_util.hpp"
#include "core/tenants.hpp"

namespace arbiter {
namespace {

using sched::testing::at_ms;

TEST(StateExport, AnEmptiedTenantQueueShowsZeroNotItsLastDepth) {
  // One pool of one backend with one slot, one class; tenant 7 is not in the
  // config (the anonymous label).
  sched::testing::Harness h(sched::testing::one_pool({sched::testing::named("chat")}, {1}));
  Config config;
  config.classes.push_back(ClassConfig{.name = "chat"});
  config.models.push_back(ModelConfig{.name = "m", .backends = {BackendConfig{.name = "b0"}}});
  const std::unordered_map<std::string, std::vector<std::size_t>> pools{{"m", {0}}};
  GatewayMetrics metrics;
  ShownTenantQueues shown;
  auto depth = [&] { return metrics.tenant_queue_depth.with({"m", "chat", kAnonymousTenant}).value(); };

  h.add(1, 0, 7, 100, at_ms(0));
  h.add(2, 0, 7, 100, at_ms(0));
  h.add(3, 0, 7, 100, at_ms(0));
  ASSERT_EQ(h.poll(at_ms(1)).size(), 1u);
  export_scheduler_state(h.scheduler(), config, pools, metrics, shown);
  EXPECT_EQ(depth(), 2);

  // Without a scrape in between, the queue drains and its last request
  // ends: the scheduler frees the queue and lists it no more.
  for (uint64_t user = 1; user <= 3; ++user) {
    h.complete(user, at_ms(2 * user));
    h.poll(at_ms(2 * user + 1));
  }
  ASSERT_TRUE(h.scheduler().tenant_queue_depths().empty());
  export_scheduler_state(h.scheduler(), config, pools, metrics, shown);
  EXPECT_EQ(depth(), 0);
}

}  // namespace
}  // namespace arbiter
