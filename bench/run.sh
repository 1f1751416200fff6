#!/usr/bin/env bash
# Throughput/latency/CPU benchmark of Cairva against a plain nginx proxy, same machine,
# same fake provider, alternating runs. Writes docs/benchmarks.md and docs/bench.png.
#   bench/run.sh                       # full run (10 s per point, 1/32/128 connections)
#   CAIRVA_BENCH_DURATION=3 bench/run.sh
# Systems: direct (wrk → mock), nginx, cairva sqlite sync=normal, sqlite sync=full,
# and PostgreSQL (when scripts/pg-test-cluster.sh can start one). Then, in the same run, the
# issue's other figures: 1 MB inspection (wire_bench), the core's admit+book (core_bench) and
# PostgreSQL admissions with 1 and 3 processes on 1 and 100 allocations (pg_admit_bench);
# CAIRVA_BENCH_MICRO=0 skips them.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${CAIRVA_BENCH_DURATION:-10}
# Rounds of the whole system list per connection count; the table shows each figure's median.
REPEAT=${CAIRVA_BENCH_REPEAT:-1}
CONNS=${CAIRVA_BENCH_CONNS:-"1 32 128"}
SYSTEMS=${CAIRVA_BENCH_SYSTEMS:-"direct nginx sqlite-normal sqlite-full postgres"}
OUT_MD=${CAIRVA_BENCH_OUT:-docs/benchmarks.md}

# Set and empty: no streams (unset: the default counts).
STREAMS=${CAIRVA_BENCH_STREAMS-"1000 9900"}
STREAM_CHUNKS=${CAIRVA_BENCH_STREAM_CHUNKS:-20}
STREAM_DELAY_MS=${CAIRVA_BENCH_STREAM_DELAY_MS:-1000}
STREAM_ARGS=${CAIRVA_BENCH_STREAM_ARGS:-}  # more bench/stream_load options, e.g. its ramp's

