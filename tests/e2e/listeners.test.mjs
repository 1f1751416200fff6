// Both listeners against abuse of HTTP itself (issue 25, items 6-9): request framing
// (Transfer-Encoding), connection floods, the memory of bodies in flight, and refusals
// that must reach a client still sending its body (lingering close, Expect: 100-continue).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import OpenAI from 'openai';
import {
  startMock, startGateway, createAgreement, chat, mockStats, eventually, ADMIN_TOKEN,
} from './harness.mjs';

const msg = [{ role: 'user', content: 'x' }];
// Bounds a wait on the gateway only so that a failing run ends: no outcome depends on it.
const FAIL_AFTER_MS = 20000;

let mock, gw, alloc;
before(async () => {
  mock = await startMock();
  gw = await startGateway(mock, { serverToml: 'first_byte_timeout_s = 1\nbody_bytes_in_flight_max = 33554432' });
  alloc = await createAgreement(gw);
});
after(async () => {
  await gw?.stop();
  mock?.child.kill();
  gw?.cleanup();
});

function connect(port, localAddress) {
  return new Promise((res, rej) => {
    const s = net.connect({ port, host: '127.0.0.1', localAddress }, () => res(s));
    s.once('error', rej);
  });
}

// Collects what `sock` receives until `done(text)` holds or the peer closes; `closed`
// tells which. Rejects only when neither happens within FAIL_AFTER_MS.
function receive(sock, done = () => false) {
  return new Promise((res, rej) => {
    let text = '';
    const timer = setTimeout(() => rej(new Error(`no answer; got ${JSON.stringify(text.slice(0, 200))}`)), FAIL_AFTER_MS);
    const finish = (closed) => { clearTimeout(timer); res({ text, closed }); };
    sock.on('data', (d) => { text += d; if (done(text)) finish(false); });
    sock.on('close', () => finish(true));
    sock.on('error', () => {});
  });
}

// Sends `payload` on a fresh connection and reads until the gateway closes it.
async function exchange(port, payload) {
  const s = await connect(port);
  const answer = receive(s);
  s.write(payload);
  const r = await answer;
  s.destroy();
  return r;
}

const statuses = (text) => [...text.matchAll(/HTTP\/1\.[01] (\d{3})/g)].map((m) => m[1]);

