#!/usr/bin/env bash
# deploy/kubernetes against the Kubernetes schemas and the gateway itself
# (check_manifests.mjs), then the same checks on broken variants, each of
# which must fail (--self-test).
#
#   bash tests/deploy/check_kubernetes.sh <path-to-arbiter-binary>
#
# Installs the locked npm dependencies (package-lock.json) when node_modules
# is missing or older than the lock, as tests/e2e/run.sh does.
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 <path-to-arbiter-binary>" >&2; exit 2; }
bin=$(realpath "$1")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "deploy: '$tool' is not installed" >&2; exit 2; }
done
if [[ ! -d node_modules || package-lock.json -nt node_modules ]]; then
  if ! log=$(npm ci --no-audit --no-fund --loglevel=error 2>&1); then
    echo "$log" >&2
    echo "deploy: npm ci failed" >&2
    exit 1
  fi
  touch node_modules
fi
exec node check_manifests.mjs "$bin" "$here/../../deploy/kubernetes" --self-test
