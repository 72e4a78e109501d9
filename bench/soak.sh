#!/usr/bin/env bash
# Soak and leak check (issue 16; docs/benchmarks.md, "Soak"): the chaos
# drills' machinery (bench/chaos_lib.sh: real arbiter-sim processes behind a
# real build/arbiter) under hours-like mixed traffic from `arbiter-bench live`
# (bench/chaos/soak.yaml: cancels, supersedes, surges that preempt batch
# streams), with upstream faults cycling through the engines: an error
# burst, a half-hung engine, a crash and restart. bench/soak_sample.py
# samples the gateway's RSS, fds, threads and in-flight gauges every few
# seconds into samples.tsv; bench/soak_report.py checks them.
#
#   bash bench/soak.sh [--minutes N] [BUILD_DIR] [WORKDIR]
#
# --minutes  length of the measured load (default 30; `make soak`)
# WORKDIR    default BUILD_DIR/soak
#
# Timeline: warm-up load (90 s; 15 s when N < 5), settle, 5 s idle, the
# baseline sample; N minutes of load with faults; settle, 5 s idle, the end
# sample. Exit status 1 when a check failed (soak_report.py lists them).
set -euo pipefail

minutes=30
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --minutes) minutes=$2; shift ;;
    *) echo "soak: unknown flag $1" >&2; exit 2 ;;
  esac
  shift
done
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${1:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
D=${2:-$BUILD_DIR/soak}
BENCH=$BUILD_DIR/arbiter-bench ARBITER=$BUILD_DIR/arbiter SIM=$BUILD_DIR/arbiter-sim
for b in "$BENCH" "$ARBITER" "$SIM"; do [[ -x $b ]] || { echo "soak: $b not built" >&2; exit 1; }; done
rm -rf "$D" && mkdir -p "$D"

ENGINES=3 PROFILE=llama-8b-a100 NUM_BLOCKS=4000
FIRST_BYTE_MS=3000 STREAM_IDLE_MS=3000  # as the chaos drills: a hung engine costs a bounded wait
# Kept-alive upstream connections at rest are bounded, not a fixed number:
# the upstream pool keeps at most max_concurrency (soak.yaml: 16) idle per
# engine and I/O thread (listener.threads 0: one per core), and drops them
# only when next asked; plus the engine-signal scrape and health-probe
# connections (2 per engine).
UPSTREAM_BOUND=$((ENGINES * (16 * $(nproc) + 2)))
source "$ROOT/bench/chaos_lib.sh"

LOAD_S=$((minutes * 60))
if ((minutes < 5)); then WARM_S=15 PERIOD=15 FAULT_S=6 SAMPLE_S=5; else WARM_S=90 PERIOD=120 FAULT_S=30 SAMPLE_S=10; fi
SURGE_S=$((PERIOD / 6))

# The scenario for this length: arrivals for the whole run, and a 3x surge of
# critical and chat in the middle of every fault period.
changes=$(awk -v len="$LOAD_S" -v p="$PERIOD" -v s="$SURGE_S" 'BEGIN {
  sep = ""; out = "["
  for (t = p / 2; t + s < len; t += p) { out = out sep "{at_s: " t ", for_s: " s ", factor: 3}"; sep = ", " }
  print out "]" }')
awk -v len="$LOAD_S" -v ch="$changes" '
  /^duration_s:/ { print "duration_s: " len; next }
  /name: (critical|chat)$/ { surge = 1 }
  surge && /max_tokens: [0-9]+[,}]/ && ch != "[]" { sub(/max_tokens: [0-9]+/, "&,\n              rate_changes: " ch); surge = 0 }
  { print }' "$ROOT/bench/chaos/soak.yaml" > "$D/soak.yaml"
awk -v w="$WARM_S" '/^duration_s:/ { print "duration_s: " w; next } { print }' \
  "$ROOT/bench/chaos/soak.yaml" > "$D/warmup.yaml"

