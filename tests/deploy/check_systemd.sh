#!/usr/bin/env bash
# deploy/systemd/arbiter.service: `systemd-analyze verify` finds nothing
# (and does find a misspelled directive in a copy, so the check can fail),
# the hardening directives are there, and TimeoutStopSec leaves the
# packaged config's drain_ms room to finish.
#
#   bash tests/deploy/check_systemd.sh <arbiter-binary> <unit> <config>
# Exit 77 (ctest: skipped) where systemd-analyze is not installed.
set -euo pipefail
[[ $# -eq 3 ]] || { echo "usage: $0 <arbiter-binary> <unit> <config>" >&2; exit 2; }
bin=$(realpath "$1") unit=$2 config=$3
fail() { echo "FAIL $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for d in DynamicUser=yes ProtectSystem=strict ProtectHome=yes PrivateTmp=yes NoNewPrivileges=yes \
         'CapabilityBoundingSet=$' 'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX$' \
         SystemCallFilter=@system-service MemoryDenyWriteExecute=yes KillSignal=SIGTERM LimitNOFILE=; do
  grep -q "^$d" "$unit" || fail "$unit lacks $d"
done
stop_s=$(sed -n 's/^TimeoutStopSec=\([0-9]*\)$/\1/p' "$unit")
drain_ms=$(sed -n 's/^  drain_ms: \([0-9]*\)$/\1/p' "$config")
[[ -n $stop_s && -n $drain_ms ]] || fail "no TimeoutStopSec in $unit or timeouts.drain_ms in $config"
(( stop_s * 1000 > drain_ms )) || fail "TimeoutStopSec=$stop_s s does not exceed drain_ms $drain_ms"
echo "ok   hardening directives; TimeoutStopSec ${stop_s} s > drain_ms ${drain_ms} ms"

if ! command -v systemd-analyze >/dev/null; then
  echo "skipped: systemd-analyze is not installed (Debian package systemd)"
  exit 77
fi
# The unit names /usr/bin/arbiter, which the build tree's binary stands in for.
sed "s|/usr/bin/arbiter|$bin|g" "$unit" >"$tmp/arbiter.service"
out=$(systemd-analyze verify "$tmp/arbiter.service" 2>&1) || fail "systemd-analyze verify: $out"
[[ -z $out ]] || fail "systemd-analyze verify: $out"
echo "ok   systemd-analyze verify"
sed 's/^ProtectSystem=/ProtectSytem=/' "$tmp/arbiter.service" >"$tmp/typo.service"
out=$(systemd-analyze verify "$tmp/typo.service" 2>&1) || true
grep -q "Unknown key 'ProtectSytem'" <<<"$out" || fail "a misspelled directive passed systemd-analyze verify: $out"
echo "ok   a misspelled directive fails"
echo "3 passed, 0 failed"
