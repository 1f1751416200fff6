#!/usr/bin/env bash
# A throw-away PostgreSQL 15 cluster for the tests: start | stop | url | status.
# Data lives in a temporary folder; the state file remembers it so that start, url and
# stop work across invocations. Idempotent. Run as root, the server runs as `postgres`.
set -euo pipefail

PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"
STATE_DIR="${CAIRVA_PG_STATE_DIR:-/tmp/cairva-pg-test}"
STATE_FILE="$STATE_DIR/env"
DB_NAME="cairva_test"
START_TIMEOUT_S=30

die() { echo "pg-test-cluster: $*" >&2; exit 1; }

as_pg() {
  if [ "$(id -u)" = "0" ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

load_state() {
  PGDATA_DIR="" PGPORT=""
  if [ -f "$STATE_FILE" ]; then
    # shellcheck disable=SC1090
    . "$STATE_FILE"
  fi
}

is_running() {
  [ -n "${PGDATA_DIR:-}" ] && [ -d "$PGDATA_DIR/data" ] &&
    as_pg "$PG_BIN/pg_ctl" -D "$PGDATA_DIR/data" status >/dev/null 2>&1
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

url() { echo "postgresql://postgres@127.0.0.1:${PGPORT}/${DB_NAME}"; }

start() {
  load_state
  if is_running; then url; return 0; fi
  [ -x "$PG_BIN/initdb" ] || die "$PG_BIN/initdb not found (apt-get install postgresql-15)"
  mkdir -p "$STATE_DIR"
  PGDATA_DIR="$(mktemp -d /tmp/cairva-pg.XXXXXX)"
  PGPORT="$(free_port)"
  if [ "$(id -u)" = "0" ]; then chown postgres:postgres "$PGDATA_DIR"; fi
  as_pg "$PG_BIN/initdb" -D "$PGDATA_DIR/data" -U postgres --auth=trust -E UTF8 \
    --no-sync >"$PGDATA_DIR/initdb.log" 2>&1 || { cat "$PGDATA_DIR/initdb.log" >&2; die "initdb failed"; }
  cat >>"$PGDATA_DIR/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $PGPORT
unix_socket_directories = '$PGDATA_DIR'
max_connections = 300
fsync = off
synchronous_commit = on
full_page_writes = off
EOF
  printf 'host all all 127.0.0.1/32 trust\nlocal all all trust\n' >"$PGDATA_DIR/data/pg_hba.conf"
  as_pg "$PG_BIN/pg_ctl" -D "$PGDATA_DIR/data" -l "$PGDATA_DIR/server.log" -w \
    -t "$START_TIMEOUT_S" start >/dev/null || { cat "$PGDATA_DIR/server.log" >&2; die "pg_ctl start failed"; }
  printf 'PGDATA_DIR=%s\nPGPORT=%s\n' "$PGDATA_DIR" "$PGPORT" >"$STATE_FILE"
  "$PG_BIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -d postgres -qAt \
    -c "CREATE DATABASE $DB_NAME" >/dev/null
  url
}

stop() {
  load_state
  if is_running; then
    as_pg "$PG_BIN/pg_ctl" -D "$PGDATA_DIR/data" -m fast -w stop >/dev/null
  fi
  if [ -n "${PGDATA_DIR:-}" ] && [ -d "$PGDATA_DIR" ]; then rm -rf "$PGDATA_DIR"; fi
  rm -f "$STATE_FILE"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  url) load_state; is_running || die "not running (run: $0 start)"; url ;;
  status) load_state; if is_running; then echo "running: $(url)"; else echo "stopped"; exit 1; fi ;;
  *) echo "usage: $0 start|stop|url|status" >&2; exit 2 ;;
esac
