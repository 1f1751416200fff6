#!/usr/bin/env bash
# Lint: clang-format (.clang-format) over the project's C++ files, then clang-tidy
# (.clang-tidy) over every translation unit under src/, with the build's
# compile_commands.json. Exits non-zero on any difference or finding.
#   scripts/lint.sh                        # build/ must be configured (scripts/build.sh)
#   scripts/lint.sh build-asan             # another build directory's compile commands
#   CAIRVA_LINT_FORMAT=0 scripts/lint.sh   # clang-tidy only
#   CAIRVA_LINT_TIDY=0 scripts/lint.sh     # clang-format only
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
status=0

if [ "${CAIRVA_LINT_FORMAT:-1}" != 0 ]; then
  mapfile -t files < <(git ls-files -- 'src/*.cpp' 'src/*.h' 'tests/*.cpp' 'tests/*.h' \
    'bench/*.cpp' 'fuzz/*.cpp' 'fuzz/*.h')
  clang-format-14 --dry-run --Werror "${files[@]}" || status=1
fi

if [ "${CAIRVA_LINT_TIDY:-1}" != 0 ]; then
  [ -f "$build/compile_commands.json" ] ||
    { echo "lint: no $build/compile_commands.json (run scripts/build.sh first)" >&2; exit 2; }
  # GCC-only warning flags in the compile commands mean nothing to clang.
  run-clang-tidy-14 -p "$build" -quiet -j "${CAIRVA_JOBS:-$(nproc)}" \
    -extra-arg=-Wno-unknown-warning-option "$PWD/src/.*\.cpp\$" || status=1
fi
exit $status