[ -n "${CAIRVA_BENCH_NO_SETUP:-}" ] || ./scripts/setup.sh >/dev/null
MICRO=${CAIRVA_BENCH_MICRO:-1}
targets="cairva stream_load"
[ "$MICRO" != 1 ] || targets="$targets wire_bench core_bench pg_admit_bench"
# The release build as packages ship it (profile-guided, LTO; symbols kept for perf).
# shellcheck disable=SC2086  # one word per target
CAIRVA_JOBS=2 ./scripts/build-release.sh build-release $targets >/dev/null
# 10,000 streams hold 20,000 sockets in the gateway (client + provider side).
ulimit -n "$(ulimit -Hn)"
BIN=${CAIRVA_BENCH_BIN:-$PWD/build-release/cairva}  # another build to compare, e.g. an older commit's
work=$(mktemp -d /tmp/cairva-bench.XXXXXX)
mkdir -p "$work/tmp"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -n "${PG_STARTED:-}" ]; then ./scripts/pg-test-cluster.sh stop >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 100); do curl -s -o /dev/null "$1" && return 0; sleep 0.05; done; echo "not up: $1" >&2; return 1; }
# Waits (at most 10 s) until the mock provider has no request in flight: requests wrk abandoned
# at the end of a run still reach the provider and are booked, and belong to that run.
mock_idle() {
  for _ in $(seq 200); do
    curl -s http://127.0.0.1:$MOCK_PORT/mock/stats | grep -q '"in_flight":0,' && return 0
    sleep 0.05
  done
}
# Waits (at most 10 s) until a gateway's allocation has nothing in flight.
gateway_idle() {
  [ -n "${1:-}" ] || return 0
  for _ in $(seq 200); do
    curl -s http://127.0.0.1:$1/admin/v1/allocations/$2 -H "Authorization: Bearer $CAIRVA_ADMIN_TOKEN" | grep -q '"in_flight":0,' && return 0
    sleep 0.05
  done
}
mock_requests() { curl -s http://127.0.0.1:$MOCK_PORT/mock/stats | sed -n 's/.*"requests":\([0-9]*\).*/\1/p'; }
# Waits (at most 10 s) until the processes in $1 use no CPU for 200 ms: a gateway's applier
# still working off a run's backlog would otherwise run during the next system's run.
cpu_idle() {
  local t0 t1
  for _ in $(seq 50); do
    t0=$(cpu_ticks "$1"); sleep 0.2; t1=$(cpu_ticks "$1")
    [ $((t1 - t0)) -le 1 ] && return 0
  done
}
# "sum count" of the store's commit-batch histogram (writes per group commit), or "0 0".
batch_stats() {
  [ -n "${1:-}" ] || { echo "0 0"; return; }
  curl -s http://127.0.0.1:$1/metrics -H "Authorization: Bearer $CAIRVA_ADMIN_TOKEN" \
    | awk '/^cairva_store_commit_batch_writes_sum/ {s=$2} /^cairva_store_commit_batch_writes_count/ {c=$2} END {printf "%d %d\n", s, c}'
}
# Both take a list of pids (nginx's workers) and sum over it.
cpu_ticks() { local t=0 p; for p in $1; do t=$((t + $(awk '{print $14+$15}' "/proc/$p/stat"))); done; echo "$t"; }
rss_kb() { local r=0 p; for p in $1; do r=$((r + $(awk '/VmHWM/ {print $2}' "/proc/$p/status"))); done; echo "$r"; }
# Event loops per system under test: nginx workers and the gateways' `threads`, alike.
THREADS=${CAIRVA_BENCH_THREADS:-1}
TICKS=$(getconf CLK_TCK)
export CAIRVA_ADMIN_TOKEN=bench-admin-token

MOCK_PORT=$(free_port)
"$BIN" mock-provider --listen 127.0.0.1:$MOCK_PORT --threads 1 >/dev/null &
MOCK_PID=$!; pids+=($MOCK_PID)
wait_http http://127.0.0.1:$MOCK_PORT/mock/stats

NGINX_PORT=$(free_port)
sed -e "s#@DIR@#$work#g" -e "s#@PORT@#$NGINX_PORT#g" -e "s#@MOCK_PORT@#$MOCK_PORT#g" -e "s#@WORKERS@#$THREADS#g" bench/nginx.conf.in > "$work/nginx.conf"
nginx -c "$work/nginx.conf" -p "$work" &
NGINX_PID=$!; pids+=($NGINX_PID)
wait_http http://127.0.0.1:$NGINX_PORT/mock/stats
# The master only supervises: CPU and RSS are the workers'.
NGINX_WORKERS=$(pgrep -P "$NGINX_PID" | tr '\n' ' ')

PG_URL=""
if [[ " $SYSTEMS " == *" postgres "* ]] || [ "$MICRO" = 1 ]; then
  # Stop it afterwards only if this run started it: other suites may share the cluster.
  if ./scripts/pg-test-cluster.sh status >/dev/null 2>&1; then PG_URL=$(./scripts/pg-test-cluster.sh url)
  elif ./scripts/pg-test-cluster.sh start >/dev/null 2>&1; then PG_STARTED=1; PG_URL=$(./scripts/pg-test-cluster.sh url); fi
fi

# start_gateway NAME STORE_URL SYNC → sets GW_PORT, GW_ADMIN, GW_PID, GW_KEY, GW_ALLOC
start_gateway() {
  GW_PORT=$(free_port); GW_ADMIN=$(free_port)
  mkdir -p "$work/$1"
  cat > "$work/$1/cairva.toml" <<TOML
[server]
listen = "127.0.0.1:$GW_PORT"
admin_listen = "127.0.0.1:$GW_ADMIN"
threads = $THREADS
access_log = false
connections_per_client_max = 0   # every benchmark client connects from one address
[store]
url = "$2"
sync = "$3"
[[providers]]
name = "mock"
base_url = "http://127.0.0.1:$MOCK_PORT/v1"
TOML
  "$BIN" serve --config "$work/$1/cairva.toml" > "$work/$1/log" 2>&1 &
  GW_PID=$!; pids+=($GW_PID)
  wait_http http://127.0.0.1:$GW_PORT/healthz
  local created
  created=$(curl -s -X POST http://127.0.0.1:$GW_ADMIN/admin/v1/agreements -H "Authorization: Bearer $CAIRVA_ADMIN_TOKEN" \
    -d "{\"supplier\":\"bench\",\"buyer\":\"bench\",\"provider\":\"mock\",\"input_tokens\":100000000000,\"output_tokens\":100000000000,\"ends_at\":\"2099-01-01T00:00:00Z\",\"requests_per_minute\":100000000,\"tokens_per_minute\":100000000000,\"max_concurrency\":100000}")
  GW_KEY=$(echo "$created" | sed -n 's/.*"secret":"\(cv_[A-Za-z0-9]*\)".*/\1/p')
  GW_ALLOC=$(echo "$created" | sed -n 's/.*"allocation":{"object":"allocation","id":"\(alloc_[a-z0-9]*\)".*/\1/p')
  [ -n "$GW_KEY" ] || { echo "agreement creation failed: $created" >&2; exit 1; }
}

declare -A URL PID KEY ADMIN ALLOC SERVED OK
URL[direct]=http://127.0.0.1:$MOCK_PORT; PID[direct]=$MOCK_PID
URL[nginx]=http://127.0.0.1:$NGINX_PORT; PID[nginx]=$NGINX_WORKERS
for s in $SYSTEMS; do
  case $s in
    sqlite-normal) start_gateway $s "sqlite://$work/normal.db" normal ;;
    sqlite-full) start_gateway $s "sqlite://$work/full.db" full ;;
    postgres) [ -n "$PG_URL" ] || continue; start_gateway $s "$PG_URL" normal ;;
    *) continue ;;
  esac
  URL[$s]=http://127.0.0.1:$GW_PORT; PID[$s]=$GW_PID; KEY[$s]=$GW_KEY; ADMIN[$s]=$GW_ADMIN; ALLOC[$s]=$GW_ALLOC
