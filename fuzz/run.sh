#!/usr/bin/env bash
# Builds and runs the libFuzzer harnesses (docs/security.md, "Fuzzing").
#   fuzz/run.sh build FUZZ_DIR [LAUNCHER]      configure and build the fuzz tree
#   fuzz/run.sh run FUZZ_DIR SECONDS [NAME...]  run each harness (all by default)
#                                               for SECONDS, one after the other
#                                               (FUZZ_RUNS=N: or until N executions)
# A run starts from the committed seeds (fuzz/corpus/NAME) and the corpus
# grown by earlier runs (FUZZ_DIR/corpus/NAME, where new inputs go); a crash
# or a failed property is saved in FUZZ_DIR/artifacts/ and fails the run.
# One line per harness: executions, executions per second, corpus size.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source_dir="$(dirname "$here")"
mode="$1" fuzz_dir="$2"
shift 2

if [ "$mode" = build ]; then
  launcher="${1:-$(command -v ccache || true)}"
  cmake -S "$source_dir" -B "$fuzz_dir" -G Ninja -DARBITER_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_COMPILER_LAUNCHER="$launcher" >/dev/null
  exec cmake --build "$fuzz_dir" --target arbiter_fuzzers -j "${JOBS:-$(nproc)}"
fi

[ "$mode" = run ] || { echo "usage: $0 build|run FUZZ_DIR ..." >&2; exit 2; }
seconds="$1"
shift
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  names=($(sed -n 's/^set(ARBITER_FUZZERS \(.*\))$/\1/p' "$here/harnesses.cmake"))
fi
mkdir -p "$fuzz_dir/artifacts" "$fuzz_dir/logs"
failed=0
for name in "${names[@]}"; do
  binary="$fuzz_dir/fuzz/fuzz_$name"
  [ -x "$binary" ] || { echo "$name: $binary not built (fuzz/run.sh build $fuzz_dir)" >&2; exit 2; }
  corpus="$fuzz_dir/corpus/$name"
  log="$fuzz_dir/logs/$name.log"
  mkdir -p "$corpus"
  status=0
  extra=()
  # yaml-cpp inputs reach many features, and the entropic schedule's
  # bookkeeping of them then costs more than the run: twice the executions
  # without it.
  [ "$name" = config_yaml ] && extra=(-entropic=0)
  # FUZZ_SEED (ctest's smokes set 1): the same mutations on every run from
  # the same corpus, so a CI run fails on a finding reproducibly, not by
  # chance; `make fuzz` leaves it random.
  [ -n "${FUZZ_SEED:-}" ] && extra+=(-seed="$FUZZ_SEED")
  [ -n "${FUZZ_RUNS:-}" ] && extra+=(-runs="$FUZZ_RUNS")
  # -timeout: an input slower than this (sanitized, on a busy machine) is a
  # finding too. -rss_limit_mb: libFuzzer's default.
  "$binary" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 "${extra[@]}" \
    -artifact_prefix="$fuzz_dir/artifacts/$name-" "$corpus" "$here/corpus/$name" >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  files=$(find "$corpus" "$here/corpus/$name" -type f | wc -l)
  if [ "$status" -ne 0 ]; then
    failed=1
    echo "$name: FAILED (exit $status), log $log:"
    grep -E "ERROR|property failed|SUMMARY|Test unit written" "$log" | head -20
  else
    echo "$name: ${runs:-?} executions (${speed:-?}/s, at most ${seconds} s), corpus $files inputs, no crash"
  fi
done
exit $failed
