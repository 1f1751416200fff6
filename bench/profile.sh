#!/usr/bin/env bash
# Profiles one Cairva gateway (SQLite store) under wrk load with perf; prints the CPU per
# request, the share of each thread and the hottest symbols.
#   bench/profile.sh                    # sync=normal, 32 connections, 8 s
#   CAIRVA_PROFILE_CONNS=128 CAIRVA_PROFILE_SYNC=full bench/profile.sh
#   CAIRVA_PROFILE_PERF=0 bench/profile.sh   # no perf: machine and per-thread CPU only
#   CAIRVA_PROFILE_CALLGRAPH= bench/profile.sh   # perf without call graphs (-g is the default)
#   CAIRVA_PROFILE_STREAMS=9900 bench/profile.sh   # streams (bench/stream_load) instead of wrk
# Uses the release build of bench/run.sh (build-release/).
set -euo pipefail
cd "$(dirname "$0")/.."
CONNS=${CAIRVA_PROFILE_CONNS:-32}
SECONDS_=${CAIRVA_PROFILE_SECONDS:-8}
SYNC=${CAIRVA_PROFILE_SYNC:-normal}
THREADS=${CAIRVA_PROFILE_THREADS:-1}
OUT=${CAIRVA_PROFILE_OUT:-/tmp/cairva-profile}
BIN=${CAIRVA_PROFILE_BIN:-$PWD/build-release/cairva}  # e.g. a -fno-omit-frame-pointer build for call graphs
[ -x "$BIN" ] || { echo "build-release/cairva missing: run bench/run.sh (or ninja -C build-release cairva) first" >&2; exit 1; }
mkdir -p "$OUT"
export CAIRVA_ADMIN_TOKEN=profile-admin-token
. bench/one_gateway.sh
start_one_gateway "${CAIRVA_PROFILE_MOCK_BIN:-$BIN}" "$SYNC" "$THREADS" 100 \
  ${CAIRVA_PROFILE_PRELOAD:+env LD_PRELOAD=$CAIRVA_PROFILE_PRELOAD} "$BIN" serve
STREAMS=${CAIRVA_PROFILE_STREAMS:-}
if [ -n "$STREAMS" ]; then
  # Streams of a chunk a second for SECONDS_ + 10 s; perf starts once they are all open
  # (2 opened per ms), so it sees the relay, not the ramp.
  build-release/bench/stream_load --url http://127.0.0.1:$GW_PORT --key "$KEY" --streams "$STREAMS" \
    --chunks $((SECONDS_ + 10)) --chunk-delay-ms 1000 --pid "$GW_PID" > "$OUT/streams.txt" &
  WRK=$!
  sleep $((STREAMS / 2000 + 2))
  t0=$(awk '{print $14+$15}' /proc/$GW_PID/stat)
else
  # Warm-up, so the profile shows the steady state (tables and WAL grown, pools full).
  CAIRVA_BENCH_KEY=$KEY wrk -t1 -c"$CONNS" -d2s -s bench/chat.lua http://127.0.0.1:$GW_PORT >/dev/null
  t0=$(awk '{print $14+$15}' /proc/$GW_PID/stat)
  CAIRVA_BENCH_KEY=$KEY wrk --latency -t1 -c"$CONNS" -d"${SECONDS_}s" -s bench/chat.lua http://127.0.0.1:$GW_PORT > "$OUT/wrk.txt" &
  WRK=$!
  sleep 1
fi
# The whole machine's CPU over the same window: is the load (wrk, mock, gateway) CPU-bound?
cpu_line() { awk '/^cpu /{print $2+$3+$4+$7+$8, $5+$6, $7+$8}' /proc/stat; }
# Every thread of the gateway, the mock and the load generator: time on a CPU and time
# runnable but waiting for one (/proc/<tid>/schedstat, ns). A thread on a CPU nearly all the
# window bounds the throughput; one mostly waiting is starved by the others.
sched_snapshot() {
  local who pid t stat
  for who in gateway:$GW_PID mock:${pids[0]} load:$WRK; do
    pid=${who#*:}
    for t in /proc/$pid/task/*; do
      # A thread may end between the listing and the read (wrk at the window's end).
      stat=$(cat "$t/schedstat" 2>/dev/null) || continue
      printf '%s %s/%s %s\n' "${t##*/}" "${who%%:*}" "$(tr ' ' _ < "$t/comm" 2>/dev/null)" "$stat"
    done
  done
}
sched_snapshot > "$OUT/sched0.txt"
window0=$(date +%s%N)
read -r busy0 idle0 irq0 < <(cpu_line)
if [ "${CAIRVA_PROFILE_PERF:-1}" = 1 ]; then
  perf record -q -F 999 ${CAIRVA_PROFILE_CALLGRAPH--g} -p "$GW_PID" -o "$OUT/perf.data" -- sleep $((SECONDS_ - 2)) 2>/dev/null
