// Bad input of every kind gets a clear error, changes nothing, never crashes: SPEC §3, §6.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { gatewayForFile, startGateway, createAgreement, chat, rawHttp } from './harness.mjs';

let mock, gw, alloc;
gatewayForFile({}, async (m, g) => {
  mock = m;
  gw = g;
  alloc = await createAgreement(g, { requests_per_minute: 1000 });
});

const msg = [{ role: 'user', content: 'x' }];

test('unknown path 404, wrong method 405, missing or unknown key 401 — in that order', async () => {
  assert.equal((await fetch(gw.url + '/v1/unknown', { method: 'POST' })).status, 404);
  const m = await fetch(gw.url + '/v1/chat/completions', { method: 'GET' });
  assert.equal(m.status, 405);
  assert.equal((await m.json()).error.code, 'method_not_allowed');
  const noKey = await chat(gw, '', { model: 'm', messages: msg });
  assert.equal(noKey.status, 401);
  assert.equal(noKey.body.error.code, 'invalid_api_key');
  const badKey = await chat(gw, 'cv_notarealkey', { model: 'm', messages: msg });
  assert.equal(badKey.status, 401);
  const bigBodyNoKey = await rawHttp(gw.port,
    `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer cv_nope\r\nContent-Length: ${17 << 20}\r\n\r\n`);
  assert.match(bigBodyNoKey, /^HTTP\/1\.1 401/, '401 comes before 413');
});

test('malformed and ill-typed bodies are 400 invalid_request naming the problem', async () => {
  const cases = [
    ['not json', /JSON/i],
    ['[]', /object/i],
    [JSON.stringify({ messages: msg }), /model/],
    [JSON.stringify({ model: 'm' }), /messages/],
    [JSON.stringify({ model: 'm', messages: msg, max_tokens: 0 }), /max_tokens/],
    [JSON.stringify({ model: 'm', messages: msg, max_tokens: 1.5 }), /max_tokens/],
    [JSON.stringify({ model: 'm', messages: msg, max_completion_tokens: '5' }), /max_completion_tokens/],
    [JSON.stringify({ model: 'm', messages: msg, n: 0 }), /\bn\b/],
    [JSON.stringify({ model: 5, messages: msg }), /model/],
  ];
  for (const [body, pattern] of cases) {
    const r = await chat(gw, alloc.secret, body);
    assert.equal(r.status, 400, body);
    assert.equal(r.body.error.code, 'invalid_request');
    assert.match(r.body.error.message, pattern, body);
  }
  const s = await gw.admin('GET', `/admin/v1/allocations/${alloc.allocation.id}`);
  assert.equal(s.body.current.requests_last_minute, 0, 'bad input counts toward no limit');
});

test('a body over 16 MiB is 413 request_too_large', async () => {
  const announced = await rawHttp(gw.port,
    `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alloc.secret}\r\nContent-Length: ${(16 << 20) + 1}\r\n\r\n`);
  assert.match(announced, /^HTTP\/1\.1 413/);
  assert.match(announced, /"code":"request_too_large"/);
  const chunk = 'a'.repeat(1 << 20);
  let chunked = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alloc.secret}\r\nTransfer-Encoding: chunked\r\n\r\n`;
  for (let i = 0; i < 17; i++) chunked += `${chunk.length.toString(16)}\r\n${chunk}\r\n`;
  const streamed = await rawHttp(gw.port, chunked + '0\r\n\r\n');
  assert.match(streamed, /^HTTP\/1\.1 413/);
});

test('headers over the limit are 431; conflicting Content-Length and Transfer-Encoding are 400', async () => {
  const big = await rawHttp(gw.port, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(40000)}\r\n\r\n`);
  assert.match(big, /^HTTP\/1\.1 431/);
  const conflict = await rawHttp(gw.port,
    'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n');
  assert.match(conflict, /^HTTP\/1\.1 400/);
});

test('a client too slow to send its headers gets 408 and is closed; others are served meanwhile', async () => {
  // The slow client's partial headers are on the wire (the write's callback) before the
  // other request starts; its answer is awaited as an event, the socket's close.
  const sock = net.connect(gw.port, '127.0.0.1');
  let answer = '';
  sock.on('data', (d) => { answer += d; });
  const closed = new Promise((res) => sock.on('close', res));
  await new Promise((res, rej) => { sock.once('error', rej); sock.once('connect', res); });
  await new Promise((res) => sock.write('GET /healthz HTTP/1.1\r\nHost: x\r\n', res));
  const h = await fetch(gw.url + '/healthz');
  assert.equal(h.status, 200);
  assert.equal(answer, '', 'the slow client was answered before its header timeout');
  await closed;
  assert.match(answer, /^HTTP\/1\.1 408/);
});

test('pipelined requests on one connection are answered in order', async () => {
  const one = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n';
  const out = await rawHttp(gw.port, one + one + 'GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  const statuses = [...out.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]);
  assert.deepEqual(statuses, ['200', '200', '404']);
});

test('HTTP/1.0 is answered in 1.0; other versions are 400, and the gateway stays up', async () => {
  const ten = await rawHttp(gw.port, 'GET /healthz HTTP/1.0\r\nHost: x\r\n\r\n');
  assert.match(ten, /^HTTP\/1\.0 200/);
  for (const v of ['1.2', '2.0', '0.9']) {
    const out = await rawHttp(gw.port, `GET /healthz HTTP/${v}\r\nHost: x\r\nConnection: close\r\n\r\n`);
    assert.match(out, /^HTTP\/1\.1 400/, `HTTP/${v}: ${out.slice(0, 40)}`);
  }
  assert.equal((await fetch(gw.url + '/healthz')).status, 200);
});

test('HEAD is answered without a body; pipelined bodies are read from the buffer in order', async () => {
  const head = await rawHttp(gw.port,
    'HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  assert.deepEqual([...head.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]), ['200', '200']);
  assert.equal(head.split('{"status":"ok"}').length - 1, 1, 'only the GET carries the body');
  // Two completions in one write: the second request's header and body are already
  // buffered when the first is answered.
  const post = (content, close) => {
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content }] });
    return `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alloc.secret}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${close ? 'Connection: close\r\n' : ''}\r\n${body}`;
  };
  const two = await rawHttp(gw.port, post('first', false) + post('second', true));
  assert.deepEqual([...two.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]), ['200', '200']);
  assert.equal(two.split('"usage_source":"provider"').length - 1, 2, 'both booked from the provider\'s usage');
});

test('provider unreachable: 502 provider_unavailable, hold released', async () => {
  const down = await startGateway({ url: 'http://127.0.0.1:1' });
  try {
    const a = await createAgreement(down);
    const r = await chat(down, a.secret, { model: 'm', messages: msg });
    assert.equal(r.status, 502);
    assert.equal(r.body.error.code, 'provider_unavailable');
    const s = await down.admin('GET', `/admin/v1/allocations/${a.allocation.id}`);
    assert.deepEqual(s.body.held, { input_tokens: 0, output_tokens: 0 });
  } finally {
    await down.stop();
    down.cleanup();
  }
});

test('provider too slow to answer: 504 provider_timeout', async () => {
  const slow = await startGateway(mock, { providerTimeout: 1 });
  try {
    const a = await createAgreement(slow);
    const r = await chat(slow, a.secret, { model: 'mock?delay-ms=2500', messages: msg });
    assert.equal(r.status, 504);
    assert.equal(r.body.error.code, 'provider_timeout');
  } finally {
    await slow.stop();
    slow.cleanup();
  }
});
