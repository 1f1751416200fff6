#!/usr/bin/env bash
# Counts the user-space instructions one gateway (SQLite store, sync=normal) spends per
# request, with callgrind: a figure that does not drift with the machine's load, for A/B
# steps where CPU time per request is within the noise. Kernel work (TCP) is not counted.
#   bench/instructions.sh                              # build-release/cairva
#   CAIRVA_INSTR_BIN=/tmp/cairva-B bench/instructions.sh
# Prints instructions per request for the whole process and per thread, and keeps the
# callgrind output for callgrind_annotate in $CAIRVA_INSTR_OUT (default /tmp/cairva-instr).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${CAIRVA_INSTR_BIN:-$PWD/build-release/cairva}
CONNS=${CAIRVA_INSTR_CONNS:-8}
SECONDS_=${CAIRVA_INSTR_SECONDS:-10}
OUT=${CAIRVA_INSTR_OUT:-/tmp/cairva-instr}
[ -x "$BIN" ] || { echo "$BIN missing: ninja -C build-release cairva" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind missing: scripts/setup.sh installs it" >&2; exit 1; }
mkdir -p "$OUT"; rm -f "$OUT"/callgrind.out*
work=$(mktemp -d /tmp/cairva-instr.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 600); do curl -s -o /dev/null "$1" && return 0; sleep 0.1; done; echo "not up: $1" >&2; return 1; }
export CAIRVA_ADMIN_TOKEN=instr-admin-token
MOCK_PORT=$(free_port); GW_PORT=$(free_port); GW_ADMIN=$(free_port)
"$BIN" mock-provider --listen 127.0.0.1:$MOCK_PORT --threads 1 >/dev/null &
pids+=($!)
wait_http http://127.0.0.1:$MOCK_PORT/mock/stats
cat > "$work/cairva.toml" <<TOML
[server]
listen = "127.0.0.1:$GW_PORT"
admin_listen = "127.0.0.1:$GW_ADMIN"
threads = 1
access_log = false
[store]
url = "sqlite://$work/cairva.db"
sync = "normal"
[[providers]]
name = "mock"
base_url = "http://127.0.0.1:$MOCK_PORT/v1"
TOML
# Instrumentation starts off: start-up and the warm-up are not counted.
valgrind --tool=callgrind --instr-atstart=no --separate-threads=yes \
  --callgrind-out-file="$OUT/callgrind.out.%p" "$BIN" serve --config "$work/cairva.toml" > "$work/log" 2>&1 &
GW_PID=$!; pids+=($GW_PID)
wait_http http://127.0.0.1:$GW_PORT/healthz
created=$(curl -s -X POST http://127.0.0.1:$GW_ADMIN/admin/v1/agreements -H "Authorization: Bearer $CAIRVA_ADMIN_TOKEN" \
  -d '{"supplier":"p","buyer":"p","provider":"mock","input_tokens":100000000000,"output_tokens":100000000000,"ends_at":"2099-01-01T00:00:00Z","requests_per_minute":100000000,"tokens_per_minute":100000000000,"max_concurrency":100000}')
KEY=$(echo "$created" | sed -n 's/.*"secret":"\(cv_[A-Za-z0-9]*\)".*/\1/p')
CAIRVA_BENCH_KEY=$KEY wrk -t1 -c"$CONNS" -d3s -s bench/chat.lua http://127.0.0.1:$GW_PORT >/dev/null
mock_requests() { curl -s http://127.0.0.1:$MOCK_PORT/mock/stats | sed -n 's/.*"requests":\([0-9]*\).*/\1/p'; }
callgrind_control -i on "$GW_PID" >/dev/null 2>&1
n0=$(mock_requests)
CAIRVA_BENCH_KEY=$KEY wrk -t1 -c"$CONNS" -d"${SECONDS_}s" -s bench/chat.lua http://127.0.0.1:$GW_PORT >/dev/null
n1=$(mock_requests)
callgrind_control -d "$GW_PID" >/dev/null 2>&1
n=$((n1 - n0))
echo "requests forwarded while counting: $n"
for f in "$OUT"/callgrind.out.*; do
  name=$(sed -n 's/^cmd: .*//; s/^thread: //p' "$f" | head -1)
  ir=$(awk '/^summary:/ {print $2}' "$f")
  [ -n "$ir" ] && printf "%s %s\n" "$(basename "$f")" "$ir"
done | awk -v n="$n" '{sum += $2; printf "  %-28s %9.0f instructions/request\n", $1, $2/n} END {printf "gateway: %.0f instructions per request\n", sum/n}'
