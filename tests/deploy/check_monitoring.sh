#!/usr/bin/env bash
# deploy/monitoring against the gateway itself: promtool validates the alert
# rules and runs their unit tests (alerts_test.yaml); then a gateway on
# loopback ports with simulated engines gets a little traffic, and
# check_monitoring.mjs checks every metric name and label the dashboard and
# the rules use against its /metrics, and that it can fail (--self-test).
#
#   bash tests/deploy/check_monitoring.sh <path-to-arbiter-binary>
#
# Installs the locked npm dependencies (package-lock.json) when node_modules
# is missing or older than the lock, as check_kubernetes.sh does.
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 <path-to-arbiter-binary>" >&2; exit 2; }
bin=$(realpath "$1")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$here"
source ../npm_ci.sh
npm_ci monitoring promtool curl

promtool check rules "$root/deploy/monitoring/alerts.yaml"
promtool test rules alerts_test.yaml

tmp=$(mktemp -d)
gw_pid=
trap '[[ -n $gw_pid ]] && kill "$gw_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
# Two tenants of one team (key-2's quota allows one request a minute), prices,
# an alias, adaptive capacity (slot limits), and a model whose engine is a
# closed port (upstream errors, retries).
hash() { printf %s "$1" | sha256sum | cut -d' ' -f1; }
cat >"$tmp/arbiter.yaml" <<YAML
listener: {address: 127.0.0.1, port: 0, threads: 1}
admin: {address: 127.0.0.1, port: 0}
auth: {enabled: true}
tenants:
  - {name: t1, team: team-a, api_key_sha256: [$(hash key-1)], quotas: [{tokens_per_minute: 100000}]}
  - {name: t2, team: team-a, api_key_sha256: [$(hash key-2)], quotas: [{requests_per_minute: 1}]}
prices:
  - {model: m, input_per_million: 1, output_per_million: 2}
adaptive_capacity: {enabled: true}
models:
  - name: m
    degraded: m-small
    backends: [{type: sim, profile: tiny, max_concurrency: 4}]
  - name: m-small
    backends: [{type: sim, profile: tiny, max_concurrency: 4}]
  - name: dead
    backends: [{name: dead-0, url: "http://127.0.0.1:1"}]
aliases:
  - {name: chat, targets: [{model: m, weight: 100}]}
YAML
"$bin" --config "$tmp/arbiter.yaml" --port-file "$tmp/port" --admin-port-file "$tmp/admin.port" \
  >/dev/null 2>"$tmp/gw.log" &
gw_pid=$!
for _ in $(seq 100); do [[ -s $tmp/admin.port ]] && break; sleep 0.1; done
[[ -s $tmp/admin.port ]] || { cat "$tmp/gw.log" >&2; echo "FAIL the gateway did not start" >&2; exit 1; }
gw=http://127.0.0.1:$(cat "$tmp/port") admin=http://127.0.0.1:$(cat "$tmp/admin.port")

expect() {  # expect STATUS KEY PATH [BODY]: one request, and the status it must get
  local got
  got=$(curl -sS -m 30 -o /dev/null -w '%{http_code}' -H "authorization: Bearer $2" \
          -H 'content-type: application/json' ${4:+-d "$4"} "$gw$3")
  [[ $got == "$1" ]] || { echo "FAIL $3 with key $2 answered $got, not $1" >&2; exit 1; }
}
chat='"messages":[{"role":"user","content":"hi"}],"max_tokens":4'
expect 200 key-1 /v1/chat/completions "{\"model\":\"m\",$chat,\"temperature\":0}"
expect 200 key-1 /v1/chat/completions "{\"model\":\"m\",$chat,\"temperature\":0}"   # a cache hit
expect 200 key-1 /v1/chat/completions "{\"model\":\"chat\",$chat,\"stream\":true}"
expect 200 key-1 /v1/completions '{"model":"m","prompt":"x","max_tokens":4}'
expect 401 wrong /v1/chat/completions "{\"model\":\"m\",$chat}"
expect 200 key-2 /v1/chat/completions "{\"model\":\"m\",$chat}"
expect 429 key-2 /v1/chat/completions "{\"model\":\"m\",$chat}"
expect 502 key-1 /v1/chat/completions "{\"model\":\"dead\",$chat}"
expect 404 key-1 /nope
curl -sS -m 10 -o /dev/null -X POST --data-binary 'models: nope' "$admin/admin/config"   # rejected
curl -sS -m 10 -fo "$tmp/metrics" "$admin/metrics"
kill -TERM "$gw_pid"
wait "$gw_pid" || { cat "$tmp/gw.log" >&2; echo "FAIL the gateway did not exit 0 on SIGTERM" >&2; exit 1; }
gw_pid=

node check_monitoring.mjs "$tmp/metrics" "$root/src" "$root/deploy/monitoring" "$root/docs/deployment.md" --self-test
