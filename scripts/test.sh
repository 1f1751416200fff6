#!/usr/bin/env bash
# The whole test suite: set-up, build, a throw-away PostgreSQL, unit + contract + model
# tests (CTest), end-to-end tests (Node's test runner with the official openai client; among
# them tests/e2e/docs.test.mjs, which runs docs/operations.md's commands as written), the
# deployment (scripts/build-release.sh, then scripts/package-test.sh: the systemd unit
# verified, `nginx -t` on the nginx example, `promtool check rules` on the alerting rules;
# as root, the Debian package of the release build installed, checked and removed);
# scripts/lint.sh (clang-format and clang-tidy, below).
# CAIRVA_TEST_SANITIZE=1 also runs the CTest suite under ASan+UBSan, the end-to-end suites
# against the ASan+UBSan binary, and the concurrent parts (the stores and their contract
# suite: writer thread, per-allocation mutexes, connection pools, PostgreSQL workers)
# under TSan.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
./scripts/build.sh build

./scripts/pg-test-cluster.sh start
trap './scripts/pg-test-cluster.sh stop' EXIT
CAIRVA_TEST_PG_URL="$(./scripts/pg-test-cluster.sh url)"
export CAIRVA_TEST_PG_URL

status=0
# clang-tidy over every translation unit of src/ runs by default: about 38 CPU-minutes, so
# 20 minutes on two cores, which with the rest of the suite stays well inside CI's 90
# (CAIRVA_LINT_TIDY=0 skips it). The clang-format check takes seconds and runs too
# (CAIRVA_LINT_FORMAT=0 skips it).
if [ "${CAIRVA_LINT_FORMAT:-1}" != 0 ] || [ "${CAIRVA_LINT_TIDY:-1}" != 0 ]; then
  CAIRVA_LINT_FORMAT="${CAIRVA_LINT_FORMAT:-1}" CAIRVA_LINT_TIDY="${CAIRVA_LINT_TIDY:-1}" \
    ./scripts/lint.sh build || status=1
fi
ctest --test-dir build --output-on-failure -j2 || status=1
(cd tests/e2e && node --test --test-concurrency=2 ./*.test.mjs) || status=1
# The package as shipped: the profile-guided release build (about 8 minutes on two cores).
if ./scripts/build-release.sh build-release; then
  ./scripts/package-test.sh build-release || status=1
else
  status=1
fi

if [ "${CAIRVA_TEST_SANITIZE:-0}" = 1 ]; then
  # RelWithDebInfo: sanitizers instrument optimised code; CAIRVA_ASSERT stays on. (Debug
  # would also switch on simdjson's development checks, see docs/reliability.md §6.)
  ./scripts/build.sh build-asan -DCAIRVA_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
  ctest --test-dir build-asan --output-on-failure -j2 || status=1
  (cd tests/e2e && CAIRVA_BIN="$PWD/../../build-asan/cairva" \
    node --test --test-concurrency=1 ./*.test.mjs) || status=1
  ./scripts/build.sh build-tsan -DCAIRVA_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
  TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build-tsan --output-on-failure -j2 \
    -R '[Ss]qlite|[Pp]ostgres|[Cc]ontract|Oplog|Writes|Workers' || status=1
fi
exit $status
