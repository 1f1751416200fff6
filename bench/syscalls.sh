#!/usr/bin/env bash
# System calls per request of each gateway thread (SQLite store, sync=normal) under wrk load:
# `perf stat -e raw_syscalls:sys_enter --per-thread` over 4 s, divided by the requests the
# mock provider answered in that window. For A/B steps where a change moves work into the
# kernel (a temporary file, more writes) that instruction counts do not show.
#   bench/syscalls.sh                          # build-release/cairva, 32 connections
#   CAIRVA_SYSCALLS_BIN=build/cairva CAIRVA_SYSCALLS_CONNS=128 bench/syscalls.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${CAIRVA_SYSCALLS_BIN:-$PWD/build-release/cairva}
CONNS=${CAIRVA_SYSCALLS_CONNS:-32}
[ -x "$BIN" ] || { echo "$BIN missing: ninja -C build-release cairva" >&2; exit 1; }
export CAIRVA_ADMIN_TOKEN=syscalls-admin-token
. bench/one_gateway.sh
start_one_gateway "$BIN" normal 1 100 "$BIN" serve
CAIRVA_BENCH_KEY=$KEY wrk -t1 -c"$CONNS" -d2s -s bench/chat.lua http://127.0.0.1:$GW_PORT >/dev/null
mock_requests() { curl -s http://127.0.0.1:$MOCK_PORT/mock/stats | sed -n 's/.*"requests":\([0-9]*\).*/\1/p'; }
CAIRVA_BENCH_KEY=$KEY wrk -t1 -c"$CONNS" -d8s -s bench/chat.lua http://127.0.0.1:$GW_PORT >/dev/null &
load=$!
sleep 1
n0=$(mock_requests)
perf stat -e raw_syscalls:sys_enter --per-thread -p "$GW_PID" -o "$work/stat" -- sleep 4 2>/dev/null
n1=$(mock_requests)
wait $load
n=$((n1 - n0))
echo "requests answered while counting: $n"
awk -v n="$n" '/raw_syscalls/ {gsub(",", "", $2); if ($2 + 0 > 0) printf "  %-24s %6.2f system calls/request\n", $1, $2 / n}' "$work/stat"
