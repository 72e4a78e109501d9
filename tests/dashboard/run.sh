#!/usr/bin/env bash
# The admin listener's dashboard in a real headless Chromium (Debian's
# `chromium`), driven by puppeteer-core (pinned by package-lock.json) against
# a gateway with simulated engines and an admin token.
#
#   bash tests/dashboard/run.sh <path-to-arbiter-binary>
#
# ARBITER_CHROMIUM names another browser binary. Installs the locked npm
# dependencies when node_modules is missing or older than package-lock.json,
# as tests/e2e/run.sh does.
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 <path-to-arbiter-binary>" >&2; exit 2; }
bin=$(realpath "$1")
[[ -x $bin ]] || { echo "dashboard: arbiter binary not found or not executable: $bin" >&2; exit 2; }
export ARBITER_BINARY=$bin
export ARBITER_CHROMIUM=${ARBITER_CHROMIUM:-$(command -v chromium || true)}
[[ -x $ARBITER_CHROMIUM ]] || { echo "dashboard: no chromium (scripts/install-deps.sh installs it)" >&2; exit 2; }
cd "$(dirname "${BASH_SOURCE[0]}")"
source ../npm_ci.sh
npm_ci dashboard
# ctest's TIMEOUT bounds the run (--test-timeout needs Node >= 20; Debian 12 has 18).
exec node --test --test-reporter=spec ./*.test.mjs
