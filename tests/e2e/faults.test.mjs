// Fault injection (issue 7): a provider that misbehaves in every way the mock can script,
// a store whose disk fills up mid-run, and clients that abuse the HTTP layer. Each case
// asserts the client's response, the request's state and the booked and held totals as
// SPEC §5 says, and `cairva audit` runs clean beside the live gateway after each group.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, execSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, unlinkSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import {
  BIN, startMock, startGateway, createAgreement, chat, mockStats, rawHttp, sleep, eventually,
} from './harness.mjs';

export function audit(store) {
  try {
    return { code: 0, out: execFileSync(BIN, ['audit', '--store', store], { encoding: 'utf8' }) };
  } catch (e) {
    return { code: e.status, out: String(e.stdout) + String(e.stderr) };
  }
}

// A streamed chat whose connection may be cut: resolves with what arrived and how it ended.
async function chatStream(gw, secret, body) {
  const res = await fetch(gw.url + '/v1/chat/completions', {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true }),
  });
  let text = '';
  let complete = true;
  try {
    const decoder = new TextDecoder();
    for await (const chunk of res.body) text += decoder.decode(chunk, { stream: true });
  } catch {
    complete = false;  // the gateway closed without a clean end of the chunked body
  }
  const events = text.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));
  return { status: res.status, text, complete, events, headers: res.headers };
}

let mock;
let gw;
before(async () => {
  mock = await startMock(['--threads', '2']);
  // The attacks and the legitimate traffic all come from 127.0.0.1, as behind a load balancer.
  gw = await startGateway(mock, { serverToml: 'connections_per_client_max = 0' });
});
after(async () => {
  await gw?.stop();
  mock?.child.kill();
  gw?.cleanup();
});

const MESSAGES = [{ role: 'user', content: 'hi' }];
// SPEC §4: every key and string of {model, messages: MESSAGES, max_tokens: 50} but the
// model's name, 40 code points: ceil(40/3) + 4 + 8 = 26; streamed with stream_options
// {include_usage: true} (and stream: true), 73: 37.
const HOLD = { input_tokens: 26, output_tokens: 50 };
const HOLD_STREAMED = { input_tokens: 37, output_tokens: 50 };
const ZERO = { input_tokens: 0, output_tokens: 0 };

// One fresh allocation per case, so that its totals are the case's alone.
async function fresh(overrides = {}) {
  const a = await createAgreement(gw, overrides);
  return {
    ...a,
    async state() {
      const r = await gw.admin('GET', `/admin/v1/requests?allocation_id=${a.allocation.id}`);
      const s = await gw.admin('GET', `/admin/v1/allocations/${a.allocation.id}`);
      const e = await gw.admin('GET', `/admin/v1/events?allocation_id=${a.allocation.id}`);
      const c = await gw.admin('GET', `/admin/v1/conflicts?allocation_id=${a.allocation.id}`);
      return { requests: r.body.data, alloc: s.body, events: e.body.data, conflicts: c.body.data };
    },
  };
}

function assertTotals(st, { state, used, held, events }) {
  assert.equal(st.requests.length, 1, 'one request admitted');
  assert.equal(st.requests[0].state, state, 'request state');
  assert.deepEqual(st.alloc.used, used, 'booked totals');
  assert.deepEqual(st.alloc.held, held, 'held totals');
  assert.equal(st.events.length, events, 'usage events');
}

function assertAuditClean() {
  const r = audit(gw.store);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /ok: no violation/);
}

test('the audit runs read-only beside the live gateway that owns the SQLite file', async () => {
  const a = await fresh();
  assert.equal((await chat(gw, a.secret, { model: 'mock', messages: MESSAGES })).status, 200);
  assertAuditClean();
  // The gateway still owns the file and serves after the audit.
  assert.equal((await chat(gw, a.secret, { model: 'mock', messages: MESSAGES })).status, 200);
});

// --- (a) a misbehaving provider ---

