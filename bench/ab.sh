#!/usr/bin/env bash
# A/B of two gateway builds under the same load, in alternating pairs: this machine's speed
# drifts by ±20 % over minutes, so only a pair run back to back is a comparison. Each pair
# runs bench/profile.sh (no perf) on A and B, the order swapped every other pair; the
# result is each pair's B/A ratio of requests/s and of CPU per request, and their medians.
#   bench/ab.sh /tmp/cairva-A /tmp/cairva-B                # 128 connections, 8 pairs of 6 s
#   CAIRVA_AB_CONNS=32 CAIRVA_AB_PAIRS=12 CAIRVA_AB_SECONDS=8 bench/ab.sh A B
# Differences under ~5 % need many pairs; bench/instructions.sh resolves smaller ones.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: bench/ab.sh BIN_A BIN_B" >&2; exit 2; }
for bin in "$1" "$2"; do [ -x "$bin" ] || { echo "not an executable: $bin" >&2; exit 2; }; done
A=$(realpath "$1") B=$(realpath "$2")
cd "$(dirname "$0")/.."
CONNS=${CAIRVA_AB_CONNS:-128}
PAIRS=${CAIRVA_AB_PAIRS:-8}
SECONDS_=${CAIRVA_AB_SECONDS:-6}
work=$(mktemp -d /tmp/cairva-ab.XXXXXX)
trap 'rm -rf "$work"' EXIT

# One run of build $1 (A or B) in pair $2: "requests/s CPU-µs-per-request", or nothing
# when the run failed (the end of its output on stderr).
one_run() {
  local bin=$A out="$work/run.$1.$2"
  [ "$1" = B ] && bin=$B
  # The mock provider is A's in every run: only the gateway differs between A and B.
  CAIRVA_PROFILE_BIN=$bin CAIRVA_PROFILE_MOCK_BIN=$A CAIRVA_PROFILE_PERF=0 CAIRVA_PROFILE_CONNS=$CONNS CAIRVA_PROFILE_SECONDS=$SECONDS_ \
    bench/profile.sh > "$out" 2>&1 || { echo "run failed, see below:" >&2; tail -5 "$out" >&2; return 0; }
  awk '/^requests\/s:/ {r = $2} /^CPU per request:/ {c = $4} END {if (r > 0 && c > 0) print r, c}' "$out"
}

: > "$work/pairs"
for i in $(seq "$PAIRS"); do
  if [ $((i % 2)) = 1 ]; then a=$(one_run A "$i"); b=$(one_run B "$i")
  else b=$(one_run B "$i"); a=$(one_run A "$i"); fi
  if [ -z "$a" ] || [ -z "$b" ]; then echo "pair $i: a run failed, left out"; continue; fi
  ratios=$(echo "$a $b" | awk '{printf "%.4f %.4f\n", $3 / $1, $4 / $2}')
  echo "$ratios" >> "$work/pairs"
  echo "$a $b $ratios" | awk -v i="$i" \
    '{printf "pair %d: A %6.0f req/s %5.1f us | B %6.0f req/s %5.1f us | B/A req/s %.3f, CPU %.3f\n", i, $1, $2, $3, $4, $5, $6}'
done
median() { sort -n | awk '{v[NR] = $1} END {if (NR == 0) print "-"; else if (NR % 2) printf "%.3f\n", v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "median B/A over $(wc -l < "$work/pairs") pairs at $CONNS connections: requests/s $(awk '{print $1}' "$work/pairs" | median), CPU per request $(awk '{print $2}' "$work/pairs" | median)"
