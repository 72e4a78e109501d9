// arbiter-sim's flags: defaults, every flag's effect and clear errors.
#include <gtest/gtest.h>

#include <string_view>
#include <vector>

#include "sim/sim_flags.hpp"

namespace arbiter::sim {
namespace {

std::expected<SimFlags, std::string> parse(std::vector<std::string_view> args) {
  return parse_sim_flags(args);
}

TEST(SimFlags, Defaults) {
  const auto f = parse({});
  ASSERT_TRUE(f) << f.error();
  EXPECT_EQ(f->options.port, 8000);
  EXPECT_EQ(f->options.engines, 1u);
  EXPECT_EQ(f->options.profile, "tiny");
  EXPECT_EQ(served_model(f->options), "tiny");
  EXPECT_EQ(f->threads, 1u);
  EXPECT_TRUE(f->port_file.empty());
  EXPECT_FALSE(f->options.policy.has_value());
}

TEST(SimFlags, EveryFlagSetsItsField) {
  const auto f = parse({"--port", "0", "--engines", "4", "--profile", "llama-8b-a100", "--model", "m1",
                        "--max-num-seqs=32", "--num-blocks", "1000", "--block-size", "32",
                        "--max-num-batched-tokens", "512", "--max-model-len", "4096", "--seed", "42",
                        "--scheduling-policy", "priority", "--step-time-scale", "0.5", "--output-mean-tokens",
                        "10", "--threads", "2", "--drain-s", "0.5", "--port-file", "/tmp/p", "--error-rate", "0.25",
                        "--error-status", "429", "--added-latency-ms", "50", "--hang-rate", "0.5",
                        "--crash-after-tokens", "3", "--crash-rate", "0.75", "--slow-start-s", "1.5",
                        "--kv-blocks", "100"});
  ASSERT_TRUE(f) << f.error();
  const SimOptions& o = f->options;
  EXPECT_EQ(o.port, 0);
  EXPECT_EQ(o.engines, 4u);
  EXPECT_EQ(o.profile, "llama-8b-a100");
  EXPECT_EQ(served_model(o), "m1");
  EXPECT_EQ(o.max_num_seqs, 32u);
  EXPECT_EQ(o.num_blocks, 1000u);
  EXPECT_EQ(o.block_size, 32u);
  EXPECT_EQ(o.max_num_batched_tokens, 512u);
  EXPECT_EQ(o.max_model_len, 4096u);
  EXPECT_EQ(o.seed, 42u);
  EXPECT_EQ(o.policy, engine::SchedulingPolicy::kPriority);
  EXPECT_EQ(o.step_time_scale, 0.5);
  EXPECT_EQ(o.output_mean_tokens, 10u);
  EXPECT_EQ(f->threads, 2u);
  EXPECT_EQ(f->drain_s, 0.5);
  EXPECT_EQ(f->port_file, "/tmp/p");
  EXPECT_EQ(o.faults.error_rate, 0.25);
  EXPECT_EQ(o.faults.error_status, 429);
  EXPECT_EQ(o.faults.added_latency_ms, 50u);
  EXPECT_EQ(o.faults.hang_rate, 0.5);
  EXPECT_EQ(o.faults.crash_after_tokens, 3u);
  EXPECT_EQ(o.faults.crash_rate, 0.75);
  EXPECT_EQ(o.faults.slow_start_s, 1.5);
  EXPECT_EQ(o.faults.kv_blocks, 100u);

  const auto c = resolve_engine_config(o);
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->max_num_seqs, 32u);
  EXPECT_EQ(c->num_blocks, 1000u);
  EXPECT_EQ(c->block_size, 32u);
  EXPECT_DOUBLE_EQ(c->cost.base_s, 11.2e-3 * 0.5);
}

TEST(SimFlags, HelpAndListProfilesNeedNothingElse) {
  EXPECT_TRUE(parse({"--help"})->help);
  EXPECT_TRUE(parse({"--list-profiles"})->list_profiles);
}

TEST(SimFlags, BadFlagsSayWhatIsWrong) {
  const std::vector<std::pair<std::vector<std::string_view>, std::string_view>> cases = {
      {{"--bogus"}, "unknown flag '--bogus'"},
      {{"--port"}, "--port needs a value"},
      {{"--port", "70000"}, "--port wants an integer"},
      {{"--port", "12x"}, "--port wants an integer"},
      {{"--engines", "0"}, "--engines wants an integer in [1, 1024]"},
      {{"--profile", "gpt-9"}, "unknown profile 'gpt-9'"},
      {{"--scheduling-policy", "lifo"}, "fcfs or priority"},
      {{"--error-rate", "1.5"}, "error_rate must be within [0, 1]"},
      {{"--error-rate", "-1"}, "--error-rate wants a non-negative number"},
      {{"--error-status", "404"}, "error_status must be 429, 500 or 503"},
      {{"--port", "65535", "--engines", "2"}, "port + engines - 1"},
      {{"--max-num-seqs", "0"}, "--max-num-seqs wants an integer in [1,"},
      {{"--model="}, "--model wants a non-empty value"},
  };
  for (const auto& [args, message] : cases) {
    const auto f = parse(args);
    ASSERT_FALSE(f) << args.front();
    EXPECT_NE(f.error().find(message), std::string::npos) << f.error();
  }
}

}  // namespace
}  // namespace arbiter::sim
