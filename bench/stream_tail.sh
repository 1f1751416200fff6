#!/usr/bin/env bash
# The streams' added tail on one gateway, fresh and after a load: 1,000 streams (bench/
# stream_load) direct to the mock and through the gateway, then CAIRVA_TAIL_LOAD_S seconds of
# wrk at 128 connections, then the same streams again. stream_load's steady_p99_us counts
# only chunks received while every stream was open and none had ended (no admission or
# settlement running).
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
echo "fresh, direct:   $(streams http://127.0.0.1:$MOCK_PORT "$MOCK_PID")"
echo "fresh, gateway:  $(streams http://127.0.0.1:$GW_PORT "$GW_PID")"
CAIRVA_BENCH_KEY=$KEY wrk -t1 -c128 -d"${LOAD_S}s" -s bench/chat.lua http://127.0.0.1:$GW_PORT | sed -n 's/^Requests\/sec: */load: req\/s /p'
sleep 2
echo "loaded, direct:  $(streams http://127.0.0.1:$MOCK_PORT "$MOCK_PID")"
echo "loaded, gateway: $(streams http://127.0.0.1:$GW_PORT "$GW_PID")"
