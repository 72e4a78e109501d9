#!/usr/bin/env bash
# Open streams and idle connections (issue 16; docs/benchmarks.md, "Open
# streams and idle connections"): what the gateway's memory and fds are
# with many streams open at once, and with many idle keep-alive clients.
#
#   bash bench/open_streams.sh [--streams N] [--idle N] [--prompt-bytes B]
#                              [--step-time-scale S] [BUILD_DIR] [WORKDIR]
#
# Streams (default 9,000): arbiter-sim engines with slow token pacing
# (--step-time-scale, so every stream stays open for minutes) behind
# build/arbiter, one class with no cap; build/bench/hold_open opens N
# streaming completions through the gateway, waits for each one's first
# event and holds them. Idle (default 10,000): N keep-alive connections that
# each got one /healthz answer and stay silent. For each: the gateway's
# VmRSS and fd count before, with the N open, and after closing them (5 s
# later); per connection = (RSS with - RSS before) / N. --prompt-bytes: each
# stream's prompt (default 4 bytes; a long chat history or RAG prompt is tens
# of KiB, and its prefill is slow at the default --step-time-scale 200: give
# a smaller scale with it). --idle 0 skips the idle connections. Prints a Markdown
# table; results.tsv in WORKDIR (default BUILD_DIR/open_streams).
#
# The fd limit here is 20,000 (hard): a stream costs the gateway two fds
# (client and upstream), so 10,000 streams do not fit; hence 9,000.
set -euo pipefail

streams=9000 idle=10000 prompt_bytes=4 step_scale=200
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --streams) streams=$2; shift ;;
    --idle) idle=$2; shift ;;
    --prompt-bytes) prompt_bytes=$2; shift ;;
    --step-time-scale) step_scale=$2; shift ;;
    *) echo "open_streams: unknown flag $1" >&2; exit 2 ;;
  esac
  shift
