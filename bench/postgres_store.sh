#!/usr/bin/env bash
# The store writer's rows a second into SQLite and into a real PostgreSQL
# server (Debian's postgresql: initdb into a temporary folder, loopback, a
# free port, fsync off as in the tests) through build/bench/store_bench's
# BM_SqliteWrite and BM_PostgresWrite. Figures for people to read, not a
# pass/fail test (docs/benchmarks.md, "Usage and audit store").
#   bash bench/postgres_store.sh [BUILD_DIR]     (default: build)
set -euo pipefail

BUILD_DIR=${1:-build}
TOOL=$BUILD_DIR/bench/store_bench
[[ -x $TOOL ]] || { echo "postgres-store: $TOOL not built" >&2; exit 1; }
BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
OUT=$(mktemp -d)
AS=()
if [[ $(id -u) -eq 0 ]]; then
  chown postgres: "$OUT"
  AS=(setpriv --reuid=postgres --regid=postgres --init-groups --)
fi
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"${AS[@]}" "$BIN/initdb" --auth=trust --username=arbiter --encoding=UTF8 --locale=C --no-sync -D "$OUT/data" >/dev/null
"${AS[@]}" "$BIN/postgres" -D "$OUT/data" -p "$PORT" -c listen_addresses=127.0.0.1 -c unix_socket_directories= \
  -c fsync=off > "$OUT/postgres.log" 2>&1 &
PG=$!
trap 'kill -QUIT $PG 2>/dev/null; wait $PG 2>/dev/null; rm -rf "$OUT"' EXIT
for _ in $(seq 200); do pg_isready -q -h 127.0.0.1 -p "$PORT" && break; sleep 0.05; done
ARBITER_BENCH_POSTGRES_URL="postgresql://arbiter@127.0.0.1:$PORT/postgres" \
  "$TOOL" --benchmark_filter='BM_(Sqlite|Postgres)Write'
