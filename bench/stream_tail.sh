#!/usr/bin/env bash
# The streams' added tail on one gateway, fresh and after a load: 1,000 streams (bench/
# stream_load) direct to the mock and through the gateway, then CAIRVA_TAIL_LOAD_S seconds of
# wrk at 128 connections, then the same streams again. stream_load's steady_p99_us counts
# only chunks received while every stream was open and none had ended (no admission or
# settlement running). After each run through the gateway it prints the gateway's own share,
# from /metrics: the buckets holding the median and the 99th percentile of cairva_stream_relay_seconds (a
# chunk from the provider read that brought it to the end of its write to the client) over
# that run.
#   bench/stream_tail.sh
#   CAIRVA_TAIL_STREAMS=2000 CAIRVA_TAIL_LOAD_S=60 bench/stream_tail.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${CAIRVA_TAIL_BIN:-$PWD/build-release/cairva}
STREAMS=${CAIRVA_TAIL_STREAMS:-1000}
LOAD_S=${CAIRVA_TAIL_LOAD_S:-40}
[ -x "$BIN" ] && [ -x build-release/bench/stream_load ] || { echo "build-release missing: ninja -C build-release cairva bench/stream_load" >&2; exit 1; }
export CAIRVA_ADMIN_TOKEN=tail-admin-token
. bench/one_gateway.sh
start_one_gateway "$BIN" normal 1 100 "$BIN" serve
MOCK_PID=$(pgrep -f "mock-provider --listen 127.0.0.1:$MOCK_PORT")
streams() {
  build-release/bench/stream_load --url "$1" --key "$KEY" --streams "$STREAMS" --chunks 20 --chunk-delay-ms 1000 --pid "$2" \
    | grep '^STREAM' | tr ' ' '\n' | grep -E '^(p50_us|p99_us|max_us|errors|steady_chunks|steady_p99_us)=' | tr '\n' ' '
}
# The relay histogram's cumulative bucket counts, "le count" per line.
relay_buckets() {
  curl -s "http://127.0.0.1:$GW_ADMIN/metrics" -H "Authorization: Bearer $CAIRVA_ADMIN_TOKEN" \
    | sed -n 's/^cairva_stream_relay_seconds_bucket{le="\([^"]*\)"} \([0-9]*\)$/\1 \2/p'
}
# relay_p99 BEFORE AFTER: the smallest bounds holding 50 % and 99 % of the observations in between.
relay_p99() {
  paste -d' ' <(echo "$1") <(echo "$2") | awk '{le[NR] = $1; n[NR] = $4 - $2} END {
    total = n[NR]; p50 = ""; p99 = ""
    for (i = NR; i >= 1; i--) { if (n[i] >= 0.5 * total) p50 = le[i]; if (n[i] >= 0.99 * total) p99 = le[i] }
    printf "relay_p50_le=%ss relay_p99_le=%ss relayed=%d", p50, p99, total }'
}
gateway_streams() {
  local before after line
  before=$(relay_buckets)
  line=$(streams http://127.0.0.1:$GW_PORT "$GW_PID")
  after=$(relay_buckets)
  echo "$line$(relay_p99 "$before" "$after")"
}
echo "fresh, direct:   $(streams http://127.0.0.1:$MOCK_PORT "$MOCK_PID")"
echo "fresh, gateway:  $(gateway_streams)"
CAIRVA_BENCH_KEY=$KEY wrk -t1 -c128 -d"${LOAD_S}s" -s bench/chat.lua http://127.0.0.1:$GW_PORT | sed -n 's/^Requests\/sec: */load: req\/s /p'
sleep 2
echo "loaded, direct:  $(streams http://127.0.0.1:$MOCK_PORT "$MOCK_PID")"
echo "loaded, gateway: $(gateway_streams)"