done
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${1:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
D=${2:-$BUILD_DIR/open_streams}
ARBITER=$BUILD_DIR/arbiter SIM=$BUILD_DIR/arbiter-sim HOLD=$BUILD_DIR/bench/hold_open
for b in "$ARBITER" "$SIM" "$HOLD"; do [[ -x $b ]] || { echo "open_streams: $b not built" >&2; exit 1; }; done
rm -rf "$D" && mkdir -p "$D"
ulimit -n "$(ulimit -Hn)"

PIDS=()
cleanup() { local p; for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
wait_file() {  # FILE SECONDS
  local i; for ((i = 0; i < $2 * 20; ++i)); do [[ -s $1 ]] && return 0; sleep 0.05; done; return 1
}

# Engines: 1,000 sequences each, steps 200x slower than an A100 (a token
# every few seconds per stream), KV for all of them.
ENGINES=$(((streams + 999) / 1000))
nice -n 5 "$SIM" --port 0 --port-file "$D/sim.ports" --engines "$ENGINES" --profile llama-8b-a100 \
  --model hold --max-num-seqs 1000 --num-blocks 200000 --step-time-scale "$step_scale" > "$D/sim.log" 2>&1 &
SIM_PID=$!
PIDS+=("$SIM_PID")
wait_file "$D/sim.ports" 20 || { echo "open_streams: sim did not start" >&2; cat "$D/sim.log" >&2; exit 1; }

{
  echo "listener: {address: 127.0.0.1, port: 0}"
  echo "admin: {port: 0}"
  echo "log: {access_log: false}"
  echo "classes:"
  echo "  - {name: bulk, max_share: 1, max_queue: 100000, max_queue_per_tenant: 100000}"
  echo "default_class: bulk"
  echo "models:"
  echo "  - name: hold"
  echo "    backends:"
  i=0
  while read -r port; do
    echo "      - {name: sim$i, url: http://127.0.0.1:$port, max_concurrency: 1000}"
    i=$((i + 1))
  done < "$D/sim.ports"
} > "$D/gateway.yaml"
"$ARBITER" --config "$D/gateway.yaml" --check > /dev/null
# A fresh gateway for each measurement: memory one freed stays in tcmalloc's
# caches and would be reused by the next.
start_gateway() {  # MODE
  rm -f "$D/gateway.port"
  "$ARBITER" --config "$D/gateway.yaml" --port-file "$D/gateway.port" > "$D/gateway-$1.log" 2>&1 &
  GW=$!
  PIDS+=("$GW")
  wait_file "$D/gateway.port" 20 || { echo "open_streams: gateway did not start" >&2; cat "$D/gateway-$1.log" >&2; exit 1; }
  PORT=$(cat "$D/gateway.port")
}

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$GW/status"; }
fds() { ls "/proc/$GW/fd" | wc -l; }
printf 'mode\tn\topen\tfailed\trss_before_kb\tfds_before\trss_with_kb\tfds_with\trss_after_kb\tfds_after\n' > "$D/results.tsv"

# measure MODE N: one row of results.tsv.
measure() {
  local mode=$1 n=$2 before_rss before_fds with_rss with_fds after_rss after_fds line open failed
  start_gateway "$mode"
  # A few requests first, so that the baseline includes what any first
  # request allocates (thread-local buffers, the first upstream connection).
  "$HOLD" --port "$PORT" --connections 20 --mode "$mode" --model hold "${PROMPT[@]}" < /dev/null > /dev/null
  sleep 3
  before_rss=$(rss_kb) before_fds=$(fds)
  mkfifo "$D/hold.in"
  nice -n 5 "$HOLD" --port "$PORT" --connections "$n" --mode "$mode" --model hold --in-progress 200 "${PROMPT[@]}" \
    < "$D/hold.in" > "$D/hold-$mode.out" 2> "$D/hold-$mode.err" &
  local hold=$!
  PIDS+=("$hold")
  exec 7> "$D/hold.in"  # holds the tool's stdin open
  for ((i = 0; i < 6000; ++i)); do grep -q opened "$D/hold-$mode.out" 2>/dev/null && break; sleep 0.1; done
  sleep 5
  with_rss=$(rss_kb) with_fds=$(fds)
  line=$(grep opened "$D/hold-$mode.out" || echo '{"open":0,"failed":0}')
  open=$(sed -E 's/.*"open":([0-9]+).*/\1/' <<< "$line")
  failed=$(sed -E 's/.*"failed":([0-9]+).*/\1/' <<< "$line")
  exec 7>&-
  wait "$hold" || true
  rm -f "$D/hold.in"
  sleep 5
  after_rss=$(rss_kb) after_fds=$(fds)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$mode" "$n" "$open" "$failed" "$before_rss" "$before_fds" \
    "$with_rss" "$with_fds" "$after_rss" "$after_fds" >> "$D/results.tsv"
  kill -TERM "$GW"
  wait "$GW" || true
  echo "open_streams: $(date -u +%T) $mode x $n: open $open, failed $failed; RSS $before_rss -> $with_rss -> $after_rss KB; fds $before_fds -> $with_fds -> $after_fds" >&2
}

# The prompt and the output within the profile's 32k context (at most a
# token per 2 bytes of prompt).
max_tokens=$((30000 - prompt_bytes / 2))
((max_tokens >= 1000)) || { echo "open_streams: --prompt-bytes $prompt_bytes leaves no room to generate" >&2; exit 2; }
PROMPT=(--prompt-bytes "$prompt_bytes" --max-tokens "$max_tokens")
measure stream "$streams"
((idle > 0)) && measure idle "$idle"

awk -F'\t' 'NR > 1 {
  per = $3 > 0 ? ($7 - $5) / $3 : 0
  printf "| %s | %d | %d | %d | %.1f MB / %d | %.1f MB / %d | %.1f MB / %d | %.1f KB |\n",
    ($1 == "stream" ? "open streams" : "idle keep-alive connections"), $2, $3, $4,
    $5 / 1024, $6, $7 / 1024, $8, $9 / 1024, $10, per }
  BEGIN {
    print "| kind | N | open | failed | RSS / fds before | with N open | after closing | RSS per open one |"
    print "|---|---|---|---|---|---|---|---|" }' "$D/results.tsv"
