# Shared by bench/chaos.sh and bench/soak.sh (sourced, not run): real
# arbiter-sim processes on ephemeral loopback ports, one engine each, behind
# a real build/arbiter; faults through each simulator's POST /admin/faults,
# or by killing and restarting its process on its port.
#
# The sourcing script sets: D (the run's folder), SIM, BENCH, ARBITER (the
# binaries), ENGINES, PROFILE, NUM_BLOCKS, FIRST_BYTE_MS, STREAM_IDLE_MS,
# and T0 (unix time the load started) before calling `at`.

PIDS=()  # every process this script started and has not yet reaped
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT
forget() { local p=$1 i; for i in "${!PIDS[@]}"; do [[ ${PIDS[$i]} == "$p" ]] && unset 'PIDS[i]'; done; return 0; }

now() { date +%s.%N; }
# Sleeps until T seconds after the drill's load started (T0).
at() { sleep "$(awk -v t0="$T0" -v now="$(now)" "BEGIN { d = t0 + ($1) - now; print (d > 0 ? d : 0) }")"; }
event() { echo "$(now) $*" >> "$D/events.tsv"; }  # unix time, kind, details

wait_file() {  # FILE SECONDS PID: until FILE is non-empty, PID alive
  local i
  for ((i = 0; i < $2 * 20; ++i)); do
    [[ -s $1 ]] && return 0
    kill -0 "$3" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

# start_sim I [PORT [FLAGS...]]: engine I as its own arbiter-sim process
# (PORT 0: ephemeral; a restart passes the old one).
start_sim() {
  local i=$1 port=${2:-0}
  shift $(($# < 2 ? $# : 2))
  rm -f "$D/sim$i.port"
  "$SIM" --port "$port" --port-file "$D/sim$i.port" --engines 1 --profile "$PROFILE" \
    --model arbiter-bench --num-blocks "$NUM_BLOCKS" --seed "$i" --drain-s 4 "$@" >> "$D/sim$i.log" 2>&1 &
  SIM_PID[$i]=$!
  disown "${SIM_PID[$i]}"  # bash still reaps it, without a "Killed" line when a drill kills it
  PIDS+=("${SIM_PID[$i]}")
  wait_file "$D/sim$i.port" 10 "${SIM_PID[$i]}" || { echo "chaos: sim $i did not start" >&2; cat "$D/sim$i.log" >&2; return 1; }
  SIM_PORT[$i]=$(head -1 "$D/sim$i.port")
  SIM_INSTANCE[$i]=$((${SIM_INSTANCE[$i]:--1} + 1))
}
sim_url() { echo "http://127.0.0.1:${SIM_PORT[$1]}"; }
# The engine's /metrics as this instance of the process last showed them.
scrape_sim() { curl -s --max-time 2 "$(sim_url "$1")/metrics" > "$D/sim$1.${SIM_INSTANCE[$1]}.metrics" || true; }
snapshot() {  # NAME: every engine's /metrics now
  event snapshot "$1"
  for ((i = 0; i < ENGINES; ++i)); do
    curl -s --max-time 2 "$(sim_url "$i")/metrics" > "$D/snap-$1-sim$i.metrics" || true
  done
  event snapshot-done "$1"
}
fault() {  # I JSON
  curl -s --max-time 2 -d "$2" "$(sim_url "$1")/admin/faults" > /dev/null
  event fault "sim$1" "$2"
}
stop_pid() {  # PID SIGNAL: signals PID and waits (at most 10 s) until it is gone
  kill "-$2" "$1" 2>/dev/null || true
  local i
  for ((i = 0; i < 200; ++i)); do kill -0 "$1" 2>/dev/null || break; sleep 0.05; done
  forget "$1"
}
kill_sim() {  # I SIGNAL: stops engine I (its metrics scraped just before)
  scrape_sim "$1"
  event "kill-$2" "sim$1"
  stop_pid "${SIM_PID[$1]}" "$2"
  event exited "sim$1"
}
restart_sim() {  # I [FLAGS...]: on the same port
  local i=$1
  shift
  start_sim "$i" "${SIM_PORT[$i]}" "$@"
  event restarted "sim$i" "$*"
}

start_gateway() {  # SCENARIO
  local urls
  urls=$(for ((i = 0; i < ENGINES; ++i)); do sim_url "$i"; done | paste -sd,)
  "$BENCH" gateway-config --scenario "$1" --engines-url "$urls" --port 0 --out "$D/gateway.yaml" 2> /dev/null
  # Backends named sim0.. (metrics, x-arbiter-backend); resumable chat
  # (arbiter-sim takes continue_final_message, as vLLM does); the time-outs.
  awk -v fb="$FIRST_BYTE_MS" -v idle="$STREAM_IDLE_MS" '
    /^ *- \{url: / { sub(/\{url: /, "{name: sim" n++ ", continue_final_message: true, url: ") }
    { print }
    END { print "timeouts: {upstream_first_byte_ms: " fb ", stream_idle_ms: " idle "}" }' \
    "$D/gateway.yaml" > "$D/gateway.yaml.new" && mv "$D/gateway.yaml.new" "$D/gateway.yaml"
  "$ARBITER" --config "$D/gateway.yaml" --check > /dev/null
  rm -f "$D/gateway.port"
  "$ARBITER" --config "$D/gateway.yaml" --port-file "$D/gateway.port" --admin-port-file "$D/gateway.admin-port" \
    > "$D/gateway.log" 2>&1 &
  GATEWAY_PID=$!
  PIDS+=("$GATEWAY_PID")
  wait_file "$D/gateway.port" 10 "$GATEWAY_PID" || { echo "chaos: gateway did not start" >&2; cat "$D/gateway.log" >&2; return 1; }
  GATEWAY_URL=http://127.0.0.1:$(cat "$D/gateway.port")
  GATEWAY_ADMIN_URL=http://127.0.0.1:$(cat "$D/gateway.admin-port")  # /metrics
  sleep 0.3  # a first scrape of every engine
}