test('provider resets the connection mid-stream: usage_pending, hold kept, the client told usage is pending and the stream is cut', async () => {
  const a = await fresh();
  const r = await chatStream(gw, a.secret, {
    model: 'mock?reset-after=2', messages: MESSAGES, max_tokens: 50, stream_options: { include_usage: true },
  });
  assert.equal(r.status, 200);
  // SPEC §5: after a 2xx a cut stream settles as usage missing, and the client's stream ends
  // with a pending usage chunk (what the provider sent before its reset may be lost with it),
  // then an error event and no [DONE], so that the client can tell it is truncated.
  assert.ok(!r.events.includes('[DONE]'), r.text);
  assert.equal(JSON.parse(r.events.at(-1)).error.code, 'provider_unavailable');
  const usage = JSON.parse(r.events.at(-2));
  assert.equal(usage.usage, null);
  assert.equal(usage.usage_source, 'pending');
  assertTotals(await a.state(), { state: 'usage_pending', used: ZERO, held: HOLD_STREAMED, events: 0 });
});

test('provider resets the connection mid-body (non-streaming): 502, usage_pending, hold kept', async () => {
  const a = await fresh();
  const r = await chat(gw, a.secret, { model: 'mock?reset-after=20', messages: MESSAGES, max_tokens: 50 });
  assert.equal(r.status, 502);
  assert.equal(r.body.error.code, 'provider_unavailable');
  assertTotals(await a.state(), { state: 'usage_pending', used: ZERO, held: HOLD, events: 0 });
});

test('truncated SSE line at the end of the stream: usage_pending; a client that asked gets a pending usage chunk', async () => {
  const a = await fresh();
  const r = await chatStream(gw, a.secret, {
    model: 'mock?truncate-after=3', messages: MESSAGES, max_tokens: 50, stream_options: { include_usage: true },
  });
  assert.equal(r.status, 200);
  const usage = r.events.filter((e) => e !== '[DONE]').map((e) => JSON.parse(e)).find((e) => 'usage_source' in e);
  assert.ok(usage, 'a final usage chunk');
  assert.equal(usage.usage, null);
  assert.equal(usage.usage_source, 'pending');
  assertTotals(await a.state(), { state: 'usage_pending', used: ZERO, held: HOLD_STREAMED, events: 0 });
});

test('malformed JSON body from the provider (200): 502 provider_unavailable, usage_pending, hold kept', async () => {
  const a = await fresh();
  const r = await chat(gw, a.secret, { model: 'mock?malformed', messages: MESSAGES, max_tokens: 50 });
  assert.equal(r.status, 502);
  assert.equal(r.body.error.code, 'provider_unavailable');
  assertTotals(await a.state(), { state: 'usage_pending', used: ZERO, held: HOLD, events: 0 });
});

test('provider announces a body over 64 MiB (200): refused before reading it, 502, usage_pending, hold kept', async () => {
  // The mock sends a few bytes of the announced 1 TiB and closes: a gateway reading on would
  // report a cut-off body; the length is refused before any body byte is read.
  const a = await fresh();
  const r = await chat(gw, a.secret, { model: 'mock?oversize', messages: MESSAGES, max_tokens: 50 });
  assert.equal(r.status, 502);
  assert.equal(r.body.error.code, 'provider_unavailable');
  assert.match(r.body.error.message, /exceeds 64 MiB/);
  assertTotals(await a.state(), { state: 'usage_pending', used: ZERO, held: HOLD, events: 0 });
  // The gateway still serves through a fresh provider connection.
  assert.equal((await chat(gw, a.secret, { model: 'mock', messages: MESSAGES, max_tokens: 50 })).status, 200);
});

test('provider error status announcing a body over 64 MiB: 502, hold released, nothing booked', async () => {
  const a = await fresh();
  const r = await chat(gw, a.secret, { model: 'mock?oversize&status=500', messages: MESSAGES, max_tokens: 50 });
  assert.equal(r.status, 502);
  assert.match(r.body.error.message, /exceeds 64 MiB/);
  assertTotals(await a.state(), { state: 'failed', used: ZERO, held: ZERO, events: 0 });
});

test('a malformed event inside a stream does not stop its later usage from being booked once', async () => {
  const a = await fresh();
  const r = await chatStream(gw, a.secret, { model: 'mock?malformed&usage=10,7', messages: MESSAGES, max_tokens: 50 });
  assert.equal(r.status, 200);
  assert.ok(r.complete);
  assertTotals(await a.state(), { state: 'booked', used: { input_tokens: 10, output_tokens: 7 }, held: ZERO, events: 1 });
});

