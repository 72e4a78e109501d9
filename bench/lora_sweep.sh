#!/bin/bash
# The LoRA scenario (bench/scenarios/lora-adapters.yaml) over a grid of its
# knobs, in virtual mode, 60 s each: adapters (4, 16, 64), engine adapter
# slots (max_loras 1, 4, 8), the share of requests naming an adapter (0.3,
# 0.9), the chat rate (12, 24 req/s) and engines serving each adapter (all,
# 2). Prints goodput (requests meeting their SLOs per second) and the share
# of LoRA runs that found their adapter loaded, for direct, hybrid and
# hybrid-no-lora-affinity. Usage: bash bench/lora_sweep.sh [build-dir]
set -euo pipefail
build=${1:-build}
bench=$build/arbiter-bench
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf "%-42s %8s %8s %8s | %7s %7s %7s\n" case direct hybrid no-aff hit-d hit-h hit-n
for adapters in 4 16 64; do for loras in 1 4 8; do for share in 0.3 0.9; do for rate in 12 24; do for reps in 0 2; do
  sed -e "s/max_loras: 4, lora_load_ms: 20/max_loras: $loras, lora_load_ms: 20/" \
      -e "s/lora: {adapters: 16, skew: 1, share: 0.8}/lora: {adapters: $adapters, skew: 1, share: $share, replicas: $reps}/" \
      -e "s/rate: 24,/rate: $rate,/" -e "s/duration_s: 120/duration_s: 60/" \
      bench/scenarios/lora-adapters.yaml > "$out/s.yaml"
  "$bench" virtual --scenario "$out/s.yaml" --out "$out/r" --jobs 2 > /dev/null
  goodput=$(grep "goodput, req/s" "$out/r/report.md" | awk -F'|' '{print $3, $4, $5}')
  hits=$(grep "LoRA runs" "$out/r/report.md" | awk -F'|' '{print $3, $4, $5}')
  # shellcheck disable=SC2086
  printf "%-42s %8s %8s %8s | %7s %7s %7s\n" "a=$adapters loras=$loras share=$share rate=$rate reps=$reps" $goodput $hits
done; done; done; done; done
