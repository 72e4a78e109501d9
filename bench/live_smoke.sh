#!/usr/bin/env bash
# CI smoke of live mode: a few seconds of bench/scenarios/smoke.yaml over
# HTTP against build/arbiter (type: sim engines), then `arbiter-bench check`
# (counts add up, percentiles ordered). No timing assertions. The completion
# class types along half its suggestions with typing through on, its answers
# long enough (100-128 tokens, ~0.1 s on the tiny engine) to be running when
# the next keystroke comes, and the gateway must have handed at least one
# running generation to a keystroke (arbiter_typing_through_total{outcome=
# "handed_over"}; usually 10-20 of them).
#   bash bench/live_smoke.sh ARBITER_BENCH ARBITER WORKDIR
set -euo pipefail
bench=$1 arbiter=$2 dir=$3
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rm -rf "$dir" && mkdir -p "$dir"
scenario=$dir/smoke-typing-along.yaml
sed -e "s/traffic: {kind: typing,/traffic: {kind: typing, type_along: 0.5,/" \
    -e "s/output: {dist: uniform, min: 8, max: 64}, file_tokens/output: {dist: uniform, min: 100, max: 128}, file_tokens/" \
    -e "/^  - name: completion$/{n;s/$/\n    scheduler: {typing_through: true}/}" \
  "$root/bench/scenarios/smoke.yaml" > "$scenario"
grep -q "type_along: 0.5" "$scenario" && grep -q "typing_through: true" "$scenario" &&
  grep -q "min: 100, max: 128" "$scenario"
source "$root/bench/live_gateway.sh"
start_gateway "$bench" "$arbiter" "$scenario" "$dir"
"$bench" live --scenario "$scenario" --target "$GATEWAY_URL" --max-s 3 \
  --gateway-config "$dir/gateway.yaml" --out "$dir/live"
"$bench" check "$dir/live"
# Live mode must say what it cannot see rather than print zeros.
grep -q '"utilisation": null' "$dir/live/results.json"
# Typing through happened live: the gateway counts each generation handed over.
curl -s "$GATEWAY_ADMIN_URL/metrics" > "$dir/gateway-metrics.txt"
handed=$(sed -n 's/^arbiter_typing_through_total{class="completion",outcome="handed_over"} //p' \
  "$dir/gateway-metrics.txt")
echo "generations handed over: ${handed:-0}"
grep '^arbiter_typing_through_total' "$dir/gateway-metrics.txt" || true
awk -v handed="${handed:-0}" 'BEGIN { exit !(handed >= 1) }'
