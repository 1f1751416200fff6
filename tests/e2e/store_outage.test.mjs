// A store outage is not a revoked key, and its text stays internal (SPEC §6, issue 25
// items 12 and 13). The gateway reaches PostgreSQL through a TCP relay in this test; the
// outage is the relay closing every connection and refusing new ones, so libpq fails as
// it does when the server is down ("connection to server at "127.0.0.1", port … failed").
// Needs CAIRVA_TEST_PG_URL (exported by scripts/test.sh), like multi_gateway.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { execFileSync } from 'node:child_process';
import { startMock, startGateway, createAgreement, chat } from './harness.mjs';

const PG_URL = process.env.CAIRVA_TEST_PG_URL;
const dbName = `cairva_outage_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
const MESSAGES = [{ role: 'user', content: 'hi' }];

// A TCP relay to PostgreSQL that can be cut: stop() closes every relayed connection and
// the listener, and resolves once all are closed.
async function relay(target) {
  const sockets = new Set();
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {});
    }
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: server.address().port,
    stop: () => new Promise((r) => {
      server.close(() => r());
      for (const s of sockets) s.destroy();
    }),
  };
}

let mock, gw, pg, cachedKey, freshKey, alloc;
before(async () => {
  assert.ok(PG_URL, 'CAIRVA_TEST_PG_URL is not set: this suite needs a PostgreSQL server');
  execFileSync('psql', [PG_URL, '-qAt', '-v', 'ON_ERROR_STOP=1', '-c', `CREATE DATABASE ${dbName}`]);
  const u = new URL(PG_URL);
  pg = await relay({ host: u.hostname, port: Number(u.port || 5432) });
  u.host = `127.0.0.1:${pg.port}`;
  u.pathname = '/' + dbName;
  mock = await startMock();
  gw = await startGateway(mock, { store: u.toString() });
  const a = await createAgreement(gw);
  alloc = a.allocation;
  cachedKey = a.secret;
  // A second key, never used before the outage: the gateway has not cached it.
  const k = await gw.admin('POST', `/admin/v1/allocations/${alloc.id}/keys`);
  assert.equal(k.status, 201, k.text);
  freshKey = k.body.secret ?? k.body.api_key?.secret;
  assert.equal((await chat(gw, cachedKey, { model: 'm', messages: MESSAGES })).status, 200);
  await pg.stop();  // PostgreSQL is now out of reach
});
after(async () => {
  await gw?.stop();
  mock?.child.kill();
  gw?.cleanup();
  if (PG_URL) execFileSync('psql', [PG_URL, '-qAt', '-c', `DROP DATABASE IF EXISTS ${dbName}`]);
});

function assertStoreUnavailable(r, what) {
  assert.equal(r.status, 503, `${what}: ${r.status} ${r.text}`);
  assert.equal(r.body.error.code, 'store_unavailable', what);
  assert.ok(Number(r.headers.get('retry-after')) > 0, `${what}: Retry-After`);
  assert.doesNotMatch(r.text, /127\.0\.0\.1|port|postgres|connection to server/i, `${what}: internal detail in ${r.text}`);
}

test('with PostgreSQL unreachable, a valid key not yet cached gets 503 store_unavailable, never 401', async () => {
  assertStoreUnavailable(await chat(gw, freshKey, { model: 'm', messages: MESSAGES }), 'chat, uncached key');
});

test('with PostgreSQL unreachable, a cached key gets 503 store_unavailable at admission', async () => {
  assertStoreUnavailable(await chat(gw, cachedKey, { model: 'm', messages: MESSAGES }), 'chat, cached key');
});

test('with PostgreSQL unreachable, a request refused before admission (bad body) is 503, not 401', async () => {
  assertStoreUnavailable(await chat(gw, cachedKey, '{"model":"m"}'), 'invalid body, cached key');
});

test('with PostgreSQL unreachable, GET /v1/allocations/current is 503 store_unavailable, never 401', async () => {
  for (const key of [freshKey, cachedKey]) {
    const res = await fetch(gw.url + '/v1/allocations/current', { headers: { authorization: `Bearer ${key}` } });
    const text = await res.text();
    assertStoreUnavailable({ status: res.status, text, body: JSON.parse(text), headers: res.headers }, 'allocations/current');
  }
});

test("the store's own words reach the operators' log, never the buyer", async () => {
  assert.match(gw.child.output(), /store unavailable: .+/);
});
