#!/usr/bin/env bash
# Counts the user-space instructions one gateway (SQLite store, sync=normal) spends per
# request, with callgrind: a figure that does not drift with the machine's load, for A/B
# steps where CPU time per request is within the noise. Kernel work (TCP) is not counted.
#   bench/instructions.sh                              # build-release/cairva
#   CAIRVA_INSTR_BIN=/tmp/cairva-B bench/instructions.sh
#   CAIRVA_INSTR_SIM="--cache-sim=yes --branch-sim=yes --LL=524288,8,64" bench/instructions.sh
#                                                      # also simulate caches (L2 as LL) and branches
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
# shellcheck disable=SC2086  # CAIRVA_INSTR_SIM is a list of options
start_one_gateway "$BIN" normal 1 600 \
  valgrind --tool=callgrind ${CAIRVA_INSTR_SIM:-} --instr-atstart=no --separate-threads=yes --callgrind-out-file="$OUT/callgrind.out.%p" "$BIN" serve
CAIRVA_BENCH_KEY=$KEY wrk -t1 -c"$CONNS" -d3s -s bench/chat.lua http://127.0.0.1:$GW_PORT >/dev/null
mock_requests() { curl -s http://127.0.0.1:$MOCK_PORT/mock/stats | sed -n 's/.*"requests":\([0-9]*\).*/\1/p'; }
callgrind_control -i on "$GW_PID" >/dev/null 2>&1
n0=$(mock_requests)
CAIRVA_BENCH_KEY=$KEY wrk -t1 -c"$CONNS" -d"${SECONDS_}s" -s bench/chat.lua http://127.0.0.1:$GW_PORT >/dev/null
n1=$(mock_requests)
callgrind_control -d "$GW_PID" >/dev/null 2>&1
n=$((n1 - n0))
echo "requests forwarded while counting: $n"
# Each thread is named by what it runs (callgrind numbers threads in creation order, which
# changes when a build starts one more): the journal thread, the applier, the event loop (the
# gateway's request handlers); the rest by number.
thread_name() {
  if grep -q -E '^fn=\([0-9]+\) cairva::store::sqlite::Writer::run_journal' "$1"; then echo cairva-store
  elif grep -q -E '^fn=\([0-9]+\) cairva::store::sqlite::Writer::run_apply' "$1"; then echo cairva-apply
  elif [ "$(grep -c -E '^fn=\([0-9]+\) cairva::gateway::' "$1")" -gt 8 ]; then echo cairva-io-0
  else echo "thread-$(sed -n 's/^thread: //p' "$1" | head -1)"
  fi
}
for f in "$OUT"/callgrind.out.*.1-*; do
  ir=$(awk '/^summary:/ {print $2}' "$f")
  [ -n "$ir" ] && printf "%s %s\n" "$(thread_name "$f")" "$ir"
done | awk -v n="$n" '{sum += $2; printf "  %-14s %9.0f instructions/request\n", $1, $2/n} END {printf "gateway: %.0f instructions per request\n", sum/n}'
