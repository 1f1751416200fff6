#!/usr/bin/env bash
# Plots requests/s and p99 against connections for each system from the first table of a
# benchmarks markdown file (as bench/run.sh writes it).
#   bench/plot.sh docs/benchmarks.md docs/bench.png
set -euo pipefail
md=${1:-docs/benchmarks.md}
png=${2:-docs/bench.png}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Rows of the throughput table: | connections | system | requests/s | × nginx | p50 | p99 | ...
awk -F'|' -v dir="$tmp" '/^## / {exit} $2 ~ /^ *[0-9]+ *$/ {
    gsub(/ /, "", $2); gsub(/ /, "", $3); gsub(/ /, "", $4); gsub(/ /, "", $7);
    print $2, $4, $7/1000 >> (dir "/" $3 ".dat"); if (!seen[$3]++) print $3 >> (dir "/systems") }' "$md"
[ -s "$tmp/systems" ] || { echo "plot: no table rows in $md" >&2; exit 1; }
plots() {  # $1 = column
  local first=1
  while read -r s; do
    [ $first = 1 ] || printf ", "
    printf "'%s' using 1:%s with linespoints title '%s'" "$tmp/$s.dat" "$1" "$s"
    first=0
  done < "$tmp/systems"
  echo
}
{
  echo "set terminal pngcairo size 1100,450 noenhanced"
  echo "set output '$png'; set multiplot layout 1,2"
  echo "set logscale x 2; set logscale y; set xlabel 'connections'; set key left top; set grid"
  printf "set ylabel 'requests/s'; plot "; plots 2
  printf "set ylabel 'p99 latency (ms)'; plot "; plots 3
  echo "unset multiplot"
} > "$tmp/plot.gp"
gnuplot "$tmp/plot.gp"
