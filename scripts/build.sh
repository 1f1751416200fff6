#!/usr/bin/env bash
# Configures and builds Cairva into build/ (or $1), leaving the executable at build/cairva.
# Builds every target (tests, benchmarks, fuzz replays) unless CAIRVA_TARGETS names some,
# e.g. CAIRVA_TARGETS=cairva for the executable alone.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-build}"
shift || true
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="${CAIRVA_BUILD_TYPE:-RelWithDebInfo}" "$@" >/dev/null
# shellcheck disable=SC2086  # CAIRVA_TARGETS is a list of names
ninja -C "$dir" -j"${CAIRVA_JOBS:-$(nproc)}" ${CAIRVA_TARGETS:-}