for (const [name, usage] of [
  ['negative', '-5,7'], ['non-integer', '1.5,7'], ['exponent', '1e3,7'],
  ['absurd (over 2^40)', '1099511627777,7'],
]) {
  test(`usage with ${name} counts is never booked: usage_pending, hold kept, usage_source pending`, async () => {
    const a = await fresh();
    const r = await chat(gw, a.secret, { model: `mock?usage=${usage}`, messages: MESSAGES, max_tokens: 50 });
    assert.equal(r.status, 200);
    assert.equal(r.body.usage_source, 'pending');
    const s = await chatStream(gw, a.secret, {
      model: `mock?usage=${usage}`, messages: MESSAGES, max_tokens: 50, stream_options: { include_usage: true },
    });
    assert.equal(s.status, 200);
    const st = await a.state();
    assert.equal(st.requests.length, 2);
    for (const q of st.requests) assert.equal(q.state, 'usage_pending');
    assert.deepEqual(st.alloc.used, ZERO);
    assert.deepEqual(st.alloc.held, { input_tokens: HOLD.input_tokens + HOLD_STREAMED.input_tokens, output_tokens: 100 });
    assert.equal(st.events.length, 0);
  });
}

// A count beyond int64 is invalid usage, not a malformed body: the client gets the body
// with usage null and usage_source pending (SPEC §5 "Usage missing"), nothing is booked.
test('usage with a count beyond int64 is never booked: usage_pending, hold kept', async () => {
  const a = await fresh();
  const r = await chat(gw, a.secret, { model: 'mock?usage=99999999999999999999,7', messages: MESSAGES, max_tokens: 50 });
  assert.equal(r.status, 200);
  assert.equal(r.body.usage, null);
  assert.equal(r.body.usage_source, 'pending');
  const s = await chatStream(gw, a.secret, { model: 'mock?usage=99999999999999999999,7', messages: MESSAGES, max_tokens: 50 });
  assert.equal(s.status, 200);
  const st = await a.state();
  for (const q of st.requests) assert.equal(q.state, 'usage_pending');
  assert.deepEqual(st.alloc.used, ZERO);
  // The streamed body has "stream": true beside the plain one's members: 46 code points, 28.
  assert.deepEqual(st.alloc.held, { input_tokens: HOLD.input_tokens + 28, output_tokens: 100 });
  assert.equal(st.events.length, 0);
});

test('missing provider id: booked under x-request-id, else under the gateway request id', async () => {
  const a = await fresh();
  const h = await chat(gw, a.secret, { model: 'mock?no-id&header-id=hdr-123', messages: MESSAGES, max_tokens: 50 });
  assert.equal(h.status, 200);
  const n = await chat(gw, a.secret, { model: 'mock?no-id', messages: MESSAGES, max_tokens: 50 });
  assert.equal(n.status, 200);
  const s = await chatStream(gw, a.secret, { model: 'mock?no-id', messages: MESSAGES, max_tokens: 50 });
  assert.equal(s.status, 200);
  const st = await a.state();
  const keys = st.events.map((e) => e.provider_request_id).sort();
  assert.deepEqual(keys, ['hdr-123', n.headers.get('x-cairva-request-id'), s.headers.get('x-cairva-request-id')].sort());
  assert.deepEqual(st.alloc.used, { input_tokens: 30, output_tokens: 21 });
  assert.deepEqual(st.alloc.held, ZERO);
});

test('one provider id on three requests: the first booked, the others pending with their holds and conflicts', async () => {
  const a = await fresh();
  const id = `dup-${Date.now()}`;
  const first = await chat(gw, a.secret, { model: `mock?id=${id}&usage=10,7`, messages: MESSAGES, max_tokens: 50 });
  const second = await chatStream(gw, a.secret, {
    model: `mock?id=${id}&usage=11,8`, messages: MESSAGES, max_tokens: 50, stream_options: { include_usage: true },
  });
  const third = await chat(gw, a.secret, { model: `mock?id=${id}&usage=10,7`, messages: MESSAGES, max_tokens: 50 });
  assert.equal(first.status, 200);
  assert.equal(second.status, 200);
  assert.equal(third.status, 200);
  const st = await a.state();
  assert.equal(st.requests.length, 3);
  assert.deepEqual(st.requests.map((q) => q.state).sort(), ['booked', 'usage_pending', 'usage_pending']);
  assert.equal(st.events.length, 1);
  assert.deepEqual(st.alloc.used, { input_tokens: 10, output_tokens: 7 });
  const pending = st.requests.filter((q) => q.state === 'usage_pending');
  assert.deepEqual(st.alloc.held, {
    input_tokens: pending.reduce((n, q) => n + q.hold.input_tokens, 0),
    output_tokens: pending.reduce((n, q) => n + q.hold.output_tokens, 0),
  });
  assert.equal(st.conflicts.length, 2, 'each reuse by another request is a conflict');
  assert.ok(st.conflicts.every((c) => c.provider_request_id === id));
});

