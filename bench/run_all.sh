#!/usr/bin/env bash
# `make bench`: every benchmark in one go, a few minutes in all.
#   bash bench/run_all.sh [BUILD_DIR]     (default: build)
# 1. bench/overhead.sh: gateway overhead, direct vs nginx vs arbiter, and in the
#    same closed-loop rounds both proxies with their access logs on and with a
#    64 KiB prompt (~2.5 min); it rewrites the "Gateway overhead" section of
#    docs/benchmarks.md; then TLS=1 the same with nginx and arbiter terminating
#    TLS 1.3 ("TLS overhead"); STREAM=1 with streamed answers: as fast as they go,
#    100 and 1,000 paced streams, first events against plain requests
#    ("Streaming overhead", ~4 min). (ACCESS_LOG=1, the access log's own
#    section with the log paths in the open loop too, is not run here.)
#    bench/request_cost.sh: instructions and syscalls per proxied request,
#    arbiter and nginx (~25 s; deterministic, unlike the wall-clock figures).
#    bench/scenarios.sh: the shipped scenarios; bench/sweep.sh: the regret
#    sweep (200 generated scenarios, hybrid against fifo and priority);
#    bench/borrowing_sweep.sh: borrowing between pools on 24 pool layouts;
#    bench/quota_store.sh: the quota stage's latency with Redis (~20 s);
#    bench/live_waste.sh: cancel-storm's engine waste live against virtual (~2 min).
# 2. Every Google Benchmark binary BUILD_DIR/bench/*_bench, briefly
#    (BENCH_MIN_TIME seconds per benchmark, default 0.05), JSON to bench/out/.
# 3. `make test-tsan`: ThreadSanitizer over the unit and integration suites
#    (issue 16: CI runs the core's unit tests under ASan and UBSan, and a whole
#    sanitized build does not fit its time budget, so TSan runs here; ~25 min
#    cold on 2 cores, minutes with ccache warm). TSAN=0 skips it.
# Add a new benchmark as another step below; a failing step is reported and
# the others still run. Missing a performance target is not a failure: the
# figures are for people to read (docs/benchmarks.md), not a timed test.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${1:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
BENCH_MIN_TIME=${BENCH_MIN_TIME:-0.05}
OUT_DIR=$ROOT/bench/out
mkdir -p "$OUT_DIR"

FAILED=()
step() {  # name command...
  local name=$1
  shift
  echo
  echo "=== $name"
  if ! "$@"; then
    echo "=== $name FAILED" >&2
    FAILED+=("$name")
  fi
}

step "gateway overhead" bash "$ROOT/bench/overhead.sh" "$BUILD_DIR"
step "TLS overhead" env TLS=1 bash "$ROOT/bench/overhead.sh" "$BUILD_DIR"
step "streaming overhead" env STREAM=1 bash "$ROOT/bench/overhead.sh" "$BUILD_DIR"
step "request cost (instructions, syscalls)" bash "$ROOT/bench/request_cost.sh" "$BUILD_DIR"
step "scenarios (virtual mode)" bash "$ROOT/bench/scenarios.sh" "$BUILD_DIR"
step "regret sweep (virtual mode)" bash "$ROOT/bench/sweep.sh" "$BUILD_DIR"
step "borrowing sweep (virtual mode)" bash "$ROOT/bench/borrowing_sweep.sh" "$BUILD_DIR"
step "quota stage with Redis" bash "$ROOT/bench/quota_store.sh" "$BUILD_DIR"
step "cancel-storm waste, live against virtual" bash "$ROOT/bench/live_waste.sh" \
  "$BUILD_DIR/arbiter-bench" "$BUILD_DIR/arbiter" "$BUILD_DIR/arbiter-sim" "$OUT_DIR/live-waste"

shopt -s nullglob
for bin in "$BUILD_DIR"/bench/*_bench; do
  [[ -x $bin ]] || continue
  name=$(basename "$bin")
  # Google Benchmark 1.7 (Debian 12) takes --benchmark_min_time in seconds.
  step "$name" "$bin" --benchmark_min_time="$BENCH_MIN_TIME" \
    --benchmark_out="$OUT_DIR/$name.json" --benchmark_out_format=json
done

if [[ ${TSAN:-1} != 0 ]]; then
  step "ThreadSanitizer over the suites (make test-tsan)" make -C "$ROOT" test-tsan
fi

echo
if ((${#FAILED[@]})); then
  echo "bench: failed: ${FAILED[*]}" >&2
  exit 1
fi
echo "bench: all steps ran; results in bench/out/ and docs/benchmarks.md"
