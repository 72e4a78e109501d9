#!/usr/bin/env bash
# Gateway overhead benchmark (issue 2): a ~1 KB non-streaming chat request
# against a fixed fast upstream on loopback, sent three ways in the same run:
#   direct   load generator -> upstream
#   nginx    load generator -> nginx proxy_pass (keep-alive pool) -> upstream
#   arbiter  load generator -> arbiter -> upstream
# First open loop at a fixed rate (latency, added latency), then closed loop
# (peak throughput). Prints Markdown tables, writes the raw JSON lines and the
# tables under bench/out/, and rewrites the "Gateway overhead" section of
# docs/benchmarks.md. By default (EXTRA_CASES [1]) it also measures, in the
# same interleaved rounds, the configuration users run and the prompts RAG and
# chat history make (issue 17): "nginx+log" and "arbiter+log" (open and closed
# loop), both with their access logs on and written to a file (as ACCESS_LOG=1
# below), and "nginx+64k" and "arbiter+64k" (closed loop), the same
# configuration with a BIG_BODY_BYTES [65536] prompt; every path a process of
# its own. EXTRA_CASES=0: the three paths only.
# TLS=1: nginx and arbiter terminate TLS 1.3 from the
# load generator (a private CA made by scripts/make_test_certs.sh), the
# upstream stays plain; the section is "TLS overhead".
# ACCESS_LOG=1: also nginx and arbiter with their access logs on, to a file
# (nginx's default: the combined format, one write(2) per request; arbiter's
# log.access_file), as paths "nginx+log" and "arbiter+log" in the same
# interleaved rounds; the section is "Access log overhead". BEFORE_ARBITER=PATH
# adds "before+log": that arbiter binary (one built before issue 17: one
# write(2) per line) with its log on, stdout to a file.
# STREAM=1: streamed answers instead (issue 17; the section is "Streaming
# overhead"): the upstream is build/bench/sse_upstream, which answers every
# streaming POST with EVENTS [256] SSE events, one HTTP chunk each. Three
# phases: as fast as it goes (closed loop, CONCURRENCY streams at a time, the
# whole answer in one upstream write: throughput and CPU per event); paced
# like an engine decoding (closed loop, for each STREAMS:TOKENS_PER_S pair of
# PACED [100:50 1000:20]: that many concurrent streams of PACED_EVENTS [32]
# events at that many events/s each, their starts spread over one event
# interval: added TTFT and inter-token latency, CPU per event); and first
# events against plain requests (open loop at TTFT_RATE [200] req/s, TTFT_S
# [5] s a path: a plain request and a stream whose first event the upstream
# sends at once, same body, same paths: the streams' added time to first
# event against the plain requests' added latency). STREAMS=N or
# TOKENS_PER_S=N alone (the older knobs) make PACED one pair from them.
# FRAMING [chunked]: length makes the unpaced answers one Content-Length
# body instead (the events back to back, as an nginx `return` sends them).
# COMPARE_ARBITER=PATH: a second gateway binary measured in the same rounds,
# labelled COMPARE_LABEL [arbiter-compare] (an A/B of two builds).
#
# usage: bash bench/overhead.sh [BUILD_DIR]      (default: build)
# Environment knobs (defaults in brackets): RATE [1000] req/s, OPEN_S [10] and
# CLOSED_S [10] seconds measured per path, split into ROUNDS [5] interleaved
# rounds, WARMUP_S [0.5] unmeasured seconds before each round,
# OPEN_CONNECTIONS [16], CONCURRENCY [32],
# PROXY_THREADS [1] (nginx workers = arbiter listener threads),
# LOADGEN_THREADS [1], UPDATE_DOCS [1], NGINX [/usr/sbin/nginx], TLS [0],
# ACCESS_LOG [0], BODY_BYTES [1024] (the request body's size, a prompt padded to it; nginx
# then buffers bodies up to that size in memory, not in a temporary file).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${1:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR

