#!/usr/bin/env bash
# Installs the Debian packages and npm modules Cairva needs. Idempotent: safe to run again;
# it only installs what is missing.
#   scripts/setup.sh           # everything: build, tests, benchmarks, fuzzing, lint (scripts/test.sh)
#   scripts/setup.sh --build   # only what building and running the gateway need (scripts/run.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
  --build) only_build=1 ;;
  "") only_build=0 ;;
  *) echo "usage: $0 [--build]" >&2; exit 2 ;;
esac

# Boost 1.81 is installed as individual packages: libboost-dev/libboost-all-dev
# pull in 1.74, which conflicts (see STACK.md).
# Building and running: CMakeLists.txt's find_package list (GoogleTest and Google Benchmark
# too: the build configures the tests with the executable), git for the version info,
# curl and ca-certificates for scripts/run.sh and the providers' TLS, Node (below) for the
# web console's build (src/console/CMakeLists.txt runs console/build.mjs), wrk and python3
# for the release build's training run (scripts/build-release.sh, bench/one_gateway.sh).
BUILD_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git ca-certificates curl wrk python3
  libboost-system1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libssl-dev openssl
  libsimdjson-dev libmimalloc-dev libisal-dev libxxhash-dev libsqlite3-dev libpq-dev libpq5
  libtomlplusplus-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
)
# The rest has a user each: the tests (scripts/test.sh: a PostgreSQL server, pg_dump, Node
# below; nginx for packaging/nginx's `nginx -t`, prometheus for `promtool check rules`, jq
# for docs/operations.md's commands), bench/ (sqlite3, nginx, gnuplot, perf, valgrind), fuzz/ (clang, its
# sanitizer runtimes), scripts/lint.sh (clang-format, clang-tidy) or the console's browser
# test (chromium, driven by puppeteer-core: tests/e2e/console.test.mjs).
TEST_PACKAGES=(
  sqlite3
  postgresql-15 postgresql-client-15 chromium
  nginx-light gnuplot-nox linux-perf valgrind jq prometheus
  clang-14 libclang-rt-14-dev clang-format-14 clang-tidy-14
)
PACKAGES=("${BUILD_PACKAGES[@]}")
# Node may come from NodeSource (npm bundled, conflicting with Debian's npm package).
if ! command -v node >/dev/null 2>&1; then PACKAGES+=(nodejs npm); fi
if [ "$only_build" = 0 ]; then PACKAGES+=("${TEST_PACKAGES[@]}"); fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
# apt-get, waiting for the package locks: a fresh machine's boot-time upgrades (or another
# set-up running at once) hold them for a while, and apt-get would fail at once.
apt_get() {
  for attempt in 1 2 3 4 5 6; do
    apt-get -o DPkg::Lock::Timeout=120 "$@" && return 0
    [ "$attempt" = 6 ] && return 1
    echo "setup: apt-get $1 failed (attempt $attempt), retrying in 10 s" >&2
    sleep 10
  done
}

# Always refresh the security-relevant libraries the machine may hold stale.
if [ ${#missing[@]} -gt 0 ] || [ "${CAIRVA_SETUP_UPGRADE:-1}" = 1 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt_get update -qq
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    apt_get install -y -qq --no-install-recommends "${missing[@]}"
  fi
  apt_get install -y -qq --only-upgrade libssl-dev openssl libpq5 libpq-dev >/dev/null || true
fi

# The web console's build (console/package.json, exact versions: esbuild, uPlot, papaparse),
# which the CMake build runs (src/console/CMakeLists.txt).
if ! (cd console && npm ls >/dev/null 2>&1) || [ ! -f console/node_modules/.package-lock.json ]; then
  (cd console && npm ci --no-audit --no-fund --loglevel=error)
fi

if [ "$only_build" = 1 ]; then
  echo "setup: done (build and run only)"
  exit 0
fi

# nginx-light starts a service on install on some machines: the benchmark starts its own;
# prometheus too: the tests use only its promtool.
if command -v systemctl >/dev/null 2>&1; then
  systemctl disable --now nginx >/dev/null 2>&1 || true
  systemctl disable --now prometheus >/dev/null 2>&1 || true
fi

# The official clients for the end-to-end tests (tests/e2e/package.json, exact versions),
# installed again whenever one is missing or at another version.
e2e_clients_installed() {
  (cd tests/e2e && node -e '
    const deps = require("./package.json").dependencies;
    for (const [name, version] of Object.entries(deps)) {
      try {
        if (require(`./node_modules/${name}/package.json`).version !== version) process.exit(1);
      } catch { process.exit(1); }
    }')
}
if ! e2e_clients_installed; then
  (cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error)
fi
echo "setup: done"
