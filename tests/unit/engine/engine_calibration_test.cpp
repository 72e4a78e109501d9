// Calibration check (docs/simulator.md, "Calibration check"): each profile
// replays a published vLLM serving benchmark and must reproduce its measured
// output token throughput within kTolerance.
//
// Source: GitHub LambdaLabsML/vllm-benchmark, vLLM benchmark_serving.py with
// 320 ShareGPT prompts sent at once (request rate inf) and vLLM's defaults
// max_num_seqs 256, max_num_batched_tokens 2048:
//   results/prompt_320/1xA100-80GB-SXM/Meta-Llama-3-8B-Instruct_tp1_len2000.json:
//     65,578 prompt tokens, 65,374 output tokens in 21.04 s -> 3,107.5 tokens/s.
//   results/prompt_320/8xH100-80GB-SXM/Meta-Llama-3-70B-Instruct_tp8_len2048.json:
//     65,578 prompt tokens, 55,791 output tokens in 16.90 s -> 3,301.0 tokens/s.
// The per-request lengths below are those files' `input_lens` and
// `output_lens`; requests that produced 0 tokens are replayed as 1 (vLLM
// samples at least one, the client saw none).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <vector>

#include "engine/engine.hpp"
#include "engine/profile.hpp"
#include "engine/replay.hpp"

