#!/usr/bin/env bash
# Installs every Debian 12 package Arbiter needs to build, test and benchmark.
# Idempotent: installs only what is missing, so `make run` / `make test` can
# call it every time. Node packages (the openai client for e2e tests) come
# from the npm registry, pinned by tests/e2e/package-lock.json and (the
# Kubernetes schemas, the PromQL parser) tests/deploy/package-lock.json, and
# puppeteer-core (the dashboard's browser test) tests/dashboard/package-lock.json.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libssl-dev libyaml-cpp-dev libfmt-dev
  libxxhash-dev  # prompt prefix hashes for prefix-affinity routing (header-only use)
  libhnswlib-dev  # the result cache's semantic index (header-only; docs/cache.md)
  libgoogle-perftools-dev  # tcmalloc_minimal, the gateway's allocator
  libgtest-dev libgmock-dev libbenchmark-dev
  libhiredis-dev  # Redis client for quotas shared across replicas (docs/quotas.md)
  redis-server    # the integration tests start a real one on a free loopback port
  libsqlite3-dev sqlite3  # the usage and audit store (docs/audit.md); the CLI: tests lock and edit a store
  libpq-dev  # the store on PostgreSQL, for several replicas (docs/audit.md)
  postgresql  # the integration tests initdb and start a real server on a free loopback port; the
              # package's own cluster is switched off below
  nginx-light curl procps
  openssl  # scripts/make_test_certs.sh: certificates for the TLS benchmark and e2e run
  chromium  # tests/dashboard: the admin listener's dashboard in a real headless browser
  valgrind strace  # bench/request_cost.sh: instructions and syscalls per request
  python3  # bench scripts: report tables and the live-vs-virtual comparison
  systemd  # systemd-analyze verify of deploy/systemd/arbiter.service (tests/deploy)
  prometheus  # promtool: check and unit-test deploy/monitoring/alerts.yaml (tests/deploy); its
              # server is switched off below (it would take :9090, the admin listener's default)
  dpkg-dev # dpkg-shlibdeps: `make package`'s library dependencies (CPack)
  libclang-rt-14-dev  # libFuzzer (its archive only; the harnesses are built by GCC: fuzz/)
)
# Node.js may already come with its own npm (e.g. a nodesource build, which
# conflicts with Debian's npm package): only ask apt for what is absent.
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
  # Installed here only for promtool: its server, started by the package
  # under systemd, must not hold the admin listener's default port.
  if [[ " ${missing[*]} " == *" prometheus "* ]] && command -v systemctl >/dev/null 2>&1; then
    "${sudo_cmd[@]}" systemctl disable --now prometheus 2>/dev/null || true
  fi
  # Likewise PostgreSQL's default cluster: the tests start servers of their own.
  if [[ " ${missing[*]} " == *" postgresql "* ]] && command -v systemctl >/dev/null 2>&1; then
    "${sudo_cmd[@]}" systemctl disable --now postgresql 2>/dev/null || true
  fi
fi