RATE=${RATE:-1000}
OPEN_S=${OPEN_S:-10}
CLOSED_S=${CLOSED_S:-10}
WARMUP_S=${WARMUP_S:-0.5}
ROUNDS=${ROUNDS:-5}
EXTRA_CASES=${EXTRA_CASES:-1}
BIG_BODY_BYTES=${BIG_BODY_BYTES:-65536}
OPEN_CONNECTIONS=${OPEN_CONNECTIONS:-16}
DEFAULT_CONCURRENCY=32
((${STREAM:-0} == 0)) || DEFAULT_CONCURRENCY=16
CONCURRENCY=${CONCURRENCY:-$DEFAULT_CONCURRENCY}
PROXY_THREADS=${PROXY_THREADS:-1}
LOADGEN_THREADS=${LOADGEN_THREADS:-1}
UPDATE_DOCS=${UPDATE_DOCS:-1}
NGINX=${NGINX:-/usr/sbin/nginx}
TLS=${TLS:-0}
ACCESS_LOG=${ACCESS_LOG:-0}
BEFORE_ARBITER=${BEFORE_ARBITER:-}
BODY_BYTES=${BODY_BYTES:-1024}
STREAM=${STREAM:-0}
EVENTS=${EVENTS:-256}
DEFAULT_PACED="100:50 1000:20"
[[ -z ${STREAMS:-}${TOKENS_PER_S:-} ]] || DEFAULT_PACED="${STREAMS:-100}:${TOKENS_PER_S:-50}"
PACED=${PACED:-$DEFAULT_PACED}
PACED_EVENTS=${PACED_EVENTS:-32}
TTFT_RATE=${TTFT_RATE:-200}
TTFT_S=${TTFT_S:-5}
FRAMING=${FRAMING:-chunked}
COMPARE_ARBITER=${COMPARE_ARBITER:-}
COMPARE_LABEL=${COMPARE_LABEL:-arbiter-compare}
((TLS + ACCESS_LOG + STREAM > 1)) && { echo "overhead.sh: TLS=1, ACCESS_LOG=1 and STREAM=1 are separate runs" >&2; exit 2; }
if ((TLS)); then NAME=tls-overhead; SECTION_TITLE="TLS overhead"
elif ((ACCESS_LOG)); then NAME=access-log-overhead; SECTION_TITLE="Access log overhead"
elif ((STREAM)); then NAME=stream-overhead; SECTION_TITLE="Streaming overhead"
else NAME=overhead; SECTION_TITLE="Gateway overhead"; fi
# The default run's extra paths: access logs on (open and closed loop), a large prompt (closed).
WITH_EXTRAS=$((!TLS && !ACCESS_LOG && !STREAM && EXTRA_CASES))
WITH_LOG=$((ACCESS_LOG || WITH_EXTRAS))

LOADGEN=$BUILD_DIR/bench/loadgen
SSE_UPSTREAM=$BUILD_DIR/bench/sse_upstream
ARBITER=$BUILD_DIR/arbiter
OUT_DIR=$ROOT/bench/out
DOC=$ROOT/docs/benchmarks.md

die() { echo "overhead.sh: $*" >&2; exit 1; }
[[ -x $LOADGEN ]] || die "$LOADGEN not built (cmake --build $BUILD_DIR --target loadgen)"
[[ -x $NGINX ]] || die "$NGINX not found (apt-get install nginx-light)"
((STREAM == 0)) || [[ -x $SSE_UPSTREAM ]] || die "$SSE_UPSTREAM not built (cmake --build $BUILD_DIR --target sse_upstream)"
[[ -z $COMPARE_ARBITER || -x $COMPARE_ARBITER ]] || die "COMPARE_ARBITER=$COMPARE_ARBITER is not an executable"
HAVE_ARBITER=1
if [[ ! -x $ARBITER ]]; then
  echo "overhead.sh: $ARBITER not built: measuring direct and nginx only, docs left alone" >&2
  HAVE_ARBITER=0
fi

TMP=$(mktemp -d /tmp/arbiter-overhead.XXXXXX)
PIDS=()
declare -A PID_OF=()

# Every process this script started goes, whatever way the script ends.
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Starts a command in the background, logs to $TMP/NAME.log; sets PID_OF[NAME].
start() {
  local name=$1
  shift
  "$@" >"$TMP/$name.log" 2>&1 &
  PIDS+=($!)
  PID_OF[$name]=$!
}

wait_port() {
  local name=$1 port=$2 pid=$3
  for _ in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || { cat "$TMP/$name.log" "$TMP"/"$name"*.err 2>/dev/null >&2; die "$name exited at start"; }
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  die "$name did not listen on 127.0.0.1:$port"
}

# Starts arbiter as NAME with $TMP/NAME.yaml; returns once $TMP/NAME.port
# names a port it listens on ($TMP/NAME.admin-port: its admin listener's).
start_arbiter() {
  local name=$1
  start "$name" "$ARBITER" --config "$TMP/$name.yaml" --port-file "$TMP/$name.port" \
    --admin-port-file "$TMP/$name.admin-port"
  for _ in $(seq 200); do
    [[ -s $TMP/$name.port ]] && break
    kill -0 "${PID_OF[$name]}" 2>/dev/null || { cat "$TMP/$name.log" >&2; die "$name exited at start"; }
    sleep 0.05
  done
  [[ -s $TMP/$name.port ]] || die "$name wrote no port file"
  wait_port "$name" "$(tr -dc 0-9 <"$TMP/$name.port")" "${PID_OF[$name]}"
}

render() {  # template output key=value...
  local in=$1 out=$2 expr=()
  shift 2
  for kv in "$@"; do expr+=(-e "s|@${kv%%=*}@|${kv#*=}|g"); done
  sed "${expr[@]}" "$in" >"$out"
}

read -r UP_PORT PROXY_PORT LOG_PROXY_PORT BIG_PROXY_PORT < <("$LOADGEN" free-port 4)