namespace arbiter::engine {
namespace {

constexpr double kTolerance = 0.20;

// clang-format off
constexpr std::array<std::uint32_t, 320> kInputLens = {
    13, 25, 27, 10, 329, 29, 399, 328, 4, 205, 16, 372, 403, 9, 12, 770,
    227, 8, 14, 390, 659, 59, 76, 744, 619, 279, 344, 9, 10, 45, 11, 4,
    80, 768, 317, 40, 619, 8, 298, 16, 17, 696, 575, 11, 7, 281, 12, 147,
    481, 770, 336, 6, 331, 9, 45, 222, 802, 481, 93, 641, 22, 15, 16, 77,
    32, 689, 178, 9, 628, 480, 42, 336, 24, 515, 761, 112, 113, 348, 82, 467,
    245, 11, 24, 343, 13, 387, 258, 32, 28, 225, 248, 35, 133, 98, 27, 23,
    58, 363, 203, 140, 140, 230, 310, 521, 768, 317, 298, 336, 491, 19, 10, 59,
    48, 20, 20, 54, 107, 53, 72, 18, 10, 768, 7, 933, 239, 277, 26, 35,
    462, 386, 25, 23, 17, 20, 44, 661, 631, 349, 53, 71, 37, 10, 21, 37,
    496, 8, 9, 353, 10, 595, 5, 49, 286, 305, 56, 43, 52, 310, 35, 7,
    7, 238, 10, 143, 660, 191, 72, 39, 258, 312, 49, 9, 15, 561, 76, 561,
    501, 8, 66, 15, 303, 19, 455, 27, 143, 688, 9, 31, 361, 21, 117, 8,
    12, 775, 338, 176, 349, 166, 419, 401, 307, 169, 647, 21, 9, 34, 12, 37,
    45, 154, 8, 10, 18, 253, 486, 611, 96, 19, 62, 529, 15, 30, 10, 445,
    680, 762, 441, 77, 12, 276, 178, 22, 159, 95, 366, 4, 7, 770, 8, 45,
    480, 90, 32, 329, 768, 72, 86, 53, 83, 419, 44, 14, 56, 28, 707, 235,
    27, 668, 17, 427, 44, 370, 8, 674, 455, 185, 68, 19, 132, 304, 9, 34,
    39, 54, 768, 661, 404, 240, 25, 95, 60, 24, 12, 85, 66, 62, 462, 22,
    241, 25, 32, 13, 175, 31, 342, 43, 339, 144, 233, 16, 10, 11, 269, 587,
    8, 233, 10, 48, 9, 335, 22, 61, 29, 692, 7, 332, 512, 13, 128, 24,
};

constexpr std::array<std::uint32_t, 320> kOutputLens8b = {
    120, 547, 233, 194, 101, 741, 9, 3, 6, 38, 392, 84, 396, 45, 291, 9,
    173, 277, 334, 37, 587, 372, 36, 135, 26, 45, 450, 118, 226, 4, 5, 146,
    59, 11, 567, 192, 447, 130, 13, 223, 188, 16, 35, 276, 202, 492, 239, 129,
    26, 79, 17, 204, 11, 207, 78, 340, 21, 9, 123, 6, 559, 5, 316, 26,
    417, 206, 151, 42, 25, 18, 159, 0, 25, 267, 19, 12, 768, 67, 628, 11,
    218, 296, 371, 49, 125, 0, 26, 237, 350, 13, 490, 408, 58, 29, 512, 413,
    526, 16, 416, 434, 451, 17, 573, 0, 7, 8, 11, 22, 0, 249, 281, 392,
    611, 572, 23, 256, 31, 39, 300, 355, 340, 9, 172, 458, 78, 20, 154, 768,
    0, 141, 42, 26, 780, 334, 125, 4, 4, 721, 63, 24, 331, 481, 110, 216,
    184, 99, 285, 22, 355, 40, 150, 46, 0, 0, 574, 561, 214, 0, 419, 163,
    162, 77, 482, 170, 510, 53, 16, 384, 57, 9, 170, 351, 173, 19, 390, 339,
    552, 17, 520, 8, 8, 198, 510, 478, 304, 398, 16, 475, 91, 54, 509, 608,
    36, 425, 15, 25, 12, 363, 0, 0, 44, 43, 267, 437, 334, 31, 261, 402,
    346, 176, 22, 22, 159, 203, 8, 16, 16, 216, 86, 0, 234, 258, 247, 23,
    47, 16, 447, 221, 702, 0, 44, 142, 740, 18, 76, 299, 250, 24, 300, 178,
    5, 373, 25, 23, 76, 322, 87, 389, 21, 7, 527, 485, 339, 394, 11, 27,
    254, 313, 392, 111, 365, 0, 79, 11, 275, 22, 99, 373, 38, 0, 657, 283,
    503, 250, 16, 407, 0, 7, 261, 393, 321, 91, 56, 365, 343, 316, 25, 444,
    646, 241, 222, 4, 27, 290, 7, 21, 336, 16, 360, 199, 313, 297, 18, 338,
    301, 189, 373, 478, 394, 23, 230, 455, 283, 0, 201, 0, 20, 308, 30, 295,
};

constexpr std::array<std::uint32_t, 320> kOutputLens70b = {
    120, 676, 233, 194, 101, 741, 0, 0, 6, 35, 392, 30, 396, 45, 291, 9,
    173, 277, 334, 0, 587, 372, 14, 89, 0, 0, 450, 118, 226, 4, 5, 146,
    59, 11, 0, 192, 230, 130, 0, 223, 188, 0, 0, 276, 202, 492, 239, 120,
    0, 31, 17, 204, 11, 207, 78, 0, 9, 0, 0, 6, 559, 5, 316, 0,
    417, 207, 151, 42, 25, 0, 159, 0, 25, 133, 0, 12, 768, 67, 628, 0,
    48, 296, 501, 0, 125, 0, 0, 231, 350, 0, 490, 408, 0, 29, 512, 413,
    389, 0, 87, 434, 427, 17, 110, 0, 7, 0, 11, 0, 0, 249, 281, 392,
    549, 572, 23, 256, 31, 39, 300, 355, 340, 9, 172, 154, 0, 0, 154, 768,
    0, 135, 41, 26, 408, 315, 125, 4, 0, 504, 63, 24, 331, 434, 110, 216,
    0, 99, 285, 0, 103, 40, 150, 0, 0, 0, 574, 573, 214, 0, 419, 163,
    162, 77, 376, 170, 510, 0, 11, 384, 0, 0, 170, 356, 173, 19, 302, 0,
    42, 17, 520, 8, 8, 198, 414, 438, 304, 0, 16, 475, 0, 54, 509, 608,
    36, 425, 0, 0, 0, 363, 0, 0, 0, 0, 267, 198, 334, 31, 261, 402,
    270, 0, 20, 22, 159, 203, 0, 0, 16, 216, 86, 0, 234, 258, 247, 0,
    47, 0, 0, 221, 702, 0, 44, 142, 353, 18, 0, 297, 250, 24, 300, 178,
    0, 373, 25, 0, 76, 322, 87, 228, 0, 0, 527, 485, 298, 394, 0, 27,
    254, 313, 392, 111, 365, 0, 79, 11, 0, 22, 99, 373, 0, 0, 657, 283,
    503, 235, 16, 1, 0, 0, 261, 492, 322, 91, 56, 365, 343, 316, 0, 444,
    272, 241, 222, 4, 126, 290, 0, 15, 319, 0, 360, 199, 277, 297, 0, 338,
    143, 81, 373, 478, 394, 23, 230, 455, 260, 0, 201, 0, 11, 308, 0, 295,
};
// clang-format on

constexpr std::uint64_t kPromptTokens = 65'578;
constexpr std::uint64_t kOutputTokens8b = 65'374;
constexpr std::uint64_t kOutputTokens70b = 55'791;
constexpr double kMeasuredTokensPerS8b = 3107.5;
constexpr double kMeasuredTokensPerS70b = 3301.0;

template <std::size_t N>
std::uint64_t sum(const std::array<std::uint32_t, N>& xs) {
  return std::accumulate(xs.begin(), xs.end(), std::uint64_t{0});
}

// Replays the benchmark on `profile` with the run's scheduler limits and
// returns the simulated makespan in seconds.
double simulate(const Profile& profile, const std::array<std::uint32_t, 320>& outputs) {
  EngineConfig config = profile.config;
  config.max_num_seqs = 256;
  config.max_num_batched_tokens = 2048;
  Engine engine(config);
  std::vector<Arrival> arrivals;
  for (std::size_t i = 0; i < kInputLens.size(); ++i) {
    arrivals.push_back(
        {0.0, SubmitRequest{.id = i,
                            .prompt_tokens = kInputLens[i],
                            .block_hashes = {},  // distinct prompts: no reuse
                            .output_tokens = std::max<std::uint32_t>(outputs[i], 1)}});
  }
  const ReplayResult result = replay(engine, std::move(arrivals));
  EXPECT_EQ(result.completed.size(), kInputLens.size());
  EXPECT_TRUE(result.rejected.empty());
  return result.end_time;
}

TEST(EngineCalibration, TranscribedLengthsMatchReportedTotals) {
  EXPECT_EQ(sum(kInputLens), kPromptTokens);
  EXPECT_EQ(sum(kOutputLens8b), kOutputTokens8b);
  EXPECT_EQ(sum(kOutputLens70b), kOutputTokens70b);
}

TEST(EngineCalibration, Llama8bA100OutputThroughputWithin20Percent) {
  const Profile* profile = find_profile("llama-8b-a100");
  ASSERT_NE(profile, nullptr);
  const double seconds = simulate(*profile, kOutputLens8b);
  const double tokens_per_s = static_cast<double>(kOutputTokens8b) / seconds;
  RecordProperty("simulated_output_tokens_per_s", std::to_string(tokens_per_s));
  EXPECT_NEAR(tokens_per_s, kMeasuredTokensPerS8b, kTolerance * kMeasuredTokensPerS8b)
      << "simulated makespan " << seconds << " s vs measured 21.04 s";
}

TEST(EngineCalibration, Llama70bH100x8OutputThroughputWithin20Percent) {
  const Profile* profile = find_profile("llama-70b-h100x8");
  ASSERT_NE(profile, nullptr);
  const double seconds = simulate(*profile, kOutputLens70b);
  const double tokens_per_s = static_cast<double>(kOutputTokens70b) / seconds;
  RecordProperty("simulated_output_tokens_per_s", std::to_string(tokens_per_s));
  EXPECT_NEAR(tokens_per_s, kMeasuredTokensPerS70b, kTolerance * kMeasuredTokensPerS70b)
      << "simulated makespan " << seconds << " s vs measured 16.90 s";
}

}  // namespace
}  // namespace arbiter::engine