done

results="$work/results.tsv"
: > "$results"
for c in $CONNS; do
  for round in $(seq "$REPEAT"); do
  for s in $SYSTEMS; do
    [ -n "${URL[$s]:-}" ] || continue
    pid=${PID[$s]}
    read -r bs0 bc0 <<<"$(batch_stats "${ADMIN[$s]:-}")"
    t0=$(cpu_ticks "$pid"); m0=$(mock_requests)
    line=$(CAIRVA_BENCH_KEY="${KEY[$s]:-}" wrk -t1 -c"$c" -d"${DURATION}s" --latency -s bench/chat.lua "${URL[$s]}" | grep '^BENCH')
    # The system's CPU includes what the run left to do (a gateway's applier backlog).
    gateway_idle "${ADMIN[$s]:-}" "${ALLOC[$s]:-}"; mock_idle; m1=$(mock_requests)
    cpu_idle "$pid"; t1=$(cpu_ticks "$pid")
    read -r bs1 bc1 <<<"$(batch_stats "${ADMIN[$s]:-}")"
    batch=$(awk -v s=$((bs1 - bs0)) -v c=$((bc1 - bc0)) 'BEGIN{ if (c>0) printf "%.1f", s/c; else print "-" }')
    eval "$(echo "$line" | sed 's/^BENCH //' | tr ' ' '\n' | sed 's/^/B_/')"
    cpu_us=$(awk -v d=$((t1 - t0)) -v t=$TICKS -v n=$B_requests 'BEGIN{ if (n>0) printf "%.1f", d/t*1e6/n; else print "nan" }')
    SERVED[$s]=$(( ${SERVED[$s]:-0} + m1 - m0 )); OK[$s]=$(( ${OK[$s]:-0} + B_requests - B_non2xx ))
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$s" "$B_rps" "$B_p50_us" "$B_p99_us" "$cpu_us" "$(rss_kb "$pid")" "$((B_non2xx + B_errors))" "$batch" "$round" >> "$results"
    echo "c=$c round=$round $s rps=$B_rps p50=${B_p50_us}us p99=${B_p99_us}us cpu/req=${cpu_us}us non2xx+errors=$((B_non2xx + B_errors)) writes/commit=$batch" >&2
  done
  done
done

