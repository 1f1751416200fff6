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
export CAIRVA_ADMIN_TOKEN=instr-admin-token
. bench/one_gateway.sh
# Instrumentation starts off: start-up and the warm-up are not counted.
start_one_gateway "$BIN" normal 1 600 \
  valgrind --tool=callgrind --instr-atstart=no --separate-threads=yes --callgrind-out-file="$OUT/callgrind.out.%p" "$BIN" serve
CAIRVA_BENCH_KEY=$KEY wrk -t1 -c"$CONNS" -d3s -s bench/chat.lua http://127.0.0.1:$GW_PORT >/dev/null
mock_requests() { curl -s http://127.0.0.1:$MOCK_PORT/mock/stats | sed -n 's/.*"requests":\([0-9]*\).*/\1/p'; }
callgrind_control -i on "$GW_PID" >/dev/null 2>&1
n0=$(mock_requests)
CAIRVA_BENCH_KEY=$KEY wrk -t1 -c"$CONNS" -d"${SECONDS_}s" -s bench/chat.lua http://127.0.0.1:$GW_PORT >/dev/null
n1=$(mock_requests)
callgrind_control -d "$GW_PID" >/dev/null 2>&1
n=$((n1 - n0))
echo "requests forwarded while counting: $n"
# Callgrind numbers threads in creation order: `cairva serve` starts the journal thread,
# the applier, the sweeper, then the event loop; the main thread runs the admin loop.
names=(- main cairva-store cairva-apply cairva-sweep cairva-io-0)
for f in "$OUT"/callgrind.out.*.1-*; do
  t=$(sed -n 's/^thread: //p' "$f" | head -1)
  ir=$(awk '/^summary:/ {print $2}' "$f")
  [ -n "$ir" ] && printf "%s %s\n" "${names[$t]:-thread-$t}" "$ir"
done | awk -v n="$n" '{sum += $2; printf "  %-14s %9.0f instructions/request\n", $1, $2/n} END {printf "gateway: %.0f instructions per request\n", sum/n}'