if ((STREAM)); then
  start upstream "$SSE_UPSTREAM" --port "$UP_PORT" --events "$EVENTS"
else
  render "$ROOT/bench/nginx/upstream.conf.in" "$TMP/upstream.conf" PORT="$UP_PORT" TMP="$TMP"
  start upstream "$NGINX" -p "$TMP" -c "$TMP/upstream.conf" -e "$TMP/upstream.err"
fi
wait_port upstream "$UP_PORT" "${PID_OF[upstream]}"

render "$ROOT/bench/nginx/proxy.conf.in" "$TMP/proxy.conf" PORT="$PROXY_PORT" UPSTREAM_PORT="$UP_PORT" \
  WORKERS="$PROXY_THREADS" TMP="$TMP"
CERTS=$TMP/certs
if ((TLS)); then
  bash "$ROOT/scripts/make_test_certs.sh" "$CERTS"
  sed -i "s|listen 127.0.0.1:$PROXY_PORT backlog=4096;|listen 127.0.0.1:$PROXY_PORT ssl backlog=4096; \
ssl_certificate $CERTS/server.pem; ssl_certificate_key $CERTS/server.key; ssl_protocols TLSv1.3;|" "$TMP/proxy.conf"
  grep -q "ssl_protocols TLSv1.3" "$TMP/proxy.conf" || die "nginx TLS listener not configured"
fi
# nginx holds a body of BYTES in memory, not in a temporary file.
body_buffer_fits() {  # CONF BYTES
  local kib=$(( ($2 + 1023) / 1024 + 1 ))
  ((kib <= 16)) || sed -i "s|client_body_buffer_size 16k;|client_body_buffer_size ${kib}k;|" "$1"
}
if ((WITH_EXTRAS)); then  # the large prompts go to proxies of their own, so no path's process serves two kinds
  sed -e "s|listen 127.0.0.1:$PROXY_PORT |listen 127.0.0.1:$BIG_PROXY_PORT |" -e "s|pid $TMP/proxy.pid;|pid $TMP/proxy-big.pid;|" \
    "$TMP/proxy.conf" >"$TMP/proxy-big.conf"
  body_buffer_fits "$TMP/proxy-big.conf" "$BIG_BODY_BYTES"
  start proxy_big "$NGINX" -p "$TMP" -c "$TMP/proxy-big.conf" -e "$TMP/proxy-big.err"
  wait_port proxy_big "$BIG_PROXY_PORT" "${PID_OF[proxy_big]}"
fi
body_buffer_fits "$TMP/proxy.conf" "$BODY_BYTES"
start proxy "$NGINX" -p "$TMP" -c "$TMP/proxy.conf" -e "$TMP/proxy.err"
wait_port proxy "$PROXY_PORT" "${PID_OF[proxy]}"
if ((WITH_LOG)); then
  sed -e "s|listen 127.0.0.1:$PROXY_PORT |listen 127.0.0.1:$LOG_PROXY_PORT |" -e "s|pid $TMP/proxy.pid;|pid $TMP/proxy-log.pid;|" \
    -e "s|access_log off;|access_log $TMP/nginx-access.log;|" "$TMP/proxy.conf" >"$TMP/proxy-log.conf"
  grep -q "access_log $TMP/nginx-access.log;" "$TMP/proxy-log.conf" || die "nginx access log not configured"
  start proxy_log "$NGINX" -p "$TMP" -c "$TMP/proxy-log.conf" -e "$TMP/proxy-log.err"
  wait_port proxy_log "$LOG_PROXY_PORT" "${PID_OF[proxy_log]}"
fi

if ((HAVE_ARBITER)); then
  render "$ROOT/bench/overhead-gateway.yaml.in" "$TMP/arbiter.yaml" UPSTREAM_PORT="$UP_PORT" THREADS="$PROXY_THREADS"
  if ((TLS)); then
    sed -i "s|^listener: {\(.*\)}\$|listener: {\1, tls: {cert_file: \"$CERTS/server.pem\", key_file: \"$CERTS/server.key\"}}|" \
      "$TMP/arbiter.yaml"
    grep -q "tls: {cert_file" "$TMP/arbiter.yaml" || die "arbiter TLS listener not configured"
  fi
  start_arbiter arbiter
  ARBITER_PORT=$(tr -dc 0-9 <"$TMP/arbiter.port")
  if [[ -n $COMPARE_ARBITER ]]; then  # a second build in the same rounds (an A/B)
    cp "$TMP/arbiter.yaml" "$TMP/$COMPARE_LABEL.yaml"
    ARBITER=$COMPARE_ARBITER start_arbiter "$COMPARE_LABEL"
    COMPARE_PORT=$(tr -dc 0-9 <"$TMP/$COMPARE_LABEL.port")
  fi
  if ((WITH_LOG)); then
    sed "s|^log: {access_log: false}\$|log: {access_log: true, access_file: \"$TMP/arbiter-access.log\"}|" \
      "$TMP/arbiter.yaml" >"$TMP/arbiter_log.yaml"
    grep -q "access_file" "$TMP/arbiter_log.yaml" || die "arbiter access log not configured"
    start_arbiter arbiter_log
    LOG_ARBITER_PORT=$(tr -dc 0-9 <"$TMP/arbiter_log.port")
    if [[ -n ${BEFORE_ARBITER:-} ]]; then
      sed "s|^log: {access_log: false}\$|log: {access_log: true}|" "$TMP/arbiter.yaml" >"$TMP/arbiter_before.yaml"
      ARBITER=$BEFORE_ARBITER start_arbiter arbiter_before
      BEFORE_ARBITER_PORT=$(tr -dc 0-9 <"$TMP/arbiter_before.port")
    fi
  fi
  if ((WITH_EXTRAS)); then
    cp "$TMP/arbiter.yaml" "$TMP/arbiter_big.yaml"
    start_arbiter arbiter_big
    BIG_ARBITER_PORT=$(tr -dc 0-9 <"$TMP/arbiter_big.port")
  fi