test('slow drip (7-byte pieces): the stream arrives whole and its usage is booked once', async () => {
  const a = await fresh();
  const r = await chatStream(gw, a.secret, {
    model: 'mock?split=7&chunk-delay-ms=1&usage=10,7', messages: MESSAGES, max_tokens: 50, stream_options: { include_usage: true },
  });
  assert.equal(r.status, 200);
  assert.ok(r.complete);
  assert.equal(r.events.at(-1), '[DONE]');
  const usage = JSON.parse(r.events.at(-2));
  assert.equal(usage.usage_source, 'provider');
  assert.equal(usage.usage.prompt_tokens, 10);
  assertTotals(await a.state(), { state: 'booked', used: { input_tokens: 10, output_tokens: 7 }, held: ZERO, events: 1 });
});

// 401, 403 and 429 are about the supplier's account: tests/e2e/upstream.test.mjs.
for (const status of [500, 502, 503]) {
  test(`provider ${status}: passed on as is, hold released, nothing booked, rpm still counted`, async () => {
    const a = await fresh();
    const r = await chat(gw, a.secret, { model: `mock?status=${status}`, messages: MESSAGES, max_tokens: 50 });
    assert.equal(r.status, status);
    assert.equal(r.body.error.code, `mock_${status}`);
    const st = await a.state();
    assertTotals(st, { state: 'failed', used: ZERO, held: ZERO, events: 0 });
    assert.equal(st.alloc.current.requests_last_minute, 1);
  });
}

test('after every provider fault the audit of the live store is clean', () => {
  assertAuditClean();
});

// --- (b) the store's disk fills up mid-run ---

// Needs root (mount -t tmpfs): the test machine and CI run the suite as root.
test('disk full: 503 store_unavailable, nothing forwarded without a durable start, recovers by itself', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cairva-full-'));
  // Room for the database and the operation log's first segment, whose space (~5 MiB) is
  // reserved when it is created; the filler then takes the rest.
  execSync(`mount -t tmpfs -o size=16M tmpfs ${dir}`);
  const fill = join(dir, 'filler');
  const m = await startMock();
  let g;
  try {
    g = await startGateway(m, { store: `sqlite://${join(dir, 'cairva.db')}` });
    const a = await createAgreement(g);
    const ask = () => chat(g, a.secret, { model: 'mock', messages: MESSAGES, max_tokens: 5 });
    assert.equal((await ask()).status, 200);
    // Fill the disk: dd stops at ENOSPC.
    try { execSync(`dd if=/dev/zero of=${fill} bs=4096 2>/dev/null`); } catch { /* ENOSPC ends dd */ }
    const before = (await mockStats(m)).requests;
    let ok = 0;
    let refused = 0;
    // The log's segment has its space, but the tables' WAL has room for a few more
    // commits at most: the applier fails within a bounded number of requests, and
    // admissions are refused from then on. Settlements still land in the log's reserve.
    for (let i = 0; i < 400 && refused < 5; i++) {
      const r = await ask();
      if (r.status === 200) ok++;
      else {
        assert.equal(r.status, 503, r.text);
        assert.equal(r.body.error.code, 'store_unavailable');
        refused++;
      }
    }
    assert.ok(refused >= 5, `the gateway failed closed (ok=${ok} refused=${refused})`);
    const forwarded = (await mockStats(m)).requests - before;
    assert.ok(forwarded <= ok, `forwarded ${forwarded} but only ${ok} had a durable start`);
    console.log(`disk full: ${ok} admitted before the disk ran out, ${refused} refused with 503, ${forwarded} forwarded`);
    unlinkSync(fill);
    const t0 = Date.now();
    const back = await eventually(async () => (await ask()).status === 200, 200, 50);
    assert.ok(back, 'recovered by itself once the disk had room');
    console.log(`disk full: recovered ${Date.now() - t0} ms after the filler was removed`);
    await g.stop();
    const r = audit(g.store);
    assert.equal(r.code, 0, r.out);
  } finally {
    await g?.stop();
    m.child.kill();
    if (existsSync(fill)) unlinkSync(fill);
    try { execSync(`umount ${dir}`); } catch { /* busy: leave it */ }
    rmSync(dir, { recursive: true, force: true });
  }
});

