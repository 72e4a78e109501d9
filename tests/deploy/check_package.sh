#!/usr/bin/env bash
# `make package`'s Debian package, built from the build tree's binaries:
# its control data (dependencies, conffiles), its files, and the packaged
# gateway answering: extracted into a temp dir (never installed), the
# packaged arbiter-sim as its engine, the packaged config with only its two
# ports changed to free ones.
#
#   bash tests/deploy/check_package.sh <build-dir>
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 <build-dir>" >&2; exit 2; }
build=$(realpath "$1")
for tool in cpack dpkg-deb dpkg-shlibdeps curl; do
  command -v "$tool" >/dev/null || { echo "package: '$tool' is not installed" >&2; exit 2; }
done

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do { kill -9 "$p" && wait "$p"; } 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL $*" >&2; exit 1; }
passed=0
ok() { echo "ok   $*"; passed=$((passed + 1)); }

cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/out" >"$tmp/cpack.log" 2>&1 ||
  { cat "$tmp/cpack.log" >&2; fail "cpack"; }
deb=$(ls "$tmp"/out/arbiter_*.deb)
echo "built $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"

info=$(dpkg-deb --info "$deb")
grep -q '^ Package: arbiter$' <<<"$info" || fail "no Package: arbiter"
depends=$(sed -n 's/^ Depends: //p' <<<"$info")
for lib in libc6 libssl3 libyaml-cpp0.7 libhiredis0.14 libfmt9 libboost-json1.81.0; do
  grep -q "\b$lib\b" <<<"$depends" || fail "Depends lacks $lib: $depends"
done
ok "Depends: $depends"
[[ $(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles) == /etc/arbiter/arbiter.yaml ]] ||
  fail "/etc/arbiter/arbiter.yaml is not the conffile"
ok "conffiles: /etc/arbiter/arbiter.yaml"

contents=$(dpkg-deb --contents "$deb")
for f in ./usr/bin/arbiter ./usr/bin/arbiter-sim ./lib/systemd/system/arbiter.service \
         ./etc/arbiter/arbiter.yaml ./usr/share/doc/arbiter/deployment.md \
         ./usr/share/doc/arbiter/configuration.md ./usr/share/doc/arbiter/copyright \
         ./usr/share/doc/arbiter/examples/production.yaml; do
  grep -q " $f\$" <<<"$contents" || fail "the package lacks $f"
done
grep -q '^-rwxr-xr-x root/root .* ./usr/bin/arbiter$' <<<"$contents" || fail "/usr/bin/arbiter: not root-owned 0755"
ok "files: binaries, unit, conffile, docs"
# lintian where installed (not a dependency: it is large): errors fail,
# warnings are shown (the binaries have no manual pages yet).
if command -v lintian >/dev/null; then
  status=0
  out=$(lintian --fail-on error "$deb" 2>&1) || status=$?
  grep -v 'running with root privileges' <<<"$out" || true
  (( status == 0 )) || fail "lintian reports errors"
  ok "lintian: no errors"
fi

root=$tmp/root
dpkg-deb -x "$deb" "$root"
# The packaged engine simulator stands in for the local vLLM the config names.
"$root/usr/bin/arbiter-sim" --port 0 --port-file "$tmp/sim.port" --model llama-3.1-8b-instruct \
  --step-time-scale 0 2>"$tmp/sim.log" &
pids+=($!)
for _ in $(seq 100); do [[ -s $tmp/sim.port ]] && break; sleep 0.1; done
[[ -s $tmp/sim.port ]] || { cat "$tmp/sim.log" >&2; fail "arbiter-sim did not start"; }
sim_port=$(head -1 "$tmp/sim.port")
sed -e 's/^  port: 8080$/  port: 0/' -e 's/^  port: 9090$/  port: 0/' -e "s|http://127.0.0.1:8000|http://127.0.0.1:$sim_port|" \
  -e "s|path: /var/lib/arbiter/arbiter.db|path: $tmp/arbiter.db|" \
  "$root/etc/arbiter/arbiter.yaml" >"$tmp/arbiter.yaml"
[[ $(diff "$root/etc/arbiter/arbiter.yaml" "$tmp/arbiter.yaml" | grep -c '^>') == 4 ]] ||
  fail "the packaged config no longer has 'port: 8080', the admin 'port: 9090', http://127.0.0.1:8000 and the store's path to replace"
"$root/usr/bin/arbiter" --config "$tmp/arbiter.yaml" --port-file "$tmp/gw.port" --admin-port-file "$tmp/admin.port" \
  >"$tmp/access.log" 2>"$tmp/gw.log" &
gw_pid=$!
pids+=($gw_pid)
for _ in $(seq 100); do [[ -s $tmp/gw.port ]] && break; sleep 0.1; done
[[ -s $tmp/gw.port ]] || { cat "$tmp/gw.log" >&2; fail "the packaged arbiter did not start"; }
gw="http://127.0.0.1:$(cat "$tmp/gw.port")"

[[ $(curl -sS -m 10 "$gw/healthz") == '{"status":"ok"}' ]] || fail "GET /healthz"
ok "packaged gateway: GET /healthz"
admin="http://127.0.0.1:$(cat "$tmp/admin.port")"
[[ $(curl -sS -m 10 -o /dev/null -w '%{http_code}' "$gw/metrics") == 404 ]] || fail "/metrics answered on the API port"
metrics=$(curl -sS -m 10 "$admin/metrics")
grep -q '^arbiter_' <<<"$metrics" || fail "GET /metrics on the admin listener"
ok "packaged gateway: /metrics on the loopback admin listener only"
answer=$(curl -sS -m 30 -H 'content-type: application/json' "$gw/v1/chat/completions" \
  -d '{"model":"llama-3.1-8b-instruct","messages":[{"role":"user","content":"hello"}],"max_tokens":8}')
grep -q '"object":"chat.completion"' <<<"$answer" && grep -q '"finish_reason"' <<<"$answer" ||
  { cat "$tmp/gw.log" >&2; fail "chat completion: $answer"; }
ok "packaged gateway: a chat completion through the packaged arbiter-sim"
# What systemctl stop sends: the gateway drains (nothing in flight) and exits 0.
kill -TERM "$gw_pid"
status=0
wait "$gw_pid" || status=$?
pids=("${pids[@]/$gw_pid}")
(( status == 0 )) || { cat "$tmp/gw.log" >&2; fail "SIGTERM: exit status $status"; }
ok "packaged gateway: drains and exits 0 on SIGTERM"
echo "$passed passed, 0 failed"
