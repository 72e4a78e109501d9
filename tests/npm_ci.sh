# Sourced by the tests driven from Node.js (tests/e2e, tests/deploy,
# tests/dashboard), in their folder: `npm_ci NAME [TOOL...]` checks that node,
# npm and the other tools are there (exit 2 otherwise) and installs the
# folder's pinned packages (package-lock.json) when node_modules is missing
# or older than the lock file (exit 1 when npm ci fails). NAME prefixes the
# messages.
npm_ci() {
  local name=$1 tool log
  shift
  for tool in node npm "$@"; do
    command -v "$tool" >/dev/null || { echo "$name: '$tool' is not installed (scripts/install-deps.sh)" >&2; exit 2; }
  done
  if [[ ! -d node_modules || package-lock.json -nt node_modules ]]; then
    if ! log=$(npm ci --no-audit --no-fund --loglevel=error 2>&1); then
      echo "$log" >&2
      echo "$name: npm ci failed" >&2
      exit 1
    fi
    touch node_modules
  fi
}