fi

PATH_=/v1/chat/completions
PROXY_SCHEME=http
# Each path's load generator flags (split on spaces: no value holds one).
PLAIN_FLAGS="--body-bytes $BODY_BYTES"
STREAM_FLAGS="$PLAIN_FLAGS --stream 1 --header x-stream-framing:$FRAMING"
((STREAM == 0)) || PLAIN_FLAGS=$STREAM_FLAGS
declare -A EXTRA=([direct]="$PLAIN_FLAGS" [nginx]="$PLAIN_FLAGS" [arbiter]="$PLAIN_FLAGS")
if ((TLS)); then
  PROXY_SCHEME=https
  EXTRA[nginx]+=" --ca $CERTS/ca.pem"
  EXTRA[arbiter]+=" --ca $CERTS/ca.pem"
fi
declare -A URL=([direct]="http://127.0.0.1:$UP_PORT$PATH_" [nginx]="$PROXY_SCHEME://127.0.0.1:$PROXY_PORT$PATH_")
declare -A CPU=([direct]="--cpu-pid upstream=${PID_OF[upstream]}"
                [nginx]="--cpu-pid proxy=${PID_OF[proxy]} --cpu-pid upstream=${PID_OF[upstream]}")
TARGETS=(direct nginx)
TTFT_TARGETS=()
if ((HAVE_ARBITER)); then
  URL[arbiter]="$PROXY_SCHEME://127.0.0.1:$ARBITER_PORT$PATH_"
  CPU[arbiter]="--cpu-pid proxy=${PID_OF[arbiter]} --cpu-pid upstream=${PID_OF[upstream]}"
  TARGETS+=(arbiter)
  if [[ -n $COMPARE_ARBITER ]]; then
    URL[$COMPARE_LABEL]="$PROXY_SCHEME://127.0.0.1:$COMPARE_PORT$PATH_"
    CPU[$COMPARE_LABEL]="--cpu-pid proxy=${PID_OF[$COMPARE_LABEL]} --cpu-pid upstream=${PID_OF[upstream]}"
    EXTRA[$COMPARE_LABEL]=${EXTRA[arbiter]}
    TARGETS+=("$COMPARE_LABEL")
  fi
fi
OPEN_TARGETS=("${TARGETS[@]}")
if ((WITH_LOG)); then
  EXTRA[nginx+log]=${EXTRA[nginx]} EXTRA[arbiter+log]=${EXTRA[arbiter]}
  URL[nginx+log]="http://127.0.0.1:$LOG_PROXY_PORT$PATH_"
  CPU[nginx+log]="--cpu-pid proxy=${PID_OF[proxy_log]} --cpu-pid upstream=${PID_OF[upstream]}"
  TARGETS=(direct nginx nginx+log)
  if ((HAVE_ARBITER)); then
    URL[arbiter+log]="http://127.0.0.1:$LOG_ARBITER_PORT$PATH_"
    CPU[arbiter+log]="--cpu-pid proxy=${PID_OF[arbiter_log]} --cpu-pid upstream=${PID_OF[upstream]}"
    TARGETS+=(arbiter arbiter+log)
  fi
  if [[ -n ${BEFORE_ARBITER_PORT:-} ]]; then
    EXTRA[before+log]=${EXTRA[arbiter]}
    URL[before+log]="http://127.0.0.1:$BEFORE_ARBITER_PORT$PATH_"
    CPU[before+log]="--cpu-pid proxy=${PID_OF[arbiter_before]} --cpu-pid upstream=${PID_OF[upstream]}"
    TARGETS+=(before+log)
  fi
  ((ACCESS_LOG)) && OPEN_TARGETS=("${TARGETS[@]}")