else
  sleep $((SECONDS_ - 2))
fi
read -r busy1 idle1 irq1 < <(cpu_line)
sched_snapshot > "$OUT/sched1.txt"
window1=$(date +%s%N)
t1=$(awk '{print $14+$15}' /proc/$GW_PID/stat)
if [ -n "$STREAMS" ]; then
  # The window's CPU over the chunks relayed in it: STREAMS a second.
  awk -v t=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v n="$STREAMS" -v s=$((SECONDS_ - 2)) \
    'BEGIN{printf "CPU per chunk: %.1f us (%d streams, a chunk a second each, over %d s)\n", t/hz*1e6/(n*s), n, s}'
  wait $WRK || true
  cat "$OUT/streams.txt"
else
  wait $WRK
  t1=$(awk '{print $14+$15}' /proc/$GW_PID/stat)
  reqs=$(awk '/requests in/ {print $1}' "$OUT/wrk.txt")
  echo "requests/s: $(awk '/Requests\/sec/ {print $2}' "$OUT/wrk.txt"), p50 $(awk '$1 == "50%" {print $2}' "$OUT/wrk.txt"), p99 $(awk '$1 == "99%" {print $2}' "$OUT/wrk.txt")"
  awk -v t=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v n="$reqs" 'BEGIN{printf "CPU per request: %.1f us (%d requests)\n", t/hz*1e6/n, n}'
fi
awk -v b=$((busy1 - busy0)) -v i=$((idle1 - idle0)) -v q=$((irq1 - irq0)) -v n="$(nproc)" \
  'BEGIN{printf "machine: %.0f%% of %d cores busy (%.0f%% in interrupts and softirqs)\n", 100*b/(b+i), n, 100*q/(b+i)}'
awk -v w=$((window1 - window0)) 'NR == FNR { run[$1] = $3; wait[$1] = $4; next }
  ($1 in run) && ($3 - run[$1]) > w / 100 {
    printf "scheduler: %-20s on a CPU %5.1f%% of the window, waiting for one %5.1f%%\n", $2, 100 * ($3 - run[$1]) / w, 100 * ($4 - wait[$1]) / w }' \
  "$OUT/sched0.txt" "$OUT/sched1.txt"
# Where a request's time goes, from the gateway's own histograms (averages over the run
# and its warm-up): the two store waits and the provider's latency.
curl -s -H "Authorization: Bearer $CAIRVA_ADMIN_TOKEN" http://127.0.0.1:$GW_ADMIN/metrics | awk '
  /^cairva_store_wait_seconds_sum\{op="admit"\}/ {as=$2} /^cairva_store_wait_seconds_count\{op="admit"\}/ {ac=$2}
  /^cairva_store_wait_seconds_sum\{op="settle"\}/ {ss=$2} /^cairva_store_wait_seconds_count\{op="settle"\}/ {sc=$2}
  /^cairva_provider_latency_seconds_sum/ {ps=$2} /^cairva_provider_latency_seconds_count/ {pc=$2}
  /^cairva_store_commit_batch_writes_sum/ {bs=$2} /^cairva_store_commit_batch_writes_count/ {bc=$2}
  END { if (ac > 0 && sc > 0 && pc > 0 && bc > 0)
          printf "per request: store wait %.0f us at admission, %.0f us at settlement; provider %.0f us; %.1f writes/commit\n",
                 1e6*as/ac, 1e6*ss/sc, 1e6*ps/pc, bs/bc }'
for t in /proc/$GW_PID/task/*; do
  awk -v hz="$(getconf CLK_TCK)" '{printf "thread %s: %.1f s CPU (%.1f s user, %.1f s system)\n", $2, ($14+$15)/hz, $14/hz, $15/hz}' "$t/stat"
done
[ "${CAIRVA_PROFILE_PERF:-1}" = 1 ] || exit 0
echo "--- share per thread"
perf report -i "$OUT/perf.data" no-children --sort pid --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -8
echo "--- hottest symbols (self)"
perf report -i "$OUT/perf.data" --no-children --sort pid,dso,sym --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -${CAIRVA_PROFILE_TOP:-45}
