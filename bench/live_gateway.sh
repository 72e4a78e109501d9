# Sourced by the live-mode checks (bench/live_smoke.sh, bench/live_vs_virtual.sh):
# starts build/arbiter with the config arbiter-bench writes for a scenario,
# on a free loopback port, and stops it when the script exits.
#   start_gateway ARBITER_BENCH ARBITER SCENARIO WORKDIR
# sets GATEWAY_URL, GATEWAY_ADMIN_URL (/metrics) and GATEWAY_PID.
start_gateway() {
  local bench=$1 arbiter=$2 scenario=$3 dir=$4
  "$bench" gateway-config --scenario "$scenario" --sim --port 0 --out "$dir/gateway.yaml"
  "$arbiter" --config "$dir/gateway.yaml" --check
  rm -f "$dir/port"
  "$arbiter" --config "$dir/gateway.yaml" --port-file "$dir/port" --admin-port-file "$dir/admin-port" \
    > "$dir/gateway.log" 2>&1 &
  GATEWAY_PID=$!
  trap 'kill "$GATEWAY_PID" 2>/dev/null; wait "$GATEWAY_PID" 2>/dev/null' EXIT
  for _ in $(seq 100); do
    [[ -s $dir/port ]] && break
    kill -0 "$GATEWAY_PID" 2>/dev/null || { cat "$dir/gateway.log" >&2; return 1; }
    sleep 0.1
  done
  [[ -s $dir/port ]] || { echo "gateway did not start within 10 s" >&2; return 1; }
  GATEWAY_URL=http://127.0.0.1:$(cat "$dir/port")
  GATEWAY_ADMIN_URL=http://127.0.0.1:$(cat "$dir/admin-port")
}