fi
if ((WITH_EXTRAS)); then  # the same configuration, a large prompt
  EXTRA[nginx+64k]="--body-bytes $BIG_BODY_BYTES" EXTRA[arbiter+64k]="--body-bytes $BIG_BODY_BYTES"
  URL[nginx+64k]="http://127.0.0.1:$BIG_PROXY_PORT$PATH_"
  CPU[nginx+64k]="--cpu-pid proxy=${PID_OF[proxy_big]} --cpu-pid upstream=${PID_OF[upstream]}"
  TARGETS+=(nginx+64k)
  if ((HAVE_ARBITER)); then
    URL[arbiter+64k]="http://127.0.0.1:$BIG_ARBITER_PORT$PATH_"
    CPU[arbiter+64k]="--cpu-pid proxy=${PID_OF[arbiter_big]} --cpu-pid upstream=${PID_OF[upstream]}"
    TARGETS+=(arbiter+64k)
  fi
fi
if ((STREAM)); then  # plain requests and streams whose first event comes at once, side by side
  for t in "${OPEN_TARGETS[@]}"; do
    URL[$t+plain]=${URL[$t]} CPU[$t+plain]=${CPU[$t]} EXTRA[$t+plain]="--body-bytes $BODY_BYTES"
    URL[$t+stream]=${URL[$t]} CPU[$t+stream]=${CPU[$t]}
    EXTRA[$t+stream]="$STREAM_FLAGS --header x-stream-interval-us:20000 --header x-stream-events:4"
    TTFT_TARGETS+=("$t+plain" "$t+stream")
  done
fi
CLOSED_TARGETS=("${TARGETS[@]}")
if ((WITH_EXTRAS)); then  # the log's CPU at a fixed rate too
  for t in nginx+log arbiter+log; do [[ -z ${URL[$t]:-} ]] || OPEN_TARGETS+=("$t"); done
fi

# One request each first: a path that answers wrongly must not be measured.
for t in "${TARGETS[@]}" "${TTFT_TARGETS[@]}"; do
  # shellcheck disable=SC2086  # EXTRA holds flags
  "$LOADGEN" closed --url "${URL[$t]}" --label "$t" ${EXTRA[$t]} --concurrency 1 --duration 0.2 \
    --warmup 0 >"$TMP/check.json" ||
    die "$t: no successful request: $(cat "$TMP/check.json")"
  grep -q '"errors":0,' "$TMP/check.json" || die "$t: errors on the check run: $(cat "$TMP/check.json")"