function chatRequest(secret, body, extra = '') {
  return `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${secret}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;
}

const TE_VARIANTS = ['gzip', 'identity', 'xchunked', 'chunked, gzip', 'gzip, chunked', 'chunked\r\nTransfer-Encoding: gzip',
  'gzip\r\nTransfer-Encoding: chunked'];

test('public: a Transfer-Encoding other than chunked alone is 400 and closes; the body never runs as a request', async () => {
  const a = await createAgreement(gw);
  const smuggled = chatRequest(a.secret, JSON.stringify({ model: 'mock', messages: msg }));
  const forwardedBefore = (await mockStats(mock)).requests;
  for (const te of TE_VARIANTS) {
    for (const hidden of [smuggled, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n']) {
      const r = await exchange(gw.port, `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.secret}\r\n` +
        `Transfer-Encoding: ${te}\r\n\r\n${hidden}`);
      assert.ok(r.closed, `${te}: closed`);
      assert.deepEqual(statuses(r.text), ['400'], `${te}: one answer, 400: ${r.text.slice(0, 120)}`);
      assert.match(r.text, /"code":"invalid_request"/);
    }
  }
  assert.equal((await mockStats(mock)).requests, forwardedBefore, 'nothing reached the provider');
  const s = await gw.admin('GET', `/admin/v1/allocations/${a.allocation.id}`);
  assert.equal(s.body.current.requests_last_minute, 0, 'nothing was admitted');
  assert.equal(s.body.current.in_flight, 0);
});

test('admin: a Transfer-Encoding other than chunked alone is 400 and closes; the body never runs as a request', async () => {
  const hidden = `GET /admin/v1/allocations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN_TOKEN}\r\n\r\n`;
  for (const te of TE_VARIANTS) {
    const r = await exchange(gw.adminPort, `POST /admin/v1/agreements HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN_TOKEN}\r\n` +
      `Content-Type: application/json\r\nTransfer-Encoding: ${te}\r\n\r\n${hidden}`);
    assert.ok(r.closed, `${te}: closed`);
    assert.deepEqual(statuses(r.text), ['400'], `${te}: one answer, 400: ${r.text.slice(0, 120)}`);
  }
  // A chunked body still works.
  const ok = await exchange(gw.adminPort, `GET /admin/v1/allocations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN_TOKEN}\r\n` +
    'Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n');
  assert.deepEqual(statuses(ok.text), ['200']);
});

test('a connection that sends nothing is closed after first_byte_timeout_s, on both listeners', async () => {
  for (const port of [gw.port, gw.adminPort]) {
    const s = await connect(port);
    const r = await receive(s);
    assert.ok(r.closed, 'closed by the gateway');
    assert.equal(r.text, '', 'without an answer');
  }
});

test('the official client with a wrong key and a 4 MiB body gets AuthenticationError (401)', async () => {
  const client = new OpenAI({ apiKey: 'cv_wrong' + 'x'.repeat(40), baseURL: gw.url + '/v1', maxRetries: 0 });
  for (let i = 0; i < 3; i++) {
    await assert.rejects(
      client.chat.completions.create({ model: 'mock', messages: [{ role: 'user', content: 'x'.repeat(4 << 20) }] }),
      (e) => e instanceof OpenAI.AuthenticationError && e.status === 401,
    );
  }
});

test('the official client with a 20 MiB body gets 413, not a connection error', async () => {
  const client = new OpenAI({ apiKey: alloc.secret, baseURL: gw.url + '/v1', maxRetries: 0 });
  await assert.rejects(
    client.chat.completions.create({ model: 'mock', messages: [{ role: 'user', content: 'x'.repeat(20 << 20) }] }),
    (e) => e instanceof OpenAI.APIError && e.status === 413 && !(e instanceof OpenAI.APIConnectionError),
  );
  // And 404 / 405 with a body the client sends before reading: answered too.
  for (const [path, method, status] of [['/v1/nope', 'POST', 404], ['/healthz', 'PUT', 405]]) {
    const res = await fetch(gw.url + path, { method, body: 'x'.repeat(4 << 20) });
    assert.equal(res.status, status);
  }
});

test('the admin listener answers an oversized body with 413, not a connection error', async () => {
  const res = await fetch(gw.adminUrl + '/admin/v1/agreements', {
    method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body: 'x'.repeat(8 << 20),
  });
  assert.equal(res.status, 413);
});

test('Expect: 100-continue gets 100 Continue then the answer; a refusal comes at once without 100', async () => {
  const body = JSON.stringify({ model: 'mock', messages: msg });
  const head = (secret) => `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${secret}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`;
  // As curl: the header, then the body only after 100 Continue.
  const s = await connect(gw.port);
  const first = receive(s, (t) => t.includes('\r\n\r\n'));
  s.write(head(alloc.secret));
  const cont = await first;
  assert.match(cont.text, /^HTTP\/1\.1 100 Continue\r\n\r\n/);
  s.removeAllListeners('data');
  const rest = receive(s, (t) => /\r\n\r\n[\s\S]*"usage_source"/.test(t));
  s.write(body);
  const answer = await rest;
  assert.match(answer.text, /^HTTP\/1\.1 200/);
  s.destroy();
  // A wrong key: 401 at once, and no 100 before it.
  const refused = await exchange(gw.port, head('cv_wrong'));
  assert.match(refused.text, /^HTTP\/1\.1 401/);
  assert.deepEqual(statuses(refused.text), ['401']);
  // An announced body over 16 MiB: 413 at once.
  const big = await exchange(gw.port, `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alloc.secret}\r\n` +
    `Content-Length: ${17 << 20}\r\nExpect: 100-continue\r\n\r\n`);
  assert.deepEqual(statuses(big.text), ['413']);
  // The admin listener too.
  const a = await connect(gw.adminPort);
  const adminFirst = receive(a, (t) => t.includes('\r\n\r\n'));
  const agreement = JSON.stringify({ supplier: 's', buyer: 'b', provider: 'mock', input_tokens: 1, output_tokens: 1,
    ends_at: new Date(Date.now() + 3600_000).toISOString(), requests_per_minute: 1, tokens_per_minute: 1, max_concurrency: 1 });
  a.write(`POST /admin/v1/agreements HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN_TOKEN}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${agreement.length}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`);
  assert.match((await adminFirst).text, /^HTTP\/1\.1 100 Continue\r\n\r\n/);
  a.removeAllListeners('data');
  const adminRest = receive(a);
  a.write(agreement);
  assert.deepEqual(statuses((await adminRest).text), ['201']);
});

test('bodies in flight past body_bytes_in_flight_max get 503 with Retry-After, then are taken again', async () => {
  // 16 MiB announced: the gateway takes the body's room before it says 100 Continue.
  const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alloc.secret}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${16 << 20}\r\nExpect: 100-continue\r\n\r\n`;
  const holder = await connect(gw.port);
  const held = receive(holder, (t) => t.includes('\r\n\r\n'));
  holder.write(head);
  assert.match((await held).text, /^HTTP\/1\.1 100 Continue/);
  // A second one does not fit in 32 MiB with the first.
  const refused = await exchange(gw.port, head);
  assert.deepEqual(statuses(refused.text), ['503']);
  assert.match(refused.text, /\r\nRetry-After: \d+\r\n/i);
  assert.match(refused.text, /"limit":"body_bytes_in_flight"/);
  // The first client goes away: its room comes back.
  holder.destroy();
  const again = await eventually(async () => {
    const s = await connect(gw.port);
    const r = receive(s, (t) => t.includes('\r\n\r\n'));
    s.write(head);
    const got = await r;
    s.destroy();
    return /^HTTP\/1\.1 100 Continue/.test(got.text) ? got : undefined;
  });
  assert.ok(again, 'a 16 MiB body is taken again once the first is gone');
  assert.equal((await chat(gw, alloc.secret, { model: 'mock', messages: msg })).status, 200);
});

