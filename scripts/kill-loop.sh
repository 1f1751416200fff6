#!/usr/bin/env bash
# SIGKILL loop on the embedded store (issue 7): KILLS (default 200) kills at random moments
# under load, a restart and `cairva audit` after each; prints the figures as one JSON line
# and exits non-zero if an acknowledged booking was lost, anything was booked twice or an
# audit failed.
#   CAIRVA_BIN=build-rel/cairva KILLS=200 SEED=20261130 scripts/kill-loop.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export CAIRVA_BIN="${CAIRVA_BIN:-$root/build/cairva}"
[[ -x "$CAIRVA_BIN" ]] || { echo "kill-loop: no executable at $CAIRVA_BIN (build first)" >&2; exit 2; }
cd "$root/tests/e2e"
exec node faults-kill-loop.mjs
