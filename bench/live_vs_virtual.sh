#!/usr/bin/env bash
# Live vs virtual agreement (issue 5): runs bench/scenarios/agreement.yaml
# live over HTTP against build/arbiter (type: sim engines inside the gateway,
# the config `arbiter-bench gateway-config --sim` writes) and in virtual time
# with the hybrid policy, same seed, and compares P50 and P99 TTFT per class.
# Fails when any differs by more than max(15% of the virtual figure, 5 ms).
#   bash bench/live_vs_virtual.sh ARBITER_BENCH ARBITER WORKDIR [--signals off] [--doc DIR]
#                                 [--scenario FILE]
# --signals off: the same scenario with engine signals off in both modes (the
#                gateway dispatches on its concurrency limit alone).
# --doc DIR: also keep the live report there and write the comparison table
#            into DIR/agreement.md.
# --scenario FILE: another scenario than agreement.yaml (e.g. agreement-overload.yaml,
#            which keeps the gateway's queues full).
set -euo pipefail
bench=$1 arbiter=$2 dir=$3
shift 3
signals=1 doc= scenario=bench/scenarios/agreement.yaml
while (($#)); do
  case $1 in
    --signals) [[ $2 = off ]] || { echo "--signals takes off" >&2; exit 2; }; signals=0; shift ;;
    --doc) doc=$2; shift ;;
    --scenario) scenario=$2; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rm -rf "$dir" && mkdir -p "$dir"
cd "$root"
if ((!signals)); then
  sed 's/max_concurrency: 32}/max_concurrency: 32, signals: false}/' "$scenario" > "$dir/agreement-no-signals.yaml"
  scenario=$dir/agreement-no-signals.yaml
  grep -q 'signals: false}' "$scenario"
fi
source bench/live_gateway.sh
start_gateway "$bench" "$arbiter" "$scenario" "$dir"
"$bench" live --scenario "$scenario" --target "$GATEWAY_URL" --label hybrid \
  --gateway-config "$dir/gateway.yaml" --out "$dir/live"
"$bench" check "$dir/live"
"$bench" virtual --scenario "$scenario" --policies hybrid --out "$dir/virtual"
if [[ -n $doc ]]; then
  [[ $doc = /* ]] || doc=$root/$doc
  rm -rf "$doc" && mkdir -p "$doc"
  cp "$dir/live"/* "$doc/"
fi

python3 - "$dir/live/results.json" "$dir/virtual/results.json" "${doc:+$doc/agreement.md}" <<'PY'
import json, sys
live = json.load(open(sys.argv[1]))["policies"][0]
virt = json.load(open(sys.argv[2]))["policies"][0]
# 15% of the virtual figure, but never less than 5 ms: a class whose TTFT is
# a single ~12 ms engine step would otherwise be judged on a couple of ms,
# the size of the loopback hops (client -> gateway -> engine) and timer
# wake-ups that virtual mode does not charge (docs/arbiter-bench.md).
REL, FLOOR_MS = 0.15, 5.0
rows, ok = [], True
for lc, vc in zip(live["classes"], virt["classes"]):
    for p in ("p50", "p99"):
        l, v = lc["ttft_ms"][p], vc["ttft_ms"][p]
        allowed = max(REL * v, FLOOR_MS)
        good = abs(l - v) <= allowed
        ok &= good
        rows.append(f"| {lc['name']} | {p.upper()} | {lc['ttft_ms']['count']} / {vc['ttft_ms']['count']} "
                    f"| {l:.1f} | {v:.1f} | {(l - v) / v * 100 if v else 0:+.1f}% | {allowed:.1f} "
                    f"| {'yes' if good else '**no**'} |")
table = ("| class | TTFT | completed live / virtual | live ms | virtual ms | live vs virtual "
         "| allowed ms | within |\n|---|---|---:|---:|---:|---:|---:|---|\n" + "\n".join(rows) + "\n")
print(table)
if sys.argv[3]:
    open(sys.argv[3], "w").write(table)
print("live and virtual agree" if ok else "live and virtual do NOT agree", file=sys.stderr)
sys.exit(0 if ok else 1)
PY