// Opens `n` connections that send nothing; resolves once all are connected (refused ones
// count: the point is the attempt).
async function flood(port, n, localAddress) {
  const sockets = [];
  for (let i = 0; i < n; i++) {
    sockets.push(await new Promise((res) => {
      const s = net.connect({ port, host: '127.0.0.1', localAddress }, () => res(s));
      s.on('error', () => res(s));
    }));
  }
  return sockets;
}

test('a flood of idle connections past connections_max: /healthz and the admin API still answer', async () => {
  const m = await startMock();
  const g = await startGateway(m, { serverToml: 'connections_max = 200\nconnections_per_client_max = 0' });
  const sockets = await flood(g.port, 400);
  try {
    const h = await fetch(g.url + '/healthz', { signal: AbortSignal.timeout(FAIL_AFTER_MS) });
    assert.equal(h.status, 200);
    const a = await g.admin('GET', '/admin/v1/allocations');
    assert.equal(a.status, 200);
    const c = await createAgreement(g);
    assert.equal((await chat(g, c.secret, { model: 'mock', messages: msg })).status, 200);
  } finally {
    for (const s of sockets) s.destroy();
    await g.stop();
    m.child.kill();
    g.cleanup();
  }
});

test('descriptors running short (RLIMIT_NOFILE 1024) under 1100 idle connections: both listeners still answer', async () => {
  const m = await startMock();
  const g = await startGateway(m, { launcher: ['prlimit', '--nofile=1024:1024', '--'] });
  const sockets = await flood(g.port, 1100);
  try {
    const h = await fetch(g.url + '/healthz', { signal: AbortSignal.timeout(FAIL_AFTER_MS) });
    assert.equal(h.status, 200);
    const a = await fetch(g.adminUrl + '/admin/v1/allocations', {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, signal: AbortSignal.timeout(FAIL_AFTER_MS),
    });
    assert.equal(a.status, 200);
  } finally {
    for (const s of sockets) s.destroy();
    await g.stop();
    m.child.kill();
    g.cleanup();
  }
});

test('connections_per_client_max: one address past its cap is closed at once; others are served', async () => {
  const m = await startMock();
  const g = await startGateway(m, { serverToml: 'connections_per_client_max = 20' });
  const sockets = await flood(g.port, 20, '127.0.0.2');
  try {
    const over = await connect(g.port, '127.0.0.2');
    const r = await receive(over);
    assert.ok(r.closed, 'the 21st connection from 127.0.0.2 is closed');
    assert.equal(r.text, '');
    assert.equal((await fetch(g.url + '/healthz')).status, 200, '127.0.0.1 is served');
    sockets.pop().destroy();
    // One of its connections gone, the address gets one again.
    const ok = await eventually(async () => {
      const s = await connect(g.port, '127.0.0.2');
      const got = receive(s, (t) => t.includes('\r\n\r\n'));
      s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      const res = await got;
      s.destroy();
      return /^HTTP\/1\.1 200/.test(res.text);
    });
    assert.ok(ok);
  } finally {
    for (const s of sockets) s.destroy();
    await g.stop();
    m.child.kill();
    g.cleanup();
  }
});
