#!/usr/bin/env bash
# The training run of the profile-guided release build (scripts/build-release.sh): the
# instrumented executable BIN serves the benchmark's load — the chat path as bench/run.sh
# drives it, plain and streamed, on the embedded store in front of the mock provider — and
# exits cleanly on SIGTERM, which writes its profile.
#   bench/pgo-train.sh BIN
# CAIRVA_PGO_TRAIN_SECONDS (default 8): how long each load runs.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$1
SECONDS_=${CAIRVA_PGO_TRAIN_SECONDS:-8}
command -v wrk >/dev/null || { echo "wrk missing: scripts/setup.sh installs it" >&2; exit 1; }
export CAIRVA_ADMIN_TOKEN=pgo-train-admin-token
. bench/one_gateway.sh
start_one_gateway "$BIN" normal 1 600 "$BIN" serve
# 32 connections on one event loop: the concurrency of the benchmark's middle point.
for stream in 0 1; do
  CAIRVA_BENCH_STREAM=$stream CAIRVA_BENCH_KEY=$KEY wrk -t1 -c32 -d"${SECONDS_}s" -s bench/chat.lua \
    "http://127.0.0.1:$GW_PORT" | grep -E '^(Requests/sec|  Non-2xx)' | sed "s/^/pgo-train: stream=$stream: /"
done
kill -TERM "$GW_PID"
wait "$GW_PID" || { echo "pgo-train: the gateway did not exit cleanly (see $work/log)" >&2; exit 1; }