# settle: until the gateway's in-flight gauges are all 0 (at most 60 s).
settle() {
  local until=$((SECONDS + 60))
  while ((SECONDS < until)); do
    curl -s --max-time 2 "$GATEWAY_ADMIN_URL/metrics" > "$D/gateway.metrics" || return 1
    awk '/^arbiter_(requests_in_flight|backend_in_flight|class_in_flight|queue_depth|tenant_queue_depth|quota_in_flight|request_body_bytes)[{ ]/ && $NF != 0 { busy = 1 }
         END { exit busy }' "$D/gateway.metrics" && return 0
    sleep 0.1
  done
  return 0  # the report's check says which gauge stayed up
}
sample() {  # PHASE: one row of samples.tsv now
  python3 "$ROOT/bench/soak_sample.py" --pid "$GATEWAY_PID" --url "$GATEWAY_ADMIN_URL" \
    --upstream-ports "$(printf '%s\n' "${SIM_PORT[@]}" | paste -sd,)" --phase "$1" >> "$D/samples.tsv"
}
live() {  # SCENARIO SECONDS LABEL: arbiter-bench live in the background from T0
  T0=$(now)
  nice -n 5 timeout -s KILL $((${2%.*} + 90)) \
    "$BENCH" live --scenario "$1" --target "$GATEWAY_URL" --max-s "$2" --label "$3" \
    --gateway-config "$D/gateway.yaml" --out "$D/live-$3" --requests-out "$D/requests-$3.jsonl" \
    > "$D/bench-$3.log" 2>&1 &
  LOAD_PID=$!
  PIDS+=("$LOAD_PID")
}
end_live() { local rc=0; wait "$LOAD_PID" || rc=$?; forget "$LOAD_PID"; event load-ended "$1 rc=$rc"; }

SIM_PID=() SIM_PORT=() SIM_INSTANCE=()
echo "soak: ${minutes} min of load (+${WARM_S} s warm-up), faults every ${PERIOD} s, in $D" >&2
for ((i = 0; i < ENGINES; ++i)); do start_sim "$i"; done
start_gateway "$D/soak.yaml"
python3 "$ROOT/bench/soak_sample.py" --header > "$D/samples.tsv"
sample start

live "$D/warmup.yaml" "$WARM_S" warmup
end_live warmup
settle
sleep 5
sample baseline

# Samples every SAMPLE_S s while the load runs (a background loop).
( while sleep "$SAMPLE_S"; do sample load; done ) &
SAMPLER_PID=$!
PIDS+=("$SAMPLER_PID")

live "$D/soak.yaml" "$LOAD_S" soak
# Faults: one per period, a quarter into it, on engines in turn: a 30%
# error burst, half the requests hanging, a SIGKILL and restart (FAULT_S s).
for ((n = 0; (n + 1) * PERIOD <= LOAD_S; ++n)); do
  at "$n * $PERIOD + $PERIOD / 4"
  v=$((n % ENGINES))
  case $((n % 3)) in
    0) fault "$v" '{"error_rate":0.3,"error_status":500}'; at "$n * $PERIOD + $PERIOD / 4 + $FAULT_S"; fault "$v" '{"error_rate":0}' ;;
    1) fault "$v" '{"hang_rate":0.5}'; at "$n * $PERIOD + $PERIOD / 4 + $FAULT_S"; fault "$v" '{"hang_rate":0}' ;;
    2) kill_sim "$v" KILL; at "$n * $PERIOD + $PERIOD / 4 + $FAULT_S"; restart_sim "$v" ;;
  esac
done
end_live soak
settle
sleep 5
kill "$SAMPLER_PID" 2>/dev/null || true
forget "$SAMPLER_PID"
sample end
curl -s --max-time 2 "$GATEWAY_ADMIN_URL/metrics" > "$D/gateway.metrics" || true

rc=0
python3 "$ROOT/bench/soak_report.py" --minutes "$minutes" --upstream-bound "$UPSTREAM_BOUND" "$D" > "$D/report.md" || rc=$?
cat "$D/report.md"
exit "$rc"
