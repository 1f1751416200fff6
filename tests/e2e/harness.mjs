// Test harness: starts real `cairva mock-provider` and `cairva serve` processes on free
// ports in a temporary folder, and gives tests an admin client and raw HTTP helpers.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import net from 'node:net';
import { before, after } from 'node:test';

// Absolute: the gateways run in their own working directories.
export const BIN = process.env.CAIRVA_BIN ? resolve(process.env.CAIRVA_BIN) : resolve(import.meta.dirname, '../../build/cairva');
export const ADMIN_TOKEN = 'test-admin-token-' + Math.random().toString(36).slice(2);
export const PROVIDER_KEY = 'sk-supplier-secret-' + Math.random().toString(36).slice(2);

export async function freePort() {
  return new Promise((res, rej) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => res(port));
    });
    srv.on('error', rej);
  });
}

// Starts a process and resolves once `ready` matches a line of its stdout.
// `launcher` runs the binary through another command (e.g. ['prlimit', '--nofile=1024', '--']).
export function startProcess(args, { env = {}, ready = /listening on/, cwd, launcher = [] } = {}) {
  const [cmd, ...pre] = [...launcher, BIN];
  const child = spawn(cmd, [...pre, ...args],
    { env: { ...process.env, ...env }, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => { err += d; });
  const started = new Promise((res, rej) => {
    child.stdout.on('data', (d) => {
      out += d;
      if (ready.test(out)) res();
    });
    child.on('exit', (code) => rej(new Error(`${args[0]} exited with ${code} before ready:\n${out}\n${err}`)));
  });
  child.output = () => out + err;
  child.started = started;
  return child;
}

export async function stopProcess(child, signal = 'SIGTERM') {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((res) => child.once('exit', res));
  child.kill(signal);
  await exited;
}

export async function startMock(extraArgs = []) {
  const port = await freePort();
  const child = startProcess(['mock-provider', '--listen', `127.0.0.1:${port}`, ...extraArgs]);
  await child.started;
  return { child, port, url: `http://127.0.0.1:${port}` };
}

// Starts `cairva serve` with a config file in a fresh folder. `opts.store` overrides the
// store URL; `opts.extraToml` is appended to the config (a function of the mock when it names
// the mock's URL); `opts.serverToml` goes in [server];
// `opts.launcher` as startProcess's.
export async function startGateway(mock, opts = {}) {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'cairva-e2e-'));
  const port = opts.port ?? await freePort();
  const adminPort = opts.adminPort ?? await freePort();
  const store = opts.store ?? `sqlite://${join(dir, 'cairva.db')}`;
  const config = `[server]
listen = "127.0.0.1:${port}"
admin_listen = "127.0.0.1:${adminPort}"
threads = ${opts.threads ?? 2}
${opts.serverToml ?? ''}
[admin]
token_env = "CAIRVA_ADMIN_TOKEN"
[store]
url = "${store}"
[holds]
default_max_tokens = ${opts.defaultMaxTokens ?? 1024}
in_flight_timeout_s = ${opts.inFlightTimeout ?? 600}
[[providers]]
name = "mock"
base_url = "${mock.url}/v1"
api_key_env = "CAIRVA_TEST_PROVIDER_KEY"
timeout_s = ${opts.providerTimeout ?? 30}
${typeof opts.extraToml === 'function' ? opts.extraToml(mock) : opts.extraToml ?? ''}`;
  const configPath = join(dir, 'cairva.toml');
  writeFileSync(configPath, config);
  const child = startProcess(['serve', '--config', configPath], {
    env: { CAIRVA_ADMIN_TOKEN: ADMIN_TOKEN, CAIRVA_TEST_PROVIDER_KEY: PROVIDER_KEY },
    cwd: dir,
    launcher: opts.launcher,
  });
  await child.started;
  const gw = {
    child, dir, port, adminPort, configPath, store,
    url: `http://127.0.0.1:${port}`,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    admin: (method, path, body) => adminCall(`http://127.0.0.1:${adminPort}`, method, path, body),
    async stop(signal) { await stopProcess(child, signal); },
    cleanup() { rmSync(dir, { recursive: true, force: true }); },
  };
  return gw;
}