# Every response must be booked. The mock provider answers each request with 10 prompt and
# 7 completion tokens, so the ledger's used tokens count bookings exactly. Every request the
# provider answered for a gateway (its /mock/stats delta over that gateway's runs) must be
# booked: the count includes requests wrk abandoned at the end of a run, which the gateway
# still books. And no fewer bookings than 2xx responses seen by wrk.
ledger_note=""
ledger_ok=1
for s in sqlite-normal sqlite-full postgres; do
  [ -n "${ADMIN[$s]:-}" ] || continue
  sleep 0.5  # requests wrk abandoned at the end of the last run settle
  alloc=$(curl -s http://127.0.0.1:${ADMIN[$s]}/admin/v1/allocations/${ALLOC[$s]} -H "Authorization: Bearer $CAIRVA_ADMIN_TOKEN")
  used_in=$(echo "$alloc" | sed -n 's/.*"used":{"input_tokens":\([0-9]*\),"output_tokens":\([0-9]*\)}.*/\1/p')
  used_out=$(echo "$alloc" | sed -n 's/.*"used":{"input_tokens":\([0-9]*\),"output_tokens":\([0-9]*\)}.*/\2/p')
  in_flight=$(echo "$alloc" | sed -n 's/.*"in_flight":\([0-9]*\).*/\1/p')
  pending=$(echo "$alloc" | sed -n 's/.*"usage_pending":\([0-9]*\).*/\1/p')
  booked=$((used_in / 10))
  verdict=ok
  if [ $((used_in % 10)) -ne 0 ] || [ $((used_out)) -ne $((booked * 7)) ] || [ "$booked" -ne "${SERVED[$s]:-0}" ] \
     || [ "$booked" -lt "${OK[$s]:-0}" ] || [ "$in_flight" != 0 ] || [ "$pending" != 0 ]; then verdict=MISMATCH; ledger_ok=0; fi
  ledger_note+="- $s: $booked requests booked (used $used_in input / $used_out output tokens), provider answered ${SERVED[$s]:-0}, wrk saw ${OK[$s]:-0} 2xx; in flight $in_flight, usage pending $pending: $verdict"$'\n'
done

# Streaming: N concurrent SSE streams, each chunk stamped by the mock provider with its send
# time; straight to the provider, through nginx (the floor for a relay: two more hops on the
# same cores), then through the gateway (sqlite-normal). Each proxy adds the difference to
# direct. CPU per chunk and RSS per open stream are the proxy's own.
stream_results="$work/streams.tsv"
: > "$stream_results"
if [ -n "${URL[sqlite-normal]:-}" ] && [ -n "$STREAMS" ]; then
  for n in $STREAMS; do
    for s in direct nginx sqlite-normal; do
      [ -n "${URL[$s]:-}" ] || continue
      line=$("$PWD/build-release/bench/stream_load" --url "${URL[$s]}" --key "${KEY[$s]:-}" --streams "$n" \
        --chunks "$STREAM_CHUNKS" --chunk-delay-ms "$STREAM_DELAY_MS" --pid "${PID[$s]// /,}" $STREAM_ARGS | grep '^STREAM') || true
      echo "streams=$n $s $line" >&2
      [ -n "$line" ] || continue
      eval "$(echo "$line" | sed 's/^STREAM //' | tr ' ' '\n' | sed 's/^/S_/')"
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$s" "$S_peak_open" "$S_chunks" "$S_p50_us" "$S_p99_us" \
        "$S_cpu_us_per_chunk" "$S_rss_peak_kb" "$S_rss_per_stream_kb" "$S_errors" >> "$stream_results"
    done
  done
fi

# The issue's micro-benchmarks, each as "| figure | value | command |" rows.
micro_results="$work/micro.md"
: > "$micro_results"
if [ "$MICRO" = 1 ]; then
  wire_cmd="build-release/src/wire/wire_bench --benchmark_filter='BM_InspectOnly(InPlace)?/1048576\$' --benchmark_repetitions=5"
  build-release/src/wire/wire_bench --benchmark_filter='BM_InspectOnly(InPlace)?/1048576$' --benchmark_repetitions=5 \
      --benchmark_report_aggregates_only=true --benchmark_format=csv 2>/dev/null |
    awk -F, -v cmd="$wire_cmd" '$1 ~ /_median"$/ { name = ($1 ~ /InPlace/) ? "inspect a 1 MB body in place (the gateway'"'"'s path), median of 5" : "inspect a 1 MB body (copying), median of 5";
      printf "| %s | %.0f %s | `%s` |\n", name, $3, $5, cmd }' >> "$micro_results" || true
  # Only the admit+book figures: the CSV reporter stops at a benchmark with other counters.
  build-release/bench/core_bench --benchmark_filter=BM_AdmitBook --benchmark_format=csv 2>/dev/null |
    awk -F, '$1 ~ /BM_AdmitBook/ { n = $1; sub(/.*threads:/, "", n); gsub(/"/, "", n);
      printf "| core admit + book, one allocation, %s thread(s) | %.0f %s per admit+book | `build-release/bench/core_bench --benchmark_filter=BM_AdmitBook` |\n", n, $3, $5 }' >> "$micro_results" || true
  if [ -n "$PG_URL" ]; then
    # The test cluster runs without fsync (tests need no durability); a deployment keeps it
    # on, and every commit then waits for its WAL flush: measured both ways, `on` with
    # full_page_writes as well (both reloadable settings), then reset to the cluster's own
    # configuration. pg_durability on|off|reset.
    pg_durability() {
      local set="SET fsync = $1" set_fpw="SET full_page_writes = $1"
      if [ "$1" = reset ]; then set="RESET fsync"; set_fpw="RESET full_page_writes"; fi
      psql "$PG_URL" -qAt -c "ALTER SYSTEM $set" -c "ALTER SYSTEM $set_fpw" -c "SELECT pg_reload_conf()" >/dev/null
    }
    for fsync in off on; do
      pg_durability "$fsync" || { echo "pg: cannot set fsync = $fsync" >&2; continue; }
      for procs in 1 3; do
        for allocs in 1 100; do
          pg_cmd="build-release/src/store/postgres/pg_admit_bench --processes $procs --threads 4 --allocations $allocs --seconds 5"
          line=$(CAIRVA_TEST_PG_URL="$PG_URL" $pg_cmd 2>&1 | grep 'admit+settle/s' || true)
          rate=$(echo "$line" | sed -n 's/.*: \([0-9]*\) admit+settle\/s.*/\1/p')
          audit=$(echo "$line" | sed -n 's/.*audit \([A-Z]*[a-z]*\).*/\1/p')
          echo "pg fsync=$fsync processes=$procs allocations=$allocs: ${rate:-failed} (audit ${audit:-?})" >&2
          printf '| PostgreSQL, fsync %s, %s process(es), %s allocation(s) | %s admit+settle/s, audit %s | `%s` |\n' \
            "$fsync" "$procs" "$allocs" "${rate:-failed}" "${audit:-?}" "$pg_cmd" >> "$micro_results"
        done
      done
    done
    pg_durability reset || true
  fi
