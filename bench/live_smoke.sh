#!/usr/bin/env bash
# CI smoke of live mode: a few seconds of bench/scenarios/smoke.yaml over
# HTTP against build/arbiter (type: sim engines), then `arbiter-bench check`
# (counts add up, percentiles ordered). No timing assertions.
#   bash bench/live_smoke.sh ARBITER_BENCH ARBITER WORKDIR
set -euo pipefail
bench=$1 arbiter=$2 dir=$3
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rm -rf "$dir" && mkdir -p "$dir"
source "$root/bench/live_gateway.sh"
start_gateway "$bench" "$arbiter" "$root/bench/scenarios/smoke.yaml" "$dir"
"$bench" live --scenario "$root/bench/scenarios/smoke.yaml" --target "$GATEWAY_URL" --max-s 3 \
  --gateway-config "$dir/gateway.yaml" --out "$dir/live"
"$bench" check "$dir/live"
# Live mode must say what it cannot see rather than print zeros.
grep -q '"utilisation": null' "$dir/live/results.json"
