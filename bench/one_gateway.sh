# Sourced by bench/profile.sh and bench/instructions.sh: one mock provider and one gateway
# (SQLite store in a scratch directory, $work) under load-test settings, and a buyer key with
# limits too high to refuse anything (store: CAIRVA_ONE_STORE_URL, e.g. a PostgreSQL URL, else a
# fresh SQLite file; CAIRVA_ONE_ACCESS_LOG=text or json: the access log on, to a file in $work,
# else off). Everything started is stopped, and $work removed, when
# the script exits.
work=$(mktemp -d /tmp/cairva-bench.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# wait_http URL [tries]: 50 ms apart.
wait_http() {
  for _ in $(seq "${2:-100}"); do curl -s -o /dev/null "$1" && return 0; sleep 0.05; done
  echo "not up: $1" >&2
  return 1
}

access_log_toml() {
  if [ -n "${CAIRVA_ONE_ACCESS_LOG:-}" ]; then
    printf 'access_log_format = "%s"\naccess_log_path = "%s"\n' "$CAIRVA_ONE_ACCESS_LOG" "$work/access.log"
  else
    echo "access_log = false"
  fi
}

# start_one_gateway MOCK_BIN SYNC THREADS WAIT_TRIES COMMAND...: COMMAND is the gateway's
# command line without its --config (e.g. `valgrind … build-release/cairva serve`). Sets
# MOCK_PORT, GW_PORT, GW_ADMIN, GW_PID and KEY.
start_one_gateway() {
  local mock_bin=$1 sync=$2 threads=$3 tries=$4
  shift 4
  export CAIRVA_ADMIN_TOKEN=${CAIRVA_ADMIN_TOKEN:-bench-admin-token}
  MOCK_PORT=$(free_port); GW_PORT=$(free_port); GW_ADMIN=$(free_port)
  "$mock_bin" mock-provider --listen 127.0.0.1:$MOCK_PORT --threads 1 >/dev/null &
  pids+=($!)
  wait_http http://127.0.0.1:$MOCK_PORT/mock/stats
  cat > "$work/cairva.toml" <<TOML
[server]
listen = "127.0.0.1:$GW_PORT"
admin_listen = "127.0.0.1:$GW_ADMIN"
threads = $threads
$(access_log_toml)
connections_per_client_max = 0   # every benchmark client connects from one address
[store]
url = "${CAIRVA_ONE_STORE_URL:-sqlite://$work/cairva.db}"
sync = "$sync"
[[providers]]
name = "mock"
base_url = "http://127.0.0.1:$MOCK_PORT/v1"
TOML
  "$@" --config "$work/cairva.toml" > "$work/log" 2>&1 &
  GW_PID=$!
  pids+=($GW_PID)
  wait_http http://127.0.0.1:$GW_PORT/healthz "$tries"
  local created
  created=$(curl -s -X POST http://127.0.0.1:$GW_ADMIN/admin/v1/agreements -H "Authorization: Bearer $CAIRVA_ADMIN_TOKEN" \
    -d '{"supplier":"p","buyer":"p","provider":"mock","input_tokens":100000000000,"output_tokens":100000000000,"ends_at":"2099-01-01T00:00:00Z","requests_per_minute":100000000,"tokens_per_minute":100000000000,"max_concurrency":100000}')
  KEY=$(echo "$created" | sed -n 's/.*"secret":"\(cv_[A-Za-z0-9]*\)".*/\1/p')
}
