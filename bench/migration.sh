#!/usr/bin/env bash
# How long an upgrade's first start takes: an embedded file filled by an older build under
# wrk, then this build's first start on it (which migrates it), its second start, and the audit.
#   bench/migration.sh /tmp/cairva-old                 # the new build: build-release/cairva
#   CAIRVA_MIGRATION_SECONDS=60 bench/migration.sh OLD_BIN NEW_BIN
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: bench/migration.sh OLD_BIN [NEW_BIN]" >&2; exit 2; }
OLD=$1
NEW=${2:-$PWD/build-release/cairva}
export CAIRVA_ADMIN_TOKEN=migration-admin-token
. bench/one_gateway.sh
start_one_gateway "$OLD" normal 1 600 "$OLD" serve
CAIRVA_BENCH_KEY=$KEY wrk -t1 -c64 -d"${CAIRVA_MIGRATION_SECONDS:-30}s" -s bench/chat.lua \
  http://127.0.0.1:$GW_PORT | grep "requests in"
kill -TERM "$GW_PID"; wait "$GW_PID" 2>/dev/null || true
echo "old file: schema $(sqlite3 "$work/cairva.db" 'PRAGMA user_version'), $(sqlite3 "$work/cairva.db" 'SELECT COUNT(*) FROM usage_events') events"
# start_ms LOG: starts NEW on the file, prints the milliseconds to /healthz, stops it.
start_ms() {
  local t0 t1 p
  t0=$(date +%s%N)
  "$NEW" serve --config "$work/cairva.toml" > "$work/$1" 2>&1 &
  p=$!; pids+=("$p")
  wait_http "http://127.0.0.1:$GW_PORT/healthz" 2000
  t1=$(date +%s%N)
  kill -TERM "$p"; wait "$p" 2>/dev/null || true
  echo $(( (t1 - t0) / 1000000 ))
}
echo "first start (migrates): $(start_ms first.log) ms"
echo "now schema $(sqlite3 "$work/cairva.db" 'PRAGMA user_version')"
echo "second start: $(start_ms second.log) ms"
"$NEW" audit --config "$work/cairva.toml"
