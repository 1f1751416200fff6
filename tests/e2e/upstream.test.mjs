// The provider side of the gateway (SPEC §5, issue 25 items 10, 11, 14): idle pooled
// connections a provider closed, streams the gateway cuts, and errors about the supplier's
// own account, through real processes.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import OpenAI from 'openai';
import { startMock, startGateway, createAgreement, chat, PROVIDER_KEY } from './harness.mjs';

const MESSAGES = [{ role: 'user', content: 'hi' }];
const cleanup = [];
after(async () => {
  for (const f of cleanup.reverse()) await f();
});

// A minimal OpenAI-compatible provider on Node's HTTP server, which closes connections
// idle for `keepAliveTimeoutMs` (Node's default is 5 s) and reports its open sockets.
async function nodeProvider(keepAliveTimeoutMs) {
  const open = new Set();
  let requests = 0;
  let waiters = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      requests += 1;
      const model = JSON.parse(body).model;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({
        id: `chatcmpl-node-${requests}`, object: 'chat.completion', created: 1, model,
        choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
      }));
    });
  });
  server.keepAliveTimeout = keepAliveTimeoutMs;
  server.on('connection', (s) => {
    open.add(s);
    s.on('close', () => {
      open.delete(s);
      if (open.size === 0) { waiters.forEach((w) => w()); waiters = []; }
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    openSockets: () => open.size,
    requests: () => requests,
    // Resolves once the provider has closed every connection (none open).
    allClosed: () => new Promise((r) => { if (open.size === 0) r(); else waiters.push(r); }),
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }),
  };
}

test('idle connections the provider closed cost no 502: 8 parallel requests, all sockets closed, then 8 more all succeed', async () => {
  // Shorter than the gateway's own idle bound, so the pool still holds the closed ones.
  const provider = await nodeProvider(200);
  cleanup.push(provider.close);
  const gw = await startGateway(provider, { threads: 2 });
  cleanup.push(async () => { await gw.stop(); gw.cleanup(); });
  const a = await createAgreement(gw, { requests_per_minute: 100 });
  const batch = () => Promise.all(Array.from({ length: 8 }, () => chat(gw, a.secret, { model: 'm', messages: MESSAGES })));

  const first = await batch();
  assert.deepEqual(first.map((r) => r.status), Array(8).fill(200));
  assert.ok(provider.openSockets() > 1, 'the gateway kept several connections open');
  await provider.allClosed();  // the provider closed every idle connection

  const second = await batch();
  assert.deepEqual(second.map((r) => `${r.status} ${r.body?.error?.code ?? ''}`), Array(8).fill('200 '));
  assert.equal(provider.requests(), 16, 'each request reached the provider once');
  const s = await gw.admin('GET', `/admin/v1/allocations/${a.allocation.id}`);
  assert.equal(s.body.current.requests_last_minute, 16, 'rpm counts only the real requests');
  assert.deepEqual(s.body.used, { input_tokens: 48, output_tokens: 32 });
});

// --- errors about the supplier's account (item 14) ---

let mock;
let gw;
async function mockGateway() {
  if (gw) return;
  mock = await startMock();
  gw = await startGateway(mock);
  cleanup.push(async () => { await gw.stop(); mock.child.kill(); gw.cleanup(); });
}

const SUPPLIER_TRACES = [/org-MockSupplier/, /sk-proj/, /k3Yz/, /proj_MockSupplier/, /Incorrect API key/, /Rate limit reached/];

for (const status of [401, 403]) {
  test(`provider ${status} (the supplier's credentials): 502 provider_unavailable, nothing of the supplier's account reaches the buyer`, async () => {
    await mockGateway();
    const a = await createAgreement(gw);
    const r = await chat(gw, a.secret, { model: `mock?status=${status}`, messages: MESSAGES });
    assert.equal(r.status, 502);
    assert.equal(r.body.error.code, 'provider_unavailable');
    for (const trace of SUPPLIER_TRACES) assert.doesNotMatch(r.text, trace);
    const s = await gw.admin('GET', `/admin/v1/allocations/${a.allocation.id}`);
    assert.deepEqual(s.body.held, { input_tokens: 0, output_tokens: 0 }, 'hold released');
    assert.deepEqual(s.body.used, { input_tokens: 0, output_tokens: 0 });
    // The operators see the provider's words in the log.
    assert.match(gw.child.output(), new RegExp(`provider mock answered ${status}: .*org-MockSupplier7Q2`));
  });
}

test("provider 429: the status and Retry-After are kept, the body is the gateway's own", async () => {
  await mockGateway();
  const a = await createAgreement(gw);
  const r = await chat(gw, a.secret, { model: 'mock?status=429&retry-after=7', messages: MESSAGES });
  assert.equal(r.status, 429);
  assert.equal(r.headers.get('retry-after'), '7');
  assert.equal(r.body.error.code, 'rate_limited');
  for (const trace of SUPPLIER_TRACES) assert.doesNotMatch(r.text, trace);
  // The official client raises its RateLimitError, with the gateway's message.
  const client = new OpenAI({ apiKey: a.secret, baseURL: gw.url + '/v1', maxRetries: 0 });
  await assert.rejects(client.chat.completions.create({ model: 'mock?status=429', messages: MESSAGES }),
    (e) => e instanceof OpenAI.RateLimitError && !/org-MockSupplier/.test(e.message));
  assert.ok(!gw.child.output().includes(PROVIDER_KEY), 'the supplier key is never logged');
});

// --- streams the gateway cuts (item 11) ---

test('a stream cut by the provider after its 2xx ends with an error event and no [DONE]; the openai client raises', async () => {
  await mockGateway();
  const a = await createAgreement(gw);
  const raw = await fetch(gw.url + '/v1/chat/completions', {
    method: 'POST',
    headers: { authorization: `Bearer ${a.secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'mock?reset-after=2', messages: MESSAGES, stream: true }),
  });
  assert.equal(raw.status, 200);
  const text = await raw.text();
  const events = text.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));
  assert.ok(!events.includes('[DONE]'), text);
  assert.equal(JSON.parse(events.at(-1)).error.code, 'provider_unavailable');

  const client = new OpenAI({ apiKey: a.secret, baseURL: gw.url + '/v1', maxRetries: 0 });
  const stream = await client.chat.completions.create({ model: 'mock?reset-after=2', messages: MESSAGES, stream: true });
  await assert.rejects(async () => { for await (const chunk of stream) void chunk; }, /cut off/);
});

test('a stream past the in-flight timeout ends with a provider_timeout event and no [DONE]', async () => {
  const m = await startMock();
  const g = await startGateway(m, { inFlightTimeout: 1 });
  cleanup.push(async () => { await g.stop(); m.child.kill(); g.cleanup(); });
  const a = await createAgreement(g);
  // Ten chunks a second apart: the in-flight bound (1 s) ends it after the first.
  const raw = await fetch(g.url + '/v1/chat/completions', {
    method: 'POST',
    headers: { authorization: `Bearer ${a.secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'mock?chunks=10&chunk-delay-ms=1000', messages: MESSAGES, stream: true }),
  });
  const text = await raw.text();
  const events = text.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));
  assert.ok(!events.includes('[DONE]'), text);
  assert.equal(JSON.parse(events.at(-1)).error.code, 'provider_timeout');
});
