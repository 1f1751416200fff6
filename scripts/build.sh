#!/usr/bin/env bash
# Configures and builds Cairva into build/ (or $1), leaving the executable at build/cairva.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-build}"
shift || true
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="${CAIRVA_BUILD_TYPE:-RelWithDebInfo}" "$@" >/dev/null
ninja -C "$dir" -j"${CAIRVA_JOBS:-$(nproc)}"