done

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
mkdir -p "$OUT_DIR"
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
ROUNDS_FILE=$OUT_DIR/$NAME-$STAMP.rounds.jsonl
RESULTS=$OUT_DIR/$NAME-$STAMP.jsonl
: >"$ROUNDS_FILE"
secs() { awk -v t="$1" -v n="$ROUNDS" 'BEGIN { printf "%g", t / n }'; }
# Rounds interleave the paths, each round starting with the next path, so
# background load on a shared machine hits every path alike.
measure() {  # open|closed|paced|ttft ROUNDS_FILE PATH... (paced: closed loop, PACED_STREAMS streams
  local phase=$1 file=$2 mode=closed total=$CLOSED_S warmup=$WARMUP_S per i k t args  # at PACED_RATE events/s)
  shift 2
  local targets=("$@")
  case $phase in
    open) mode=open total=$OPEN_S ;;
    ttft) mode=open total=$TTFT_S ;;
  esac
  per=$(secs "$total")
  if [[ $phase = paced ]]; then  # warm-up and window: one whole stream at least (the ramp included)
    warmup=$(awk -v w="$WARMUP_S" -v n="$PACED_EVENTS" -v r="$PACED_RATE" 'BEGIN { s = (n + 1) / r + 0.25; printf "%g", (s > w ? s : w) }')
    per=$(awk -v p="$per" -v n="$PACED_EVENTS" -v r="$PACED_RATE" 'BEGIN { s = (n + 1) / r; printf "%g", (s > p ? s : p) }')
  fi
  for ((i = 0; i < ROUNDS; i++)); do
    for ((k = 0; k < ${#targets[@]}; k++)); do
      t=${targets[(i + k) % ${#targets[@]}]}
      case $phase in
        open) args=(--rate "$RATE" --connections "$OPEN_CONNECTIONS") ;;
        ttft) args=(--rate "$TTFT_RATE" --connections "$OPEN_CONNECTIONS") ;;
        closed) args=(--concurrency "$CONCURRENCY") ;;
        paced) args=(--concurrency "$PACED_STREAMS" --ramp "$(awk -v r="$PACED_RATE" 'BEGIN { printf "%g", 1 / r }')"
                     --header "x-stream-interval-us: $((1000000 / PACED_RATE))" --header "x-stream-events: $PACED_EVENTS") ;;
      esac
      echo "$phase, round $((i + 1))/$ROUNDS: $t for ${per}s" >&2
      # shellcheck disable=SC2086  # CPU and EXTRA hold several flags
      "$LOADGEN" "$mode" --url "${URL[$t]}" --label "$t" ${EXTRA[$t]} "${args[@]}" \
        --duration "$per" --warmup "$warmup" --threads "$LOADGEN_THREADS" --samples "$TMP/$phase-$t-$i.samples" \
        ${CPU[$t]} >>"$file" ||  # kept: the report shows the round's zero
        echo "overhead.sh: $phase, round $((i + 1)): $t completed no request in its window (an overloaded machine?)" >&2
    done
  done
}
if ((STREAM)); then
  measure closed "$ROUNDS_FILE" "${CLOSED_TARGETS[@]}"
  "$LOADGEN" merge "$ROUNDS_FILE" >"$RESULTS"
  TABLES="As fast as it goes (the upstream writes each whole answer at once): $("$LOADGEN" report "$RESULTS")"
  for pair in $PACED; do
    PACED_STREAMS=${pair%%:*} PACED_RATE=${pair#*:}
    PACED_ROUNDS_FILE=$OUT_DIR/$NAME-$STAMP.paced-$PACED_STREAMS.rounds.jsonl
    PACED_RESULTS=$OUT_DIR/$NAME-$STAMP.paced-$PACED_STREAMS.jsonl
    : >"$PACED_ROUNDS_FILE"
    measure paced "$PACED_ROUNDS_FILE" "${CLOSED_TARGETS[@]}"
    "$LOADGEN" merge "$PACED_ROUNDS_FILE" >"$PACED_RESULTS"
    TABLES+="

Paced like an engine decoding ($PACED_RATE events/s per stream, $PACED_EVENTS events each, the streams' starts \
spread over one event interval): $("$LOADGEN" report "$PACED_RESULTS")

$(python3 "$ROOT/bench/stream_report.py" spread "$PACED_ROUNDS_FILE")"
  done
  TTFT_ROUNDS_FILE=$OUT_DIR/$NAME-$STAMP.ttft.rounds.jsonl
  : >"$TTFT_ROUNDS_FILE"
  measure ttft "$TTFT_ROUNDS_FILE" "${TTFT_TARGETS[@]}"
  "$LOADGEN" merge "$TTFT_ROUNDS_FILE" >"$OUT_DIR/$NAME-$STAMP.ttft.jsonl"
  TABLES+="

$(python3 "$ROOT/bench/stream_report.py" ttft "$OUT_DIR/$NAME-$STAMP.ttft.jsonl")"
else
  measure open "$ROUNDS_FILE" "${OPEN_TARGETS[@]}"
  measure closed "$ROUNDS_FILE" "${CLOSED_TARGETS[@]}"
  "$LOADGEN" merge "$ROUNDS_FILE" >"$RESULTS"
  TABLES=$("$LOADGEN" report "$RESULTS")
fi
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

if ((WITH_LOG && HAVE_ARBITER)); then
  DROPPED=$( (exec 3<>"/dev/tcp/127.0.0.1/$(tr -dc 0-9 <"$TMP/arbiter_log.admin-port")" && printf 'GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' >&3 &&
    timeout 5 cat <&3) | awk '/^arbiter_access_log_dropped_total/ { print $2 }')
  TABLES+=$'\n\n'$(python3 "$ROOT/bench/access_log_report.py" "$RESULTS" "$TMP/nginx-access.log" "$TMP/arbiter-access.log" \
    "${DROPPED:--}" "$TMP/arbiter_before.log")
fi
((WITH_EXTRAS && HAVE_ARBITER)) &&
  TABLES+=$'\n\n'$(python3 "$ROOT/bench/prompt_size_report.py" "$RESULTS" "$BODY_BYTES" "$BIG_BODY_BYTES")
cp "$RESULTS" "$OUT_DIR/$NAME-latest.jsonl"
printf '%s\n' "$TABLES" >"$OUT_DIR/$NAME-$STAMP.md"
cp "$OUT_DIR/$NAME-$STAMP.md" "$OUT_DIR/$NAME-latest.md"
echo
printf '%s\n' "$TABLES"
echo "raw results: $RESULTS (load average before: $LOAD_BEFORE, after: $LOAD_AFTER)" >&2

((HAVE_ARBITER && UPDATE_DOCS)) || exit 0

# The exact command, with any knob that differs from its default.
COMMAND="bash bench/overhead.sh ${BUILD_DIR#"$ROOT"/}"  # relative when inside the checkout
for knob in RATE OPEN_S CLOSED_S WARMUP_S ROUNDS OPEN_CONNECTIONS CONCURRENCY PROXY_THREADS LOADGEN_THREADS TLS ACCESS_LOG \
  BEFORE_ARBITER STREAM EVENTS PACED PACED_EVENTS TTFT_RATE TTFT_S FRAMING COMPARE_ARBITER BODY_BYTES EXTRA_CASES \
  BIG_BODY_BYTES; do
  case "$knob=${!knob}" in
    RATE=1000 | OPEN_S=10 | CLOSED_S=10 | WARMUP_S=0.5 | ROUNDS=5 | OPEN_CONNECTIONS=16 | "CONCURRENCY=$DEFAULT_CONCURRENCY" | \
      PROXY_THREADS=1 | LOADGEN_THREADS=1 | TLS=0 | ACCESS_LOG=0 | BEFORE_ARBITER= | STREAM=0 | EVENTS=256 | \
      "PACED=100:50 1000:20" | PACED_EVENTS=32 | TTFT_RATE=200 | TTFT_S=5 | FRAMING=chunked | COMPARE_ARBITER= | \
      BODY_BYTES=1024 | EXTRA_CASES=1 | BIG_BODY_BYTES=65536) ;;
    *" "*) COMMAND="$knob=\"${!knob}\" $COMMAND" ;;
    *) COMMAND="$knob=${!knob} $COMMAND" ;;
  esac