// --- (c) client abuse, with the p99 of legitimate traffic during each attack ---

async function legitimateTraffic(secret, durationMs, workers = 4) {
  const times = [];
  const statuses = {};
  const end = Date.now() + durationMs;
  await Promise.all(Array.from({ length: workers }, async () => {
    while (Date.now() < end) {
      const t = performance.now();
      const r = await chat(gw, secret, { model: 'mock', messages: MESSAGES, max_tokens: 5 });
      times.push(performance.now() - t);
      statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    }
  }));
  times.sort((x, y) => x - y);
  const p = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))].toFixed(1);
  return { n: times.length, p50: p(0.5), p99: p(0.99), statuses };
}

function report(name, t) {
  console.log(`abuse ${name}: legitimate n=${t.n} p50=${t.p50} ms p99=${t.p99} ms statuses=${JSON.stringify(t.statuses)}`);
}

let legit;
test('baseline: legitimate traffic alone', async () => {
  // Its bursts run back to back for as fast as the machine goes: no rate limit may refuse them.
  legit = await fresh({ requests_per_minute: 100_000_000, max_concurrency: 100_000 });
  const t = await legitimateTraffic(legit.secret, 2000);
  report('none (baseline)', t);
  assert.deepEqual(Object.keys(t.statuses), ['200']);
});

test('slow headers: 408 and closed, legitimate traffic served meanwhile', async () => {
  const slow = Array.from({ length: 50 }, () => rawHttp(gw.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n', { timeoutMs: 15000 }));
  const t = await legitimateTraffic(legit.secret, 2000);
  report('slow headers x50', t);
  for (const s of await Promise.all(slow)) assert.match(s, /^HTTP\/1\.1 408/);
  assert.deepEqual(Object.keys(t.statuses), ['200']);
});

test('oversized headers 431, oversized bodies 413, conflicting framing 400, under legitimate load', async () => {
  const attack = (async () => {
    const out = { h: [], b: [], c: [] };
    for (let i = 0; i < 20; i++) {
      out.h.push(await rawHttp(gw.port, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(40000)}\r\n\r\n`));
      out.b.push(await rawHttp(gw.port,
        `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${legit.secret}\r\nContent-Length: ${17 << 20}\r\n\r\n`));
      out.c.push(await rawHttp(gw.port,
        'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'));
    }
    return out;
  })();
  const t = await legitimateTraffic(legit.secret, 2000);
  report('431/413/400 x20 each', t);
  const out = await attack;
  for (const h of out.h) assert.match(h, /^HTTP\/1\.1 431/);
  for (const b of out.b) assert.match(b, /^HTTP\/1\.1 413/);
  for (const c of out.c) assert.match(c, /^HTTP\/1\.1 400/);
  assert.deepEqual(Object.keys(t.statuses), ['200']);
});

test('pipelined requests: answered in order, under legitimate load', async () => {
  const one = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n';
  const attack = Promise.all(Array.from({ length: 50 }, () =>
    rawHttp(gw.port, one.repeat(20) + 'GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')));
  const t = await legitimateTraffic(legit.secret, 2000);
  report('pipelined 50x21', t);
  for (const out of await attack) {
    const statuses = [...out.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]);
    assert.deepEqual(statuses, [...Array(20).fill('200'), '404']);
  }
});

const IDLE = Number(process.env.CAIRVA_E2E_IDLE_CONNECTIONS ?? 3000);
test(`${IDLE} idle connections: legitimate traffic still served`, async () => {
  const sockets = [];
  for (let i = 0; i < IDLE; i++) {
    sockets.push(await new Promise((res) => {
      const s = net.connect(gw.port, '127.0.0.1', () => res(s));
      s.on('error', () => res(s));
    }));
  }
  try {
    const t = await legitimateTraffic(legit.secret, 2000);
    report(`idle connections x${IDLE}`, t);
    assert.deepEqual(Object.keys(t.statuses), ['200']);
  } finally {
    for (const s of sockets) s.destroy();
  }
  assertAuditClean();
});
