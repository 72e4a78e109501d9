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
source ../npm_ci.sh
npm_ci deploy
exec node check_manifests.mjs "$bin" "$here/../../deploy/kubernetes" --self-test