export async function adminCall(adminUrl, method, path, body, token = ADMIN_TOKEN) {
  const res = await fetch(adminUrl + path, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, body: json, text, headers: res.headers };
}

// Creates an agreement for the mock provider; returns { agreement, allocation, secret }.
export async function createAgreement(gw, overrides = {}) {
  const now = Date.now();
  const body = {
    supplier: 'supplier-co', buyer: 'buyer-co', provider: 'mock',
    input_tokens: 1_000_000, output_tokens: 1_000_000,
    starts_at: new Date(now - 1000).toISOString(),
    ends_at: new Date(now + 3600_000).toISOString(),
    requests_per_minute: 10_000, tokens_per_minute: 100_000_000, max_concurrency: 1000,
    ...overrides,
  };
  const r = await gw.admin('POST', '/admin/v1/agreements', body);
  if (r.status !== 201) throw new Error(`create agreement: ${r.status} ${r.text}`);
  return { agreement: r.body.agreement, allocation: r.body.allocation, secret: r.body.api_key.secret };
}

export async function chat(gw, secret, body, headers = {}) {
  const res = await fetch(gw.url + '/v1/chat/completions', {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, body: json, text, headers: res.headers };
}

export async function mockStats(mock) {
  return (await fetch(mock.url + '/mock/stats')).json();
}

// The last API request the mock served: its body (null when none), authorization header
// and "METHOD target".
export async function mockLast(mock) {
  const res = await fetch(mock.url + '/mock/last');
  return {
    body: await res.json(),
    authorization: res.headers.get('x-mock-authorization'),
    target: res.headers.get('x-mock-target'),
  };
}

// Sends raw bytes on a fresh TCP connection; resolves with everything read until close
// or `timeoutMs`.
export function rawHttp(port, payload, { timeoutMs = 5000, keepOpen = false } = {}) {
  return new Promise((res) => {
    const sock = net.connect(port, '127.0.0.1');
    let data = '';
    const done = () => { sock.destroy(); res(data); };
    const timer = setTimeout(done, timeoutMs);
    sock.on('data', (d) => { data += d; });
    sock.on('close', () => { clearTimeout(timer); res(data); });
    sock.on('error', () => {});
    sock.on('connect', () => { if (payload) sock.write(payload); if (!keepOpen && false) sock.end(); });
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Polls `fn` until it returns a truthy value (bounded by `tries`).
export async function eventually(fn, tries = 100, everyMs = 100) {
  for (let i = 0; i < tries; i++) {
    const v = await fn();
    if (v) return v;
    await sleep(everyMs);
  }
  return fn();
}

// One mock provider and one gateway for a whole test file: started before its first test,
// stopped after its last. `onStart(mock, gw)` receives them (and may prepare more).
export function gatewayForFile({ mockArgs = [], gateway = {} } = {}, onStart = () => {}) {
  let mock, gw;
  before(async () => {
    mock = await startMock(mockArgs);
    gw = await startGateway(mock, gateway);
    await onStart(mock, gw);
  });
  after(async () => {
    await gw?.stop();
    mock?.child.kill();
    gw?.cleanup();
  });
}

// A psql command against a PostgreSQL URL (the test cluster of scripts/pg-test-cluster.sh).
export function psql(url, sql) {
  return execFileSync('psql', [url, '-qAt', '-v', 'ON_ERROR_STOP=1', '-c', sql], { encoding: 'utf8' });
}

// The same server's URL with another database name.
export function databaseUrl(base, name) {
  const u = new URL(base);
  u.pathname = '/' + name;
  return u.toString();
}
