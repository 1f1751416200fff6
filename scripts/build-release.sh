#!/usr/bin/env bash
# Builds the release executable into build-release/ (or $1) with profile-guided and
# link-time optimisation, as benchmarks and packages use it: an instrumented build serves
# the benchmark's chat load (bench/pgo-train.sh), then everything is compiled again with
# that profile, and linked with LTO. The event loop's code is larger than its instruction
# cache; the profile lays out the hot paths together and moves the cold ones aside.
#   scripts/build-release.sh [DIR [TARGET...]]     # default: build-release cairva
# Needs what scripts/setup.sh --build installs (wrk among it). Without ccache: it cannot
# tell which profile an object was compiled with.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-build-release}"
shift || true
targets=("${@:-cairva}")
jobs="${CAIRVA_JOBS:-$(nproc)}"
configure() {
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
}
configure -DCAIRVA_PGO=generate -DCMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF
ninja -C "$dir" -j"$jobs" cairva
rm -rf "$dir/pgo-profile"
bench/pgo-train.sh "$dir/cairva"
[ -n "$(find "$dir/pgo-profile" -name '*.gcda' -print -quit 2>/dev/null)" ] ||
  { echo "build-release: the training left no profile in $dir/pgo-profile" >&2; exit 1; }
configure -DCAIRVA_PGO=use -DCMAKE_INTERPROCEDURAL_OPTIMIZATION=ON
ninja -C "$dir" -j"$jobs" "${targets[@]}"
