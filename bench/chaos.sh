#!/usr/bin/env bash
# Chaos drills (issue 15; docs/resilience.md, "Chaos drills"): real
# arbiter-sim processes, one per backend, behind a real build/arbiter, under
# open-loop load from `arbiter-bench live`; faults injected mid-run through
# each simulator's POST /admin/faults or by killing and restarting its
# process. bench/chaos_report.py turns each drill's per-request log, fault
# times and /metrics into its figures and checks.
#
#   bash bench/chaos.sh [--short] [--doc] [--only a,b,...] [BUILD_DIR] [WORKDIR]
#
# --short   each drill a few seconds (the `arbiter_chaos_short` ctest)
# --doc     put the table in docs/benchmarks.md (`make chaos`)
# --only    run only these drills (names below)
# WORKDIR   default BUILD_DIR/chaos; one folder per drill
#
# Exit status: 1 when a hard check failed (every request ends, the gateway
# stays up, its in-flight gauges return to 0, and the targets today's
# gateway must meet); report-only targets are shown, not enforced.
set -euo pipefail

short=0 doc=0 only=""
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --short) short=1 ;;
    --doc) doc=1 ;;
    --only) only=$2; shift ;;
    *) echo "chaos: unknown flag $1" >&2; exit 2 ;;
  esac
  shift
