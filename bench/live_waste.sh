#!/usr/bin/env bash
# Live vs virtual engine waste (issue 12): a scenario (default cancel-storm)
# through build/arbiter in front of separate arbiter-sim engines (one port
# each, so their /metrics can be read), and the same scenario in virtual
# time under hybrid. The engine work computed for cancelled and superseded
# requests, net of what a later request reused from the prefix cache, is
# read from the simulators' counters (arbiter_sim_wasted_tokens_total,
# arbiter_sim_wasted_tokens_reused_total, arbiter_sim_prefill_tokens_computed_total,
# vllm:generation_tokens_total) and compared with the virtual run's figure.
# Fails when the net waste shares differ by more than 15% of the virtual one.
# Also printed, live against virtual: generations inherited by typing through
# (live: the gateway's arbiter_typing_through_total{outcome="handed_over"},
# with its refusals by outcome; virtual: the report's typed_through), each
# class's P50/P99 TTFT and its client-visible errors (rejected + dropped).
#   bash bench/live_waste.sh ARBITER_BENCH ARBITER ARBITER_SIM WORKDIR [SCENARIO]
set -euo pipefail
bench=$1 arbiter=$2 sim=$3 dir=$4
scenario=${5:-bench/scenarios/cancel-storm.yaml}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
rm -rf "$dir" && mkdir -p "$dir"
engine=$(grep -m1 '^engine:' "$scenario")
profile=$(sed -E 's/.*profile: *([A-Za-z0-9._-]+).*/\1/' <<< "$engine")
count=$(sed -E 's/.*count: *([0-9]+).*/\1/' <<< "$engine")
"$sim" --port 0 --port-file "$dir/sim.ports" --engines "$count" --profile "$profile" \
  --model arbiter-bench > "$dir/sim.log" 2>&1 &
sim_pid=$!
cleanup() {
  kill "${gateway_pid:-}" "$sim_pid" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 100); do [[ -f $dir/sim.ports && $(wc -l < "$dir/sim.ports") -ge $count ]] && break; sleep 0.1; done
urls=$(sed 's#^#http://127.0.0.1:#' "$dir/sim.ports" | paste -sd,)
"$bench" gateway-config --scenario "$scenario" --engines-url "$urls" --port 0 --out "$dir/gateway.yaml"
"$arbiter" --config "$dir/gateway.yaml" --port-file "$dir/port" --admin-port-file "$dir/admin-port" \
  > "$dir/gateway.log" 2>&1 &
gateway_pid=$!
for _ in $(seq 100); do [[ -s $dir/port ]] && break; sleep 0.1; done
[[ -s $dir/port ]] || { cat "$dir/gateway.log" >&2; exit 1; }
"$bench" live --scenario "$scenario" --target "http://127.0.0.1:$(cat "$dir/port")" --label hybrid \
  --gateway-config "$dir/gateway.yaml" --out "$dir/live"
sleep 2  # the last aborts reach the engines
for port in $(cat "$dir/sim.ports"); do curl -s "http://127.0.0.1:$port/metrics"; done > "$dir/sim-metrics.txt"
curl -s "http://127.0.0.1:$(cat "$dir/admin-port")/metrics" > "$dir/gateway-metrics.txt"
"$bench" virtual --scenario "$scenario" --policies hybrid --out "$dir/virtual"
python3 - "$dir/sim-metrics.txt" "$dir/virtual/results.json" "$dir/gateway-metrics.txt" \
  "$dir/live/results.json" <<'PY'
import json, re, sys
def samples(path):
    for line in open(path):
        m = re.match(r'^([a-zA-Z_:]+)(\{[^}]*\})? ([0-9.eE+-]+)$', line.strip())
        if m:
            yield m.group(1), m.group(2) or "", float(m.group(3))
sums = {}
for name, _, value in samples(sys.argv[1]):
    sums[name] = sums.get(name, 0) + value
typing = {}
for name, labels, value in samples(sys.argv[3]):
    if name == "arbiter_typing_through_total":
        outcome = re.search(r'outcome="([^"]*)"', labels).group(1)
        typing[outcome] = typing.get(outcome, 0) + value
wasted = sums.get("arbiter_sim_wasted_tokens_total", 0)
reused = sums.get("arbiter_sim_wasted_tokens_reused_total", 0)
work = sums.get("arbiter_sim_prefill_tokens_computed_total", 0) + sums.get("vllm:generation_tokens_total", 0)
live_net = (wasted - reused) / work if work else 0
e = json.load(open(sys.argv[2]))["policies"][0]["engine"]
virt_net = (e["wasted_cancel_tokens"] - e["reused_cancel_tokens"]) / e["work_tokens"]
virt_gross = e["wasted_cancel_tokens"] / e["work_tokens"]
live_gross = wasted / work if work else 0
diff = (live_net - virt_net) / virt_net if virt_net else 0
print(f"| figure | live | virtual |\n|---|---:|---:|")
print(f"| engine work (tokens) | {work:.0f} | {e['work_tokens']} |")
print(f"| wasted, gross | {live_gross:.2%} | {virt_gross:.2%} |")
print(f"| wasted, net of reuse | {live_net:.2%} | {virt_net:.2%} |")
refused = ", ".join(f"{k} {v:.0f}" for k, v in sorted(typing.items()) if k != "handed_over")
print(f"| generations inherited | {typing.get('handed_over', 0):.0f} (otherwise: {refused or 'none'}) | {e['typed_through']} |")
live_classes = json.load(open(sys.argv[4]))["policies"][0]["classes"]
virt_classes = {c["name"]: c for c in json.load(open(sys.argv[2]))["policies"][0]["classes"]}
def errors(c):
    return c["outcomes"]["rejected"] + c["outcomes"]["dropped"]
for c in live_classes:
    v = virt_classes[c["name"]]
    print(f"| {c['name']} TTFT P50 / P99 (ms) | {c['ttft_ms']['p50']:.0f} / {c['ttft_ms']['p99']:.0f} "
          f"| {v['ttft_ms']['p50']:.0f} / {v['ttft_ms']['p99']:.0f} |")
    print(f"| {c['name']} client-visible errors | {errors(c)} of {c['generated']} | {errors(v)} of {v['generated']} |")
print(f"net waste live vs virtual: {diff:+.1%} (allowed 15%)")
sys.exit(0 if abs(diff) <= 0.15 else 1)
PY