done
CPU_MODEL=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
REV=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$ROOT" diff --quiet HEAD -- 2>/dev/null || REV="$REV (with uncommitted changes)"

SECTION=$TMP/section.md
if ((TLS)); then
  INTRO="What terminating TLS costs (issue 16): the gateway overhead run below with TLS 1.3
between the load generator and the proxy, nginx (\`ssl_protocols TLSv1.3\`) and arbiter
(\`listener.tls\`) alike, with the same P-256 certificate from a private CA
(scripts/make_test_certs.sh); the upstream and the direct path stay plain, so
added latency here is TLS plus proxying. Connections are kept alive: the handshake
is paid once per connection, in the warm-up; what is measured is record encryption
and decryption per request.

Where arbiter's TLS path costs more than nginx's: a TLS response goes through Asio's
TLS stream as an asynchronous write (a coroutine frame and a trip through the event
loop per response, its pieces copied into one buffer so that they make one record),
where a plain response goes out in line with one \`sendmsg\` (write_now); nginx calls
\`SSL_write\` straight onto its non-blocking socket. Writing records in line is the
next step if the gap matters. The plain path pays one branch per operation for the
stream variant: \`bench/request_cost.sh\` counts 31.8k instructions per plain request after TLS
against 31.4k before (the \"Gateway overhead\" section)."
elif ((ACCESS_LOG)); then
  INTRO="What the access log costs (issue 17): the gateway overhead run below with two more
paths in the same interleaved rounds, nginx and arbiter each with its access log on and
written to a file: nginx's default \`access_log FILE\` (the combined format, ~150 bytes,
one \`write(2)\` per request on the worker), arbiter's \`log: {access_file: FILE}\` (its
JSON line, ~330 bytes, formatted without allocation into a per-thread buffer and written
by one writer thread in batches of 64 KiB or every 100 ms). Target: the log adds <= 1 µs
of arbiter's CPU per request (closed loop, proxy CPU µs/req, \"arbiter+log\" minus
\"arbiter\"), and arbiter with its log reaches >= 0.9x the throughput of nginx with its log.
With BEFORE_ARBITER, \"before+log\" is that binary, an arbiter from before this
access log (one \`write(2)\` per line on the request path), its stdout to a file."
elif ((STREAM)); then
  INTRO="What a streamed answer pays for going through the gateway (issue 17): a ~1 KB
\`POST /v1/chat/completions\` with \`\"stream\":true\` against a fast streaming
upstream (\`build/bench/sse_upstream\`: $EVENTS \`chat.completion.chunk\` events of
~150 bytes and \`data: [DONE]\`; FRAMING=$FRAMING: \`chunked\` is one HTTP chunk per event, as
vLLM sends them, \`length\` one Content-Length body for the whole fast answer, which
nginx passes on as it is and the client reads whole: then TTFT and ITL of the fast phase
compare unlike things, only CPU and throughput do not), sent
directly, through nginx and through arbiter in the same run.
First as fast as it goes (closed loop; the upstream writes each whole answer at once):
responses/s and the proxy's CPU per response and per relayed event (per response /
events per response). Then paced like an engine decoding (closed loop; concurrent
streams:events per second each = $PACED; $PACED_EVENTS events a stream, the streams'
first requests spread over one event interval, the warm-up one whole stream long):
time to first event (TTFT) and the gaps between events (ITL) as the client reads them,
added = the path's percentile minus the direct path's, pooled over the rounds and, to
show the noise, round by round. Last, at a light fixed rate (open loop, $TTFT_RATE
req/s), plain requests and streams (first event at once, then 3 more 20 ms apart)
with the same ~1 KB body through the same paths: a stream's added TTFT against a plain
request's added latency. Targets (issue 17): CPU per event <= 1.2x nginx's and
streamed throughput >= 0.9x nginx's in the same run; added ITL p99 <= 1 ms (the
issue asks for it at 10k streams, which this machine cannot run: docs/benchmarks.md,
\"Streaming at 1k streams\"); added TTFT p50 within 50 µs of the plain request's added
latency."
else
  INTRO="What a request pays for going through the gateway: a ~1 KB non-streaming
\`POST /v1/chat/completions\` against a fixed fast upstream (nginx answering
every request with the same ~1 KB chat completion), sent directly, through
nginx as a reverse proxy, and through arbiter, all in the same run. Targets
(issue 2): arbiter's median added latency <= 100 µs and p99 added latency
<= 1 ms at 1,000 req/s; peak throughput >= 0.8x nginx's."
  ((WITH_EXTRAS)) && INTRO+="

The run also measures, in the same interleaved rounds, what users run (issue 17):
\"nginx+log\" and \"arbiter+log\" (open and closed loop) with their access logs on
and written to a file (nginx's default \`access_log FILE\`, the combined format, one
\`write(2)\` per request; arbiter's \`log: {access_file: FILE}\`, written by one
writer thread in batches), and \"nginx+64k\" and \"arbiter+64k\" (closed loop), the
configuration of \"nginx\" and \"arbiter\" with a $BIG_BODY_BYTES-byte prompt (nginx's
\`client_body_buffer_size\` raised to hold it in memory). Every path has a process of
its own. Targets (issue 17): the access log adds <= 1 µs of arbiter's CPU per request
(set against what nginx's log adds to nginx); arbiter with its log >= 0.9x the
throughput of nginx with its log; a 64 KiB prompt costs <= 1.5x nginx's CPU per
request. In the closed-loop table, \"vs nginx\" sets each \"+log\" or \"+64k\" path
against nginx's path of the same kind. EXTRA_CASES=0 leaves these paths out."
fi
cat >"$SECTION" <<EOF
## $SECTION_TITLE

$INTRO

Measured $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores ($CPU_MODEL), Linux $(uname -r),
nginx $("$NGINX" -v 2>&1 | sed 's|.*nginx/||'), arbiter at $REV; load average
(1, 5, 15 min) $LOAD_BEFORE before and $LOAD_AFTER after the run. Command:

    $COMMAND

(\`make bench\` runs the same through \`bench/run_all.sh\`.)

$TABLES

How it is measured:

- \`build/bench/loadgen\` (bench/tools/loadgen.cpp) is a C++ Asio/Beast
  HTTP/1.1 client over keep-alive connections. Open loop sends on a fixed
  timetable (request *i* at *t0 + i/rate*) whatever the answers do, and
  times each request from its scheduled send time to its full response, so a
  stall is charged to every request it delays (no coordinated omission).
  Closed loop keeps $CONCURRENCY connections busy back to back and counts
  responses completed in the window. Each path is measured in $ROUNDS
  rounds, interleaved with the other paths' rounds (each round opens new
  connections and is preceded by a ${WARMUP_S} s unmeasured warm-up), so a
  burst of load from elsewhere hits all paths alike; the rounds' samples are
  pooled, every sample is kept and percentiles are exact (nearest rank).
- Added latency = the path's percentile minus the direct path's percentile
  from the same run; it includes the proxy's extra loopback hop, which any
  proxy pays.
- nginx (bench/nginx/proxy.conf.in): \`proxy_pass\` to an \`upstream{}\` with
  \`keepalive 64\`, \`proxy_http_version 1.1\`, \`Connection ""\`, access
  log off, \`proxy_buffering off\` (relay as it arrives, like arbiter's
  streaming path; a 1 KB answer fits one buffer, so it makes no measurable
  difference here), request bodies buffered (the default, as arbiter reads
  the whole body before choosing a backend).
- arbiter: one model on the same upstream, \`max_concurrency: 1024\`, auth
  off, access log off. nginx workers = arbiter listener threads =
  $PROXY_THREADS, so both proxies get the same share of the machine.
- The load generator ($LOADGEN_THREADS thread), the proxy and the upstream (1
  worker) share the machine's $(nproc) cores, unpinned. Peak figures are
  therefore relative to each other within one run, not absolute capacity;
  "proxy CPU µs/req" (the proxy's user+system CPU time in the window divided
  by completed requests, from /proc) compares the proxies' cost without
  that caveat. When other work runs on the machine (see the load average
  above), tail latencies show CPU scheduling as much as the proxies: read
  arbiter's figures against nginx's from the same run.
EOF

mkdir -p "$(dirname "$DOC")"
[[ -f $DOC ]] || printf '# Benchmarks\n' >"$DOC"
# Replace the section (up to the next "## " heading) or append it.
awk -v section="$SECTION" -v title="$SECTION_TITLE" '
  function emit() { while ((getline line < section) > 0) print line; close(section); done = 1 }
  $0 ~ "^## " title "[[:space:]]*$" { emit(); skipping = 1; next }
  skipping && /^## / { skipping = 0; print "" }
  !skipping { print }
  END { if (!done) { print ""; emit() } }
' "$DOC" >"$TMP/doc.md"
cp "$TMP/doc.md" "$DOC"
echo "updated $DOC" >&2