done
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${1:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
WORK=${2:-$BUILD_DIR/chaos}
BENCH=$BUILD_DIR/arbiter-bench ARBITER=$BUILD_DIR/arbiter SIM=$BUILD_DIR/arbiter-sim
for b in "$BENCH" "$ARBITER" "$SIM"; do [[ -x $b ]] || { echo "chaos: $b not built" >&2; exit 1; }; done
if ((doc)); then
  source "$ROOT/bench/doc_section.sh"
  bench_setup chaos "$BUILD_DIR"
fi
rm -rf "$WORK" && mkdir -p "$WORK"

# Phases of a drill, in seconds: steady load before the fault, the fault,
# load after it. The short form keeps every drill to a few seconds.
if ((short)); then PRE=1 FAULT=2 POST=1.5 FORM=short; else PRE=5 FAULT=10 POST=10 FORM=full; fi
ENGINES=3
# The gateway gives a backend this long for a response header, and a stream
# this long between two pieces: a hung backend costs each request a bounded
# wait (the defaults, 120 s and 60 s, are sized for non-streaming answers).
FIRST_BYTE_MS=3000 STREAM_IDLE_MS=3000
PROFILE=llama-8b-a100
# KV blocks per engine (the scenarios' engine.num_blocks): 64k tokens, of
# which the steady load holds about a tenth.
NUM_BLOCKS=4000

source "$ROOT/bench/chaos_lib.sh"

# start_load SCENARIO SECONDS: arbiter-bench live in the background from T0.
start_load() {
  T0=$(now)
  timeout -s KILL $(awk -v s="$2" 'BEGIN { print int(s + 60) }') \
    "$BENCH" live --scenario "$1" --target "$GATEWAY_URL" --max-s "$2" --label "$DRILL" \
    --gateway-config "$D/gateway.yaml" --out "$D/live" --requests-out "$D/requests.jsonl" \
    > "$D/bench.log" 2>&1 &
  LOAD_PID=$!
  PIDS+=("$LOAD_PID")
}

# Waits for the load to end, lets the gateway settle (its in-flight gauges
# back to 0, at most 10 s), then takes every process's /metrics and stops
# the drill's processes.
finish_drill() {
  local rc=0 i
  wait "$LOAD_PID" || rc=$?
  forget "$LOAD_PID"
  event load-ended "rc=$rc"
  for ((i = 0; i < 100; ++i)); do
    curl -s --max-time 2 "$GATEWAY_ADMIN_URL/metrics" > "$D/gateway.metrics" || break
    awk '/^arbiter_(requests_in_flight|backend_in_flight|class_in_flight|queue_depth)[{ ]/ && $NF != 0 { busy = 1 }
         END { exit busy }' "$D/gateway.metrics" && break
    sleep 0.1
  done
  if kill -0 "$GATEWAY_PID" 2>/dev/null && curl -sf --max-time 2 "$GATEWAY_URL/healthz" > /dev/null; then
    echo up > "$D/gateway.state"
  else
    echo down > "$D/gateway.state"
  fi
  for ((i = 0; i < ENGINES; ++i)); do kill -0 "${SIM_PID[$i]}" 2>/dev/null && scrape_sim "$i"; done
  for ((i = 0; i < ENGINES; ++i)); do stop_pid "${SIM_PID[$i]}" KILL; done
  stop_pid "$GATEWAY_PID" TERM
  wait 2>/dev/null || true
  PIDS=()
}

# One drill: NAME DESCRIPTION SCENARIO SECONDS, then its fault steps as a
# function `steps_NAME` run while the load runs.
run_drill() {
  DRILL=$1
  local description=$2 scenario=$3 seconds=$4
  if [[ -n $only && ",$only," != *",$DRILL,"* ]]; then return 0; fi
  D=$WORK/$DRILL
  mkdir -p "$D"
  SIM_PID=() SIM_PORT=() SIM_INSTANCE=()
  echo "chaos: $DRILL ($FORM): $description" >&2
  for ((i = 0; i < ENGINES; ++i)); do start_sim "$i"; done
  start_gateway "$scenario"
  printf '{"drill":"%s","form":"%s","description":"%s","seconds":%s,"pre":%s,"fault":%s,"engines":%d}\n' \
    "$DRILL" "$FORM" "$description" "$seconds" "$PRE" "$FAULT" "$ENGINES" > "$D/drill.json"
  start_load "$scenario" "$seconds"
  "steps_$DRILL"
  finish_drill
  DRILLS+=("$D")
}

# Scenario copies with the surge where this form wants it.
MIXED=$ROOT/bench/chaos/mixed.yaml
sed -E "s/at_s: [0-9.]+, for_s: [0-9.]+/at_s: $PRE, for_s: $FAULT/" "$ROOT/bench/chaos/surge.yaml" > "$WORK/surge.yaml"
LENGTH=$(awk -v a="$PRE" -v b="$FAULT" -v c="$POST" 'BEGIN { print a + b + c }')

steps_5xx_30() { at "$PRE"; fault 0 '{"error_rate":0.3,"error_status":500}'; at "$PRE + $FAULT"; fault 0 '{"error_rate":0}'; }
steps_5xx_100() { at "$PRE"; fault 0 '{"error_rate":1,"error_status":503}'; at "$PRE + $FAULT"; fault 0 '{"error_rate":0}'; }
steps_hang() { at "$PRE"; fault 0 '{"hang_rate":1}'; at "$PRE + $FAULT"; fault 0 '{"hang_rate":0}'; }
steps_crash() { at "$PRE"; kill_sim 1 KILL; at "$PRE + $FAULT"; restart_sim 1; }
steps_slow_start() {
  at "$PRE"
  kill_sim 2 TERM  # graceful: the streams it holds may finish (--drain-s 4)
  restart_sim 2 --slow-start-s "$FAULT"
}
steps_all_fail() {
  at "$PRE"
  snapshot fault-start
  for ((i = 0; i < ENGINES; ++i)); do fault "$i" '{"error_rate":1,"error_status":503}'; done
  at "$PRE + $FAULT"
  for ((i = 0; i < ENGINES; ++i)); do fault "$i" '{"error_rate":0}'; done
  snapshot fault-end
}
steps_all_down() {
  at "$PRE"
  for ((i = 0; i < ENGINES; ++i)); do kill_sim "$i" KILL; done
  at "$PRE + $FAULT"
  for ((i = 0; i < ENGINES; ++i)); do restart_sim "$i"; done
}
steps_surge() { at "$PRE"; event surge "x5"; at "$PRE + $FAULT"; event surge-end ""; }
steps_cancel_storm() { :; }
# 90% of every engine's KV blocks taken away (the BRIEF's "VRAM at 90%").
KV_LEFT=$((NUM_BLOCKS / 10))
steps_vram_90() {
  at "$PRE"
  snapshot fault-start
  for ((i = 0; i < ENGINES; ++i)); do fault "$i" "{\"kv_blocks\":$KV_LEFT}"; done
  at "$PRE + $FAULT / 2"
  snapshot mid-fault
  at "$PRE + $FAULT"
  for ((i = 0; i < ENGINES; ++i)); do fault "$i" '{"kv_blocks":0}'; done
}

DRILLS=()
run_drill 5xx_30 "one of three engines answers 30% of requests with 500" "$MIXED" "$LENGTH"
((short)) || run_drill 5xx_100 "one of three engines answers every request with 503" "$MIXED" "$LENGTH"
run_drill hang "one of three engines hangs every request" "$MIXED" "$LENGTH"
run_drill crash "one of three engines SIGKILLed mid-stream, restarted on its port" "$MIXED" "$LENGTH"
run_drill slow_start "one of three engines restarted (SIGTERM) with slow_start_s" "$MIXED" \
  "$(awk -v l="$LENGTH" 'BEGIN { print l + 4 }')"
run_drill all_fail "every engine answers 503, then recovers" "$MIXED" "$LENGTH"
((short)) || run_drill all_down "every engine SIGKILLed, restarted on its port" "$MIXED" "$LENGTH"
run_drill surge "arrivals at 5x the base rate" "$WORK/surge.yaml" "$LENGTH"
run_drill cancel_storm "IDE keystrokes superseding completions, chat clients leaving" \
  "$ROOT/bench/chaos/cancel-storm.yaml" "$LENGTH"
run_drill vram_90 "90% of every engine's KV blocks taken away" "$MIXED" "$LENGTH"

rc=0
python3 "$ROOT/bench/chaos_report.py" "${DRILLS[@]}" > "$WORK/table.md" || rc=$?
cat "$WORK/table.md"
if ((doc)); then
  {
    echo "Generated by \`bash bench/chaos.sh --doc build\` (\`make chaos\`) on $(date -u '+%Y-%m-%d %H:%M') UTC,"
    echo "arbiter at $(git -C "$ROOT" rev-parse --short HEAD), on the 2-core development machine; $((SECONDS / 60)) min $((SECONDS % 60)) s."
    echo "Report-only targets need issue 15's ejection, retries, failover and fail-fast: a **FAIL** there is"
    echo "what today's gateway does. Hard targets fail the run."
    echo
    cat "$WORK/table.md"
  } > "$WORK/section.md"
  replace_section chaos "$WORK/section.md"
fi
exit "$rc"
