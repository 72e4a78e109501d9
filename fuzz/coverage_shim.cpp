// Edge coverage for libFuzzer from GCC's instrumentation (docs/security.md,
// "Fuzzing"). Debian's clang 14 cannot compile the code base (std::expected
// of libstdc++ 12), so the harnesses are built by GCC 12, whose
// -fsanitize-coverage=trace-pc calls __sanitizer_cov_trace_pc() at every
// basic block. libFuzzer 14 has no working implementation of that hook (its
// own prints "not supported" and exits; fuzz/CMakeLists.txt weakens it in a
// copy of the archive): this one hashes the caller's address into an array of
// 8-bit counters that libFuzzer reads as inline counters, the same feature
// signal clang's -fsanitize-coverage=inline-8bit-counters gives. The
// trace-cmp hooks GCC emits for comparisons are libFuzzer's own.
//
// This file must not be built with coverage instrumentation itself.
#include <cstddef>
#include <cstdint>

extern "C" {
void __sanitizer_cov_8bit_counters_init(uint8_t* begin, uint8_t* end);
void __sanitizer_cov_pcs_init(const uintptr_t* begin, const uintptr_t* end);
}

namespace {

constexpr std::size_t kCounters = std::size_t{1} << 16;  // collisions only merge a few edges
alignas(64) uint8_t counters[kCounters];
// libFuzzer's table of "PCs", one (pc, flags) pair per counter: its `cov:`
// figure counts the entries whose counter was hit. The "PCs" are slot
// numbers, not addresses, so -print_pcs and -print_coverage print nothing
// useful.
uintptr_t pc_table[2 * kCounters];

__attribute__((constructor)) void register_counters() {
  for (std::size_t i = 0; i < kCounters; ++i) pc_table[2 * i] = i + 1;
  __sanitizer_cov_8bit_counters_init(counters, counters + kCounters);
  __sanitizer_cov_pcs_init(pc_table, pc_table + 2 * kCounters);
}

}  // namespace

extern "C" {

__attribute__((no_sanitize_address)) void __sanitizer_cov_trace_pc() {
  const auto pc = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  ++counters[(pc ^ (pc >> 16) ^ (pc >> 32)) & (kCounters - 1)];
}

// GCC's trace-cmp also reports floating-point comparisons, which libFuzzer
// does not take.
void __sanitizer_cov_trace_cmpf(float, float) {}
void __sanitizer_cov_trace_cmpd(double, double) {}

}  // extern "C"
