#!/usr/bin/env bash
# The main job: set up, build, and run Cairva on the embedded store in front of the
# built-in mock provider, with a demo agreement. Prints a working curl line.
set -euo pipefail
cd "$(dirname "$0")/.."

# What building and running need, not the test tools (scripts/test.sh installs those).
./scripts/setup.sh --build
# The executable alone: the tests and benchmarks are scripts/test.sh's to build.
CAIRVA_TARGETS=cairva ./scripts/build.sh build

workdir="${CAIRVA_DEMO_DIR:-$PWD/demo}"
mkdir -p "$workdir"
export CAIRVA_ADMIN_TOKEN="${CAIRVA_ADMIN_TOKEN:-demo-admin-token}"
export CAIRVA_ADMIN_URL="http://127.0.0.1:8081"
cat > "$workdir/cairva.toml" <<TOML
[server]
listen = "127.0.0.1:8080"
admin_listen = "127.0.0.1:8081"
[store]
url = "sqlite://$workdir/cairva.db"
[[providers]]
name = "mock"
base_url = "http://127.0.0.1:9090/v1"
TOML

./build/cairva mock-provider --listen 127.0.0.1:9090 &
mock_pid=$!
./build/cairva serve --config "$workdir/cairva.toml" &
gw_pid=$!
trap 'kill $gw_pid $mock_pid 2>/dev/null; wait 2>/dev/null' EXIT INT TERM

for _ in $(seq 100); do
  if ! kill -0 $gw_pid 2>/dev/null || ! kill -0 $mock_pid 2>/dev/null; then
    echo "run.sh: the gateway or the mock provider exited (ports 8080, 8081, 9090 must be free)" >&2
    exit 1
  fi
  curl -sf http://127.0.0.1:8080/healthz >/dev/null 2>&1 && break
  sleep 0.1
done

secret=$(./build/cairva agreement create --supplier demo-supplier --buyer demo-buyer --provider mock \
  --input-tokens 1000000 --output-tokens 1000000 --duration 30d \
  --rpm 600 --tpm 1000000 --concurrency 16 --json | sed -n 's/.*"secret":"\(cv_[A-Za-z0-9]*\)".*/\1/p')

cat <<MSG

Cairva is running on the embedded store ($workdir/cairva.db) in front of the mock provider.
A demo agreement is in force. Try:

  curl -s http://127.0.0.1:8080/v1/chat/completions \\
    -H "Authorization: Bearer $secret" -H "Content-Type: application/json" \\
    -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello"}],"max_tokens":64}'

  curl -s http://127.0.0.1:8080/v1/allocations/current -H "Authorization: Bearer $secret"

Operators: CAIRVA_ADMIN_TOKEN=$CAIRVA_ADMIN_TOKEN ./build/cairva allocation list
Console:   http://127.0.0.1:8081/ (sign in with the admin token $CAIRVA_ADMIN_TOKEN);
           the buyer's page is http://127.0.0.1:8080/ (sign in with the cv_ key above)
Press Ctrl-C to stop.
MSG
wait $gw_pid
