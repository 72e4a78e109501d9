#!/usr/bin/env bash
# Deterministic cost of one proxied request, for comparing builds on a noisy
# machine (bench/overhead.sh's wall-clock figures move 10-20% with the
# neighbours; these do not):
#   - user-space instructions per request (callgrind, closed loop, counters
#     zeroed after a warm-up), for arbiter and for the nginx proxy baseline;
#   - syscalls per request at 1,000 req/s (strace -c), for both.
# Same ~1 KB chat request and fixed nginx upstream as bench/overhead.sh.
#
# usage: bash bench/request_cost.sh [BUILD_DIR]     (default: build)
# Environment: SECONDS_MEASURED [3] per figure, NGINX [/usr/sbin/nginx],
# ACCESS_LOG [0]: also "arbiter+log" (log.access_file) and "nginx+log"
# (access_log FILE, combined), and with BEFORE_ARBITER=PATH "before+log":
# that binary (an arbiter from before issue 17, one write(2) per line) with
# its log on, stdout to a file.
# BODY_BYTES [1024] (the request body's size; nginx buffers it in memory),
# ARBITER [BUILD_DIR/arbiter] (another build's binary, to compare),
# ROUNDS [1; 3 with ACCESS_LOG=1]: callgrind runs per proxy (median, and the
# range when more than one); CACHE_SIM [0]: 1 adds callgrind's cache
# simulation and its cycle estimate (bench/request_cost_report.py), for a
# machine whose perf has no cycles counter; KEEP_CALLGRIND=DIR keeps each
# run's callgrind dump there (DIR/<proxy>.<round>.cg, for callgrind_annotate:
# where the instructions go); EXTRA_CONFIG: YAML lines appended to the
# gateway's config (e.g. 'degradation: {enabled: true}', to cost a feature);
# HEADER: one more request header on every request (e.g. 'cache-control:
# max-age=600, no-cache': the result cache keeps every answer and never
# answers from it, a miss each time).
# (@UPSTREAM_PORT@ in either is the fixed upstream's port: e.g. tracing's
# endpoint, which answers its exports 200.)
# VARIANT: YAML lines a second arbiter, "arbiter+variant", has instead of
# EXTRA_CONFIG, to cost a feature against the same build in the same run
# (issue 46's audit: EXTRA_CONFIG='store: {audit: false, path: off.db}'
# VARIANT='store: {path: on.db}'; the stores must differ, both run at once in
# the perf rounds): measured as the access log is, the second table included.
# With ACCESS_LOG=1 (or VARIANT) a second table follows (PERF_ROUNDS [5] > 0): every proxy
# kept running, log off and on, and `perf stat` on each proxy process over
# one fixed-rate round of requests (PERF_RATE [2000] req/s, SECONDS_MEASURED
# each), the proxies' rounds interleaved so that the machine's moods hit all
# alike: instructions, cycles (where the machine exposes hardware counters;
# a VM often does not, and the table says so), the clock rate they imply
# (cycles / task-clock) and task-clock, the CPU time per request; then what
# the log adds, log on minus log off round by round, median and range
# (bench/request_cost_report.py).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${1:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
MEASURE_S=${SECONDS_MEASURED:-3}
NGINX=${NGINX:-/usr/sbin/nginx}
ACCESS_LOG=${ACCESS_LOG:-0}
VARIANT=${VARIANT:-}
LOADGEN=$BUILD_DIR/bench/loadgen
LOADGEN_HEADER=()
[[ -n ${HEADER:-} ]] && LOADGEN_HEADER=(--header "$HEADER")
ARBITER=${ARBITER:-$BUILD_DIR/arbiter}
BODY_BYTES=${BODY_BYTES:-1024}
ROUNDS=${ROUNDS:-$((ACCESS_LOG || ${#VARIANT} ? 3 : 1))}
PERF_ROUNDS=${PERF_ROUNDS:-5}
PERF_RATE=${PERF_RATE:-2000}
PERF=${PERF:-/usr/bin/perf}
for tool in valgrind callgrind_control strace; do
  command -v "$tool" >/dev/null || { echo "request_cost.sh: $tool not found (scripts/install-deps.sh)" >&2; exit 1; }
done
[[ -x $LOADGEN && -x $ARBITER ]] || { echo "request_cost.sh: build $LOADGEN and $ARBITER first" >&2; exit 1; }

TMP=$(mktemp -d /tmp/arbiter-cost.XXXXXX)
PIDS=()
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

read -r UP_PORT PROXY_PORT PROXY_LOG_PORT < <("$LOADGEN" free-port 3)
sed -e "s|@PORT@|$UP_PORT|g" -e "s|@TMP@|$TMP|g" "$ROOT/bench/nginx/upstream.conf.in" >"$TMP/upstream.conf"
"$NGINX" -p "$TMP" -c "$TMP/upstream.conf" -e "$TMP/upstream.err" & PIDS+=($!)
sed -e "s|@UPSTREAM_PORT@|$UP_PORT|g" -e "s|@THREADS@|1|g" "$ROOT/bench/overhead-gateway.yaml.in" >"$TMP/arbiter.yaml"
cp "$TMP/arbiter.yaml" "$TMP/arbiter+variant.yaml"
[[ -n ${EXTRA_CONFIG:-} ]] && printf '%s\n' "${EXTRA_CONFIG//@UPSTREAM_PORT@/$UP_PORT}" >>"$TMP/arbiter.yaml"
[[ -n $VARIANT ]] && printf '%s\n' "${VARIANT//@UPSTREAM_PORT@/$UP_PORT}" >>"$TMP/arbiter+variant.yaml"
# The nginx proxy in the foreground without a master, so that valgrind and
# strace see the process that does the work.
sed -e "s|@PORT@|$PROXY_PORT|g" -e "s|@UPSTREAM_PORT@|$UP_PORT|g" -e "s|@WORKERS@|1|g" -e "s|@TMP@|$TMP|g" \
  "$ROOT/bench/nginx/proxy.conf.in" | { echo "master_process off;"; cat; } >"$TMP/nginx.conf"
BODY_BUFFER_KIB=$(( (BODY_BYTES + 1023) / 1024 + 1 ))
((BODY_BUFFER_KIB > 16)) && sed -i "s|client_body_buffer_size 16k;|client_body_buffer_size ${BODY_BUFFER_KIB}k;|" "$TMP/nginx.conf"
cp "$TMP/arbiter.yaml" "$TMP/before+log.yaml"
sed -i "s|^log: {access_log: false}\$|log: {access_log: true}|" "$TMP/before+log.yaml"
sed "s|^log: {access_log: false}\$|log: {access_log: true, access_file: \"$TMP/arbiter-access.log\"}|" \
  "$TMP/arbiter.yaml" >"$TMP/arbiter+log.yaml"
# Its own port and pid file, so that both nginx proxies can run at once.
sed -e "s|access_log off;|access_log $TMP/nginx-access.log;|" -e "s|127.0.0.1:$PROXY_PORT |127.0.0.1:$PROXY_LOG_PORT |" \
  -e "s|$TMP/proxy.pid|$TMP/proxy+log.pid|" "$TMP/nginx.conf" >"$TMP/nginx+log.conf"

wait_listening() {  # port pid
  for _ in $(seq 200); do
    kill -0 "$2" 2>/dev/null || { echo "request_cost.sh: a process exited at start" >&2; exit 1; }
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "request_cost.sh: nothing listens on $1" >&2; exit 1
}

start_proxy() {  # name [wrapper...]: sets PID and PORT, and PIDOF[name] and PORTOF[name]
  local name=$1; shift
  if [[ $name != nginx* ]]; then
    local binary=$ARBITER
    [[ $name = before* ]] && binary=$BEFORE_ARBITER
    rm -f "$TMP/arbiter.port"
    "$@" "$binary" --config "$TMP/$name.yaml" --port-file "$TMP/arbiter.port" >"$TMP/$name.log" 2>&1 &
    PID=$!
    for _ in $(seq 200); do [[ -s $TMP/arbiter.port ]] && break; sleep 0.1; done
    PORT=$(tr -dc 0-9 <"$TMP/arbiter.port")
  else
    "$@" "$NGINX" -p "$TMP" -c "$TMP/$name.conf" -e "$TMP/proxy.err" >"$TMP/$name.log" 2>&1 &
    PID=$!
    PORT=$PROXY_PORT
    [[ $name = *+log ]] && PORT=$PROXY_LOG_PORT
  fi
  PIDS+=("$PID")
  wait_listening "$PORT" "$PID"
  PIDOF[$name]=$PID
  PORTOF[$name]=$PORT
}
declare -A PIDOF PORTOF
stop_proxy() { kill -TERM "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }
url() { echo "http://127.0.0.1:$PORT/v1/chat/completions"; }
completed() { python3 -c 'import json,sys; print(json.load(sys.stdin)["completed"])'; }

if ((${CACHE_SIM:-0})); then
  echo "| proxy | instructions/request; ~estimated cycles | of which arbiter's access log | syscalls/request at 1000 req/s |"
else
  echo "| proxy | instructions/request | of which arbiter's access log | syscalls/request at 1000 req/s |"
fi
echo "|---|---:|---:|---:|"
NAMES=(arbiter nginx)
[[ -n $VARIANT ]] && NAMES=(arbiter arbiter+variant nginx)
if ((ACCESS_LOG)); then
  NAMES=(arbiter arbiter+log)
  [[ -n ${BEFORE_ARBITER:-} ]] && NAMES+=(before+log)
  NAMES+=(nginx nginx+log)
fi
median_range() {  # decimals values...: "median" or "median (min-max)", in thousands
  local decimals=$1; shift
  printf '%s\n' "$@" | sort -n | awk -v d="$decimals" '{ v[NR] = $1 } END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    f = "%." d "f"
    if (NR > 1) printf f "k (" f "-" f "k)", m / 1000, v[1] / 1000, v[NR] / 1000; else printf f "k", m / 1000 }'
}

# Besides each run's instructions, those inside the access log's own
# functions, inclusive: the observer's on_complete on the request thread
# (formatting, and the copy into the writer's buffer under its mutex) and the
# writer thread's loop (its write(2)s are kernel time: the syscall column).
# Exact, where a whole request's total moves by +-0.6k between runs with how
# the requests interleave. With CACHE_SIM=1 callgrind also simulates the
# caches, and both figures get an estimated-cycles twin.
CALLGRIND=(valgrind --tool=callgrind)
((${CACHE_SIM:-0})) && CALLGRIND+=(--cache-sim=yes)
per_request_of() { awk -v v="$1" -v n="$2" 'BEGIN { printf "%.0f", v / n }'; }

for name in "${NAMES[@]}"; do
  per_request=()
  log_per_request=()
  cycles_per_request=()
  log_cycles_per_request=()
  for _ in $(seq "$ROUNDS"); do
    start_proxy "$name" "${CALLGRIND[@]}" --callgrind-out-file="$TMP/$name.cg"
    "$LOADGEN" closed "${LOADGEN_HEADER[@]}" --body-bytes "$BODY_BYTES" --url "$(url)" --concurrency 8 --duration 1 --warmup 0.5 >/dev/null
    callgrind_control -z "$PID" >/dev/null 2>&1
    n=$("$LOADGEN" closed "${LOADGEN_HEADER[@]}" --body-bytes "$BODY_BYTES" --url "$(url)" --concurrency 8 --duration "$MEASURE_S" --warmup 0 | completed)
    callgrind_control -d "$PID" >/dev/null 2>&1
    sleep 0.5
    dump=$(ls -t "$TMP/$name".cg* | head -1)
    read -r ir cycles log_ir log_cycles < <(python3 "$ROOT/bench/request_cost_report.py" callgrind "$dump")
    [[ -n ${KEEP_CALLGRIND:-} ]] && mkdir -p "$KEEP_CALLGRIND" && cp "$dump" "$KEEP_CALLGRIND/$name.${#per_request[@]}.cg"
    stop_proxy
    rm -f "$TMP/$name".cg*
    per_request+=("$(per_request_of "$ir" "$n")")
    cycles_per_request+=("$(per_request_of "$cycles" "$n")")
    log_per_request+=("$(per_request_of "$log_ir" "$n")")
    log_cycles_per_request+=("$(per_request_of "$log_cycles" "$n")")
  done
  log_column=-
  [[ $name = arbiter+log || $name = before+log ]] && log_column=$(median_range 2 "${log_per_request[@]}")
  if ((${CACHE_SIM:-0})); then
    ir_column="$(median_range 1 "${per_request[@]}"); ~$(median_range 1 "${cycles_per_request[@]}")"
    [[ $log_column = - ]] || log_column="$log_column; ~$(median_range 2 "${log_cycles_per_request[@]}")"
  else
    ir_column=$(median_range 1 "${per_request[@]}")
  fi

  start_proxy "$name"
  "$LOADGEN" open "${LOADGEN_HEADER[@]}" --body-bytes "$BODY_BYTES" --url "$(url)" --rate 1000 --connections 16 --duration 0.5 --warmup 0.2 >/dev/null
  strace -f -c -o "$TMP/$name.strace" -p "$PID" 2>/dev/null &
  tracer=$!
  sleep 0.5
  m=$("$LOADGEN" open "${LOADGEN_HEADER[@]}" --body-bytes "$BODY_BYTES" --url "$(url)" --rate 1000 --connections 16 --duration "$MEASURE_S" --warmup 0 | completed)
  kill -INT "$tracer"; wait "$tracer" 2>/dev/null || true
  calls=$(awk '$NF == "total" {print $4}' "$TMP/$name.strace")
  stop_proxy
  awk -v name="$name" -v ir="$ir_column" -v own="$log_column" -v calls="$calls" -v m="$m" \
    'BEGIN { printf "| %s | %s | %s | %.1f |\n", name, ir, own, calls / m }'
done
(((ACCESS_LOG || ${#VARIANT}) && PERF_ROUNDS > 0)) || exit 0

# perf stat per proxy process, log off and on, rounds interleaved.
[[ -x $PERF ]] || { echo "request_cost.sh: $PERF not found (linux-perf)" >&2; exit 1; }
for name in "${NAMES[@]}"; do start_proxy "$name"; done
echo "proxy	round	requests	instructions	cycles	task_clock_ms" >"$TMP/perf.tsv"
REVERSED=()
for ((i = ${#NAMES[@]} - 1; i >= 0; i--)); do REVERSED+=("${NAMES[i]}"); done
for round in $(seq "$PERF_ROUNDS"); do
  order=("${NAMES[@]}")
  ((round % 2)) || order=("${REVERSED[@]}")  # every other round backwards: no path always runs first
  for name in "${order[@]}"; do
    PORT=${PORTOF[$name]}
    # New connections, warmed, then counted from before the first measured
    # request to after the last.
    "$LOADGEN" open "${LOADGEN_HEADER[@]}" --body-bytes "$BODY_BYTES" --url "$(url)" --rate "$PERF_RATE" --connections 16 --duration 0.3 --warmup 0 >/dev/null
    "$PERF" stat -x, -e instructions,cycles,task-clock -p "${PIDOF[$name]}" -o "$TMP/perf.out" &
    counter=$!
    sleep 0.2
    n=$("$LOADGEN" open "${LOADGEN_HEADER[@]}" --body-bytes "$BODY_BYTES" --url "$(url)" --rate "$PERF_RATE" --connections 16 --duration "$MEASURE_S" --warmup 0 | completed)
    kill -INT "$counter"; wait "$counter" 2>/dev/null || true
    awk -F, -v name="$name" -v round="$round" -v n="$n" '
      $3 ~ /^instructions/ { ins = $1 } $3 ~ /^cycles/ { cyc = $1 } $3 ~ /^task-clock/ { ms = $1 }
      END { printf "%s\t%s\t%s\t%s\t%s\t%s\n", name, round, n, ins, cyc, ms }' "$TMP/perf.out" >>"$TMP/perf.tsv"
  done
done
echo
echo "perf stat on the proxy process, $PERF_ROUNDS interleaved rounds of $MEASURE_S s at $PERF_RATE req/s (median and range over rounds):"
echo
python3 "$ROOT/bench/request_cost_report.py" "$TMP/perf.tsv"
echo
((ACCESS_LOG)) || exit 0
echo "Lines in the access logs: nginx $(wc -l <"$TMP/nginx-access.log"), arbiter $(wc -l <"$TMP/arbiter-access.log")" \
  "(every request, warm-ups included)."
