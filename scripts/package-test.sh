#!/usr/bin/env bash
# The deployment as an operator gets it (issue 28, item 7):
#  1. the systemd unit passes `systemd-analyze verify` (skipped, saying why, without it);
#     the nginx config for TLS in front passes `nginx -t` and answers its 413 in the
#     gateway's JSON; the Prometheus rules pass `promtool check rules`;
#  2. as root: the Debian package is built with CPack, installed with `dpkg -i` on this
#     machine, and checked — files, owners, modes, the conffile, the cairva user, the
#     gateway started from /usr/bin as the unit starts it, its exit codes — then removed
#     (`dpkg -r`), purged, and what it created on the machine is removed: the machine is
#     left as it was. Not root: skipped, saying why. Refuses to run on a machine that already
#     has a cairva package, user or directory (it would change them).
#   scripts/package-test.sh [BUILD_DIR]     # BUILD_DIR (default build) holds the executable
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
unit=packaging/cairva.service
lock=/tmp/cairva-package-test.lock
work="$(mktemp -d /tmp/cairva-package-test.XXXXXX)"
gw_pid=""
installed=0

say() { echo "package-test: $*"; }
fail() { echo "package-test: FAIL: $*" >&2; exit 1; }

cleanup() {
  [ -n "$gw_pid" ] && kill "$gw_pid" 2>/dev/null && wait "$gw_pid" 2>/dev/null
  if [ "$installed" = 1 ]; then
    dpkg -P cairva >/dev/null 2>&1 || true
    rm -rf /var/lib/cairva /etc/cairva
    if getent passwd cairva >/dev/null; then userdel cairva 2>/dev/null || true; fi
    if getent group cairva >/dev/null; then groupdel cairva 2>/dev/null || true; fi
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# systemd-analyze verify exits 0 on some findings (an unknown key, a bad value ignored): any
# line it prints is a finding.
verify_unit() {
  local out
  out="$(systemd-analyze verify "$1" 2>&1)" || fail "systemd-analyze verify $1: $out"
  [ -z "$out" ] || fail "systemd-analyze verify $1: $out"
}

# --- 1. The unit, as written (its ExecStart pointed at this build's executable).
[ -x "$build/cairva" ] || fail "no executable at $build/cairva (build first)"
if command -v systemd-analyze >/dev/null 2>&1; then
  sed "s|/usr/bin/cairva|$PWD/$build/cairva|" "$unit" >"$work/cairva.service"
  verify_unit "$work/cairva.service"
  say "systemd-analyze verify $unit: ok"
else
  say "SKIP systemd-analyze verify: systemd-analyze is not installed on this machine"
fi

# --- 1b. The nginx config for TLS in front (packaging/nginx/cairva.conf): `nginx -t` with a
# throw-away certificate, then nginx itself on free ports with no gateway behind it: a body
# over its limit gets the JSON 413 in the gateway's shape, anything else 502.
if command -v nginx >/dev/null 2>&1; then
  ng="$work/nginx"
  mkdir -p "$ng/logs"
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=gateway.example.com \
    -keyout "$ng/privkey.pem" -out "$ng/fullchain.pem" >/dev/null 2>&1 || fail "openssl req"
  free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
  p80="$(free_port)" p443="$(free_port)" padmin="$(free_port)" pgw="$(free_port)"
  sed -e "s|/etc/ssl/cairva/|$ng/|" -e "s|listen 80;|listen 127.0.0.1:$p80;|" -e "s|listen 443 |listen 127.0.0.1:$p443 |" \
    -e '/listen \[::\]/d' -e "s|127.0.0.1:8443|127.0.0.1:$padmin|" -e "s|127.0.0.1:8080|127.0.0.1:$pgw|" \
    packaging/nginx/cairva.conf >"$ng/cairva.conf"
  cat >"$ng/nginx.conf" <<NGINX
pid $ng/nginx.pid;
error_log $ng/logs/error.log;
events {}
http { access_log off; client_body_temp_path $ng; proxy_temp_path $ng; include $ng/cairva.conf; }
NGINX
  nginx -t -q -e "$ng/logs/error.log" -p "$ng" -c "$ng/nginx.conf" 2>"$ng/t.log" || fail "nginx -t: $(cat "$ng/t.log" "$ng/logs/error.log")"
  say "nginx -t packaging/nginx/cairva.conf: ok"
  nginx -e "$ng/logs/error.log" -p "$ng" -c "$ng/nginx.conf" || fail "nginx did not start: $(cat "$ng/logs/error.log")"
  head -c $((18 << 20)) /dev/zero >"$ng/big"
  got="$(curl -sk --resolve "gateway.example.com:$p443:127.0.0.1" -o "$ng/413.json" -w '%{http_code} %{content_type}' \
    "https://gateway.example.com:$p443/v1/chat/completions" -H 'Content-Type: application/json' --data-binary @"$ng/big")"
  small="$(curl -sk --resolve "gateway.example.com:$p443:127.0.0.1" -o /dev/null -w '%{http_code}' \
    "https://gateway.example.com:$p443/healthz")"
  kill "$(cat "$ng/nginx.pid")"
  [ "$got" = "413 application/json" ] || fail "nginx over the body limit: $got (expected 413 application/json)"
  grep -qx '{"error":{"type":"request_too_large","code":"request_too_large","message":"request body exceeds 16 MiB"}}' "$ng/413.json" ||
    fail "nginx's 413 body: $(cat "$ng/413.json")"
  [ "$small" = 502 ] || fail "nginx with no gateway behind it: $small (expected 502)"
  say "nginx in front: its 413 is the gateway's JSON, 502 without a gateway: ok"
else
  say "SKIP nginx -t: nginx is not installed on this machine"
fi

# --- 1c. The alerting rules (packaging/prometheus/cairva-rules.yml).
if command -v promtool >/dev/null 2>&1; then
  promtool check rules packaging/prometheus/cairva-rules.yml >"$work/promtool.log" 2>&1 ||
    fail "promtool check rules: $(cat "$work/promtool.log")"
  say "promtool check rules packaging/prometheus/cairva-rules.yml: ok"
else
  say "SKIP promtool check rules: promtool (Debian package prometheus) is not installed"
fi

# --- 2. The package.
if [ "$(id -u)" != 0 ]; then
  say "SKIP the Debian package test: it installs a package and a system user, which needs root"
  exit 0
fi
command -v dpkg >/dev/null 2>&1 || fail "dpkg not found: the package test needs Debian"
# One package test at a time on a machine: each installs the same package and user.
exec 9>"$lock"
flock 9
status="$(dpkg-query -W -f='${db:Status-Status}' cairva 2>/dev/null || true)"
[ -z "$status" ] || [ "$status" = not-installed ] ||
  fail "a cairva package is on this machine ($status): this test would replace it"
for path in /usr/bin/cairva /etc/cairva /var/lib/cairva /usr/lib/systemd/system/cairva.service; do
  [ ! -e "$path" ] || fail "$path exists: this test would change it"
done
! getent passwd cairva >/dev/null || fail "a cairva user exists: this test would change it"
! getent group cairva >/dev/null || fail "a cairva group exists: this test would change it"

cpack --config "$build/CPackConfig.cmake" -B "$work/package" >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log" >&2; fail "cpack failed"; }
deb="$(ls "$work"/package/cairva_*.deb)"
say "built $(basename "$deb")"

installed=1
dpkg -i "$deb" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log" >&2; fail "dpkg -i failed"; }

expect_stat() {  # PATH "OWNER:GROUP MODE"
  local got
  got="$(stat -c '%U:%G %a' "$1")" || fail "$1 is missing"
  [ "$got" = "$2" ] || fail "$1: expected $2, got $got"
}
expect_stat /usr/bin/cairva "root:root 755"
expect_stat /usr/lib/systemd/system/cairva.service "root:root 644"
expect_stat /etc/cairva/cairva.toml "root:root 644"
expect_stat /etc/cairva/cairva.env "root:root 600"
expect_stat /var/lib/cairva "cairva:cairva 700"
expect_stat /usr/share/doc/cairva/examples/nginx/cairva.conf "root:root 644"
expect_stat /usr/share/doc/cairva/examples/prometheus/cairva-rules.yml "root:root 644"
dpkg-query -W -f='${Conffiles}\n' cairva | grep -q '^ /etc/cairva/cairva.toml ' ||
  fail "/etc/cairva/cairva.toml is not a conffile"
grep -Eq '^CAIRVA_ADMIN_TOKEN=[0-9a-f]{48}$' /etc/cairva/cairva.env ||
  fail "/etc/cairva/cairva.env has no generated admin token"
IFS=: read -r _ _ uid _ _ home shell < <(getent passwd cairva)
[ "$uid" -lt 1000 ] && [ "$home" = /var/lib/cairva ] && [ "$shell" = /usr/sbin/nologin ] ||
  fail "cairva user: uid $uid, home $home, shell $shell (expected a system user, /var/lib/cairva, nologin)"
version="$(/usr/bin/cairva --version)" || fail "/usr/bin/cairva --version failed"
grep -q "^cairva $(sed -n 's/^project(cairva VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt) " <<<"$version" ||
  fail "unexpected version: $version"
say "installed: $(head -1 <<<"$version")"
if command -v systemd-analyze >/dev/null 2>&1; then
  verify_unit /usr/lib/systemd/system/cairva.service
  say "systemd-analyze verify of the installed unit: ok"
fi

# The gateway as the unit runs it: the cairva user, UMask=0077, its state directory, the
# environment file, the packaged config (listen ports moved to free ones). setpriv execs it,
# so the pid and the exit code are the gateway's own; `9>&-` keeps the lock out of it.
unit_env() { cd /var/lib/cairva && umask 0077 && set -a && . /etc/cairva/cairva.env && set +a; }
as_cairva=(setpriv --reuid=cairva --regid=cairva --init-groups -- /usr/bin/cairva)
code=0
(unit_env && exec "${as_cairva[@]}" serve --config /etc/cairva/cairva.toml) \
  >"$work/missing-key.log" 2>&1 9>&- || code=$?
[ "$code" = 2 ] || fail "without OPENAI_API_KEY: exit $code (expected 2): $(cat "$work/missing-key.log")"
grep -q OPENAI_API_KEY "$work/missing-key.log" || fail "the refusal does not name OPENAI_API_KEY"
(unit_env && OPENAI_API_KEY=sk-package-test exec "${as_cairva[@]}" serve --config /etc/cairva/cairva.toml \
  --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0) >"$work/gw.log" 2>&1 9>&- &
gw_pid=$!
for _ in $(seq 100); do grep -q 'listening on' "$work/gw.log" && break; kill -0 "$gw_pid" 2>/dev/null || break; sleep 0.1; done
grep -q 'listening on' "$work/gw.log" || fail "the packaged gateway did not start: $(cat "$work/gw.log")"
[ "$(ps -o user=,comm= -p "$gw_pid" | tr -s ' ')" = "cairva cairva" ] ||
  fail "pid $gw_pid is not the gateway running as cairva: $(ps -o user=,args= -p "$gw_pid")"
public="$(sed -n 's/.*listening on \([0-9.:]*\) (admin \([0-9.:]*\)).*/\1/p' "$work/gw.log")"
admin="$(sed -n 's/.*listening on \([0-9.:]*\) (admin \([0-9.:]*\)).*/\2/p' "$work/gw.log")"
# An answer from an event loop: those start once the gateway's signal handler is in place.
curl -sf "http://$public/healthz" >/dev/null || fail "no /healthz from the packaged gateway"
expect_stat /var/lib/cairva/cairva.db "cairva:cairva 600"
# A backup into the state directory, as docs/operations.md shows.
runuser -u cairva -- mkdir -m 0700 /var/lib/cairva/backup
(set -a && . /etc/cairva/cairva.env && set +a &&
  /usr/bin/cairva backup --admin-url "http://$admin" --to /var/lib/cairva/backup/cairva.db) >"$work/backup.log" 2>&1 ||
  fail "cairva backup: $(cat "$work/backup.log")"
expect_stat /var/lib/cairva/backup/cairva.db "cairva:cairva 600"
kill -TERM "$gw_pid"
code=0
wait "$gw_pid" || code=$?
gw_pid=""
[ "$code" = 0 ] || fail "the gateway exited $code after SIGTERM (expected 0): $(cat "$work/gw.log")"
say "the packaged gateway ran as cairva, backed up, and stopped with 0"

dpkg -r cairva >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log" >&2; fail "dpkg -r failed"; }
[ ! -e /usr/bin/cairva ] || fail "dpkg -r left /usr/bin/cairva"
[ ! -e /usr/lib/systemd/system/cairva.service ] || fail "dpkg -r left the unit"
[ -e /etc/cairva/cairva.toml ] || fail "dpkg -r removed the conffile (only a purge may)"
[ -d /var/lib/cairva ] || fail "dpkg -r removed the ledger's directory"
dpkg -P cairva >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log" >&2; fail "dpkg -P failed"; }
[ ! -e /etc/cairva ] || fail "dpkg -P left /etc/cairva: $(ls -A /etc/cairva)"
say "dpkg -r kept the config and the ledger, dpkg -P removed the config"
cleanup
installed=0
trap - EXIT
for path in /usr/bin/cairva /etc/cairva /var/lib/cairva; do [ ! -e "$path" ] || fail "left $path"; done
! getent passwd cairva >/dev/null || fail "left the cairva user"
! getent group cairva >/dev/null || fail "left the cairva group"
say "ok: the machine is as it was"