fi

# Hand-written notes below the marker line survive a new run.
notes_marker='<!-- notes below are kept by run.sh -->'
notes=""
if [ -f "$OUT_MD" ] && grep -qF "$notes_marker" "$OUT_MD"; then notes=$(sed -n "/$notes_marker/,\$p" "$OUT_MD"); fi

{
  echo "# Benchmarks"
  echo
  echo "Produced by \`$0\` (CAIRVA_BENCH_DURATION=$DURATION) on $(date -u +%Y-%m-%d), $(nproc) cores, load generator on the same machine:"
  echo "wrk -t1, $THREADS event loop(s) per system under test (nginx worker_processes $THREADS, cairva threads = $THREADS), same mock provider."
  echo "CPU is the system under test's own user+system time per request. Ratios are against nginx measured in the same run."
  if [ "$REPEAT" -gt 1 ]; then
    echo "Each point is the median of $REPEAT rounds (CAIRVA_BENCH_REPEAT=$REPEAT), every round running each system in turn; non-2xx are summed."
    echo "Each ratio is the median of the rounds' own ratios (a system against the same round's nginx run): the machine's"
    echo "speed drifts over minutes, and a pair of adjacent runs shares the drift."
  fi
  echo
  echo "| connections | system | requests/s | × nginx | p50 µs | p99 µs | × nginx p99 | CPU µs/req | × nginx CPU | peak RSS MB | non-2xx | writes/commit |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
  awk -F'\t' '
    # Median of the values joined by spaces in `list` (insertion sort: a handful of rounds).
    function median(list,   v, n, i, j, t) {
      n = split(list, v, " ");
      for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] + 0 > t + 0; j--) v[j + 1] = v[j]; v[j + 1] = t }
      return (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    { k = $1 SUBSEP $2; if (!(k in rps)) order[++n] = k
      rps[k] = rps[k] " " $3; p50[k] = p50[k] " " $4; p99[k] = p99[k] " " $5; cpu[k] = cpu[k] " " $6
      rss[k] = rss[k] " " $7; bad[k] += $8; bat[k] = ($9 == "-") ? "-" : bat[k] " " $9
      rounds[k] = rounds[k] " " $10; vr[k, $10] = $3; vu[k, $10] = $6; vl[k, $10] = $5 }
    END { # Per-round ratios against the same round of nginx.
      for (k in rounds) { split(k, f, SUBSEP); g = f[1] SUBSEP "nginx"; m = split(rounds[k], rd, " ");
        for (j = 1; j <= m; j++) { q = rd[j]; if (!((g, q) in vr)) continue
          if (vr[g, q] > 0) rr[k] = rr[k] " " vr[k, q] / vr[g, q]
          if (vu[g, q] > 0) ru[k] = ru[k] " " vu[k, q] / vu[g, q]
          if (vl[g, q] > 0) rl[k] = rl[k] " " vl[k, q] / vl[g, q] } }
      for (k in rps) { rps[k] = median(rps[k]); p50[k] = median(p50[k]); p99[k] = median(p99[k]);
            cpu[k] = median(cpu[k]); rss[k] = median(rss[k]); if (bat[k] != "-") bat[k] = sprintf("%.1f", median(bat[k])) }
      for (i = 1; i <= n; i++) { split(order[i], f, SUBSEP); c = f[1]; s = f[2]; k = order[i];
        if (s == "nginx") { r = "1.00"; u = "1.00"; l = "1.00" }
        else {
          r = (k in rr) ? sprintf("%.2f", median(rr[k])) : "-";
          u = (k in ru) ? sprintf("%.2f", median(ru[k])) : "-";
          l = (k in rl) ? sprintf("%.2f", median(rl[k])) : "-" }
        printf "| %s | %s | %.0f | %s | %.0f | %.0f | %s | %.1f | %s | %.1f | %s | %s |\n", c, s, rps[k], r, p50[k], p99[k], l, cpu[k], u, rss[k] / 1024, bad[k], bat[k] } }' "$results"
  echo
  echo "Ledger check after the run:"
  echo
  printf '%s' "$ledger_note"
  echo
  echo "![throughput and p99 against connections](bench.png)"
  if [ -s "$stream_results" ]; then
    echo
    echo "## Streaming ($STREAM_CHUNKS chunks per stream, one every $STREAM_DELAY_MS ms)"
    echo
    echo "Per-chunk latency is receive time minus the provider's send stamp. \"added\" is a proxy's"
    echo "figure minus the direct one from the same run; nginx (\`proxy_buffering off\`, $THREADS worker(s)) is"
    echo "the floor for any relay on these cores. CPU per chunk and RSS are the process's own (for direct:"
    echo "the mock provider's); RSS per stream is (peak RSS − RSS before) / peak open streams."
    echo
    echo "| streams | target | peak open | chunks | p50 µs | p99 µs | added p50 µs | added p99 µs | CPU µs/chunk | peak RSS MB | RSS KB/stream | errors |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
    awk -F'\t' '
      { p50[$1,$2]=$5; p99[$1,$2]=$6; row[++n]=$0 }
      END { for (i=1;i<=n;i++) { split(row[i], f, "\t"); k=f[1];
        a50 = (f[2]=="direct") ? "-" : f[5]-p50[k,"direct"]; a99 = (f[2]=="direct") ? "-" : f[6]-p99[k,"direct"];
        printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %.1f | %s | %s |\n", f[1], f[2], f[3], f[4], f[5], f[6], a50, a99, f[7], f[8]/1024, f[9], f[10] } }' "$stream_results"
  fi
  if [ -s "$micro_results" ]; then
    echo
    echo "## Micro-benchmarks (same run)"
    echo
    echo "PostgreSQL: admit + usage settlement per operation, each a transaction under the allocation's"
    echo "row lock, 4 threads per process, on the test cluster, same 2 cores: with \`fsync = off\` (how the"
    echo "tests run it) and with \`fsync = on\` + \`full_page_writes = on\` (a deployment's setting; the same disk)."
    echo
    echo "| figure | measured | command |"
    echo "|---|---|---|"
    cat "$micro_results"
  fi
  if [ -n "$notes" ]; then echo; printf '%s\n' "$notes"; fi
} > "$OUT_MD"

bench/plot.sh "$OUT_MD" "$(dirname "$OUT_MD")/bench.png" || echo "plot failed" >&2
cat "$OUT_MD"
