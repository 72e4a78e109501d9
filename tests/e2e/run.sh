#!/usr/bin/env bash
# End-to-end tests: the official `openai` npm client (pinned by
# package-lock.json) against a running arbiter gateway and a fake engine.
#
#   bash tests/e2e/run.sh [--tls] <path-to-arbiter-binary>
#
# --tls: the same tests with the gateway behind TLS 1.3 (a throw-away private
# CA from scripts/make_test_certs.sh, trusted through NODE_EXTRA_CA_CERTS).
#
# Installs the locked dependencies when node_modules is missing or older than
# package-lock.json, then runs every *.test.mjs with node's test runner.
# ARBITER_E2E_KEEP=1 keeps each gateway's temp dir (config, port file).
set -euo pipefail

tls=0
if [[ ${1:-} == --tls ]]; then
  tls=1
  shift
fi
if [[ $# -ne 1 ]]; then
  echo "usage: $0 [--tls] <path-to-arbiter-binary>" >&2
  exit 2
fi
bin=$1
if [[ $bin != /* ]]; then bin="$PWD/$bin"; fi
if [[ ! -x $bin ]]; then
  echo "e2e: arbiter binary not found or not executable: $bin" >&2
  exit 2
fi
export ARBITER_BINARY=$bin

cd "$(dirname "${BASH_SOURCE[0]}")"

if ((tls)); then
  certs=$(mktemp -d /tmp/arbiter-e2e-tls.XXXXXX)
  trap 'rm -rf "$certs"' EXIT
  bash ../../scripts/make_test_certs.sh "$certs"
  export ARBITER_E2E_TLS_DIR=$certs NODE_EXTRA_CA_CERTS=$certs/ca.pem
fi

source ../npm_ci.sh
npm_ci e2e

# Files run in parallel; each test carries its own timeout, and the runner
# bounds every test at 60 s regardless (--test-timeout needs Node >= 20;
# Debian 12's own nodejs is 18, where the per-test timeouts still apply).
flags=(--test --test-reporter=spec)
if (( $(node -p 'process.versions.node.split(".")[0]') >= 20 )); then
  flags+=(--test-timeout=60000)
fi
node "${flags[@]}" ./*.test.mjs
