// The relay's per-read cost of adaptive capacity's gap count (issue 11,
// measured for issue 17's per-event CPU): one upstream read carrying one
// SSE chat chunk, framed as the relay frames it, without and with the gap
// count (a clock read and StreamGaps::count's relaxed adds). Compare the
// pair as a ratio, measured in the same run.
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>

#include "core/sse.hpp"
#include "gateway/stream_gaps.hpp"

namespace arbiter {
namespace {

const std::string kEvent =
    "data: {\"id\":\"chatcmpl-7\",\"object\":\"chat.completion.chunk\",\"created\":1733000000,"
    "\"model\":\"m1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word\"},\"finish_reason\":null}]}\n\n";

void BM_SseRead_Frame(benchmark::State& state) {
  SseFramer framer;
  for (auto _ : state) {
    framer.feed(kEvent, [](std::string_view event) { benchmark::DoNotOptimize(event.data()); });
    framer.release();
  }
}
BENCHMARK(BM_SseRead_Frame);

void BM_SseRead_FrameAndCountGap(benchmark::State& state) {
  SseFramer framer;
  StreamGaps gaps;
  gaps.set_target(std::chrono::milliseconds(30));
  auto last = StreamGaps::Clock::now();
  for (auto _ : state) {
    const std::size_t before = framer.events();
    framer.feed(kEvent, [](std::string_view event) { benchmark::DoNotOptimize(event.data()); });
    framer.release();
    const auto now = StreamGaps::Clock::now();
    gaps.count(static_cast<uint32_t>(framer.events() - before), now - last);
    last = now;
  }
  benchmark::DoNotOptimize(gaps.take().total);
}
BENCHMARK(BM_SseRead_FrameAndCountGap);

}  // namespace
}  // namespace arbiter
