#!/usr/bin/env bash
# A result-cache hit against nginx serving a static answer of the same size
# (issue 44: a hit at >= 0.9x nginx's rate). The gateway (one I/O thread)
# answers every request from its cache: the load generator's ~1 KB chat
# body with `cache-control: max-age=600` (which opts a sampled request in),
# filled once from the fixed upstream (bench/nginx/upstream.conf.in). The
# baseline is that upstream itself (one nginx worker, `return 200` of the
# same ~1 KB chat completion). Closed loop, as fast as each goes, the two
# interleaved round by round so the machine's moods hit both alike; the
# ratio per round, its median and range.
#
# usage: bash bench/cache_hit.sh [BUILD_DIR]     (default: build)
# Environment: ROUNDS [5], SECONDS_MEASURED [3] per round and server,
# CONCURRENCY [32], NGINX [/usr/sbin/nginx].
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${1:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
ROUNDS=${ROUNDS:-5}
MEASURE_S=${SECONDS_MEASURED:-3}
CONCURRENCY=${CONCURRENCY:-32}
NGINX=${NGINX:-/usr/sbin/nginx}
LOADGEN=$BUILD_DIR/bench/loadgen
ARBITER=$BUILD_DIR/arbiter
[[ -x $LOADGEN && -x $ARBITER ]] || { echo "cache_hit.sh: build $LOADGEN and $ARBITER first" >&2; exit 1; }

TMP=$(mktemp -d /tmp/arbiter-cache-hit.XXXXXX)
PIDS=()
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

read -r UP_PORT < <("$LOADGEN" free-port 1)
sed -e "s|@PORT@|$UP_PORT|g" -e "s|@TMP@|$TMP|g" "$ROOT/bench/nginx/upstream.conf.in" >"$TMP/upstream.conf"
"$NGINX" -p "$TMP" -c "$TMP/upstream.conf" -e "$TMP/upstream.err" & PIDS+=($!)
sed -e "s|@UPSTREAM_PORT@|$UP_PORT|g" -e "s|@THREADS@|1|g" "$ROOT/bench/overhead-gateway.yaml.in" >"$TMP/arbiter.yaml"
"$ARBITER" --config "$TMP/arbiter.yaml" --port-file "$TMP/arbiter.port" >"$TMP/arbiter.log" 2>&1 & PIDS+=($!)
for _ in $(seq 200); do [[ -s $TMP/arbiter.port ]] && break; sleep 0.1; done
GW_PORT=$(tr -dc 0-9 <"$TMP/arbiter.port")
for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$UP_PORT") 2>/dev/null && break; sleep 0.1; done

HEADER='cache-control: max-age=600'
rate() {  # url seconds warmup
  "$LOADGEN" closed --header "$HEADER" --url "$1" --concurrency "$CONCURRENCY" --duration "$2" --warmup "$3" |
    python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["throughput_rps"] if r["errors"] == 0 else "errors")'
}
GW_URL="http://127.0.0.1:$GW_PORT/v1/chat/completions"
NGINX_URL="http://127.0.0.1:$UP_PORT/v1/chat/completions"
# The fill: one request, then every one hits.
rate "$GW_URL" 0.5 0.2 >/dev/null
echo "| round | nginx static (req/s) | arbiter cache hit (req/s) | ratio |"
echo "|---:|---:|---:|---:|"
ratios=()
for r in $(seq "$ROUNDS"); do
  n=$(rate "$NGINX_URL" "$MEASURE_S" 0.5)
  a=$(rate "$GW_URL" "$MEASURE_S" 0.5)
  ratio=$(python3 -c "print(f'{$a / $n:.3f}')")
  ratios+=("$ratio")
  echo "| $r | $n | $a | $ratio |"
done
python3 - "${ratios[@]}" <<'PY'
import statistics, sys
v = sorted(float(x) for x in sys.argv[1:])
print(f"\nratio median {statistics.median(v):.3f} (range {v[0]:.3f}-{v[-1]:.3f}) over {len(v)} rounds")
PY
