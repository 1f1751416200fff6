// Several gateways on one PostgreSQL database (issue #5, SPEC §9): three `cairva serve`
// processes share a fresh database and one mock provider; requests go round-robin across
// them, and together they must never exceed any limit or allowance.
// Needs CAIRVA_TEST_PG_URL (exported by scripts/test.sh); without it every test fails.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  BIN, startMock, startGateway, createAgreement, chat, mockStats, eventually, sleep, psql, databaseUrl,
} from './harness.mjs';

const GATEWAYS = 3;
// Small, so that the SIGKILL test sees the stale sweep within seconds.
const IN_FLIGHT_TIMEOUT_S = 3;
const msg = [{ role: 'user', content: 'x' }];

const PG_URL = process.env.CAIRVA_TEST_PG_URL;
const dbName = `cairva_multi_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
let dbUrl;
let mock;
const gws = [];

function audit(store) {
  try {
    return { code: 0, out: execFileSync(BIN, ['audit', '--store', store], { encoding: 'utf8', stdio: 'pipe' }) };
  } catch (e) {
    return { code: e.status, out: String(e.stdout) + String(e.stderr) };
  }
}

// Request i goes to gateway i mod 3.
const gwAt = (i) => gws[i % gws.length];

// chat() through one gateway; a failed connection names the gateway and shows its output
// (a crashed gateway otherwise surfaces only as "fetch failed").
async function chatVia(gw, secret, body) {
  try {
    return await chat(gw, secret, body);
  } catch (e) {
    const state = gw.child.exitCode ?? gw.child.signalCode ?? 'running';
    throw new Error(`${gw.url} (exit: ${state}): ${e.message}\n${gw.child.output().slice(-2000)}`);
  }
}

async function allEvents(gw, allocationId) {
  const events = [];
  let after = '';
  for (;;) {
    const page = await gw.admin('GET', `/admin/v1/events?allocation_id=${allocationId}${after ? `&after=${after}` : ''}`);
    assert.equal(page.status, 200, page.text);
    if (page.body.data.length === 0) return events;
    events.push(...page.body.data);
    after = page.body.data.at(-1).id;
  }
}

before(async () => {
  assert.ok(PG_URL, 'CAIRVA_TEST_PG_URL is not set: this suite needs a PostgreSQL server '
    + '(run it through scripts/test.sh, or export CAIRVA_TEST_PG_URL=postgresql://user@host:port/db)');
  psql(PG_URL, `CREATE DATABASE ${dbName}`);
  dbUrl = databaseUrl(PG_URL, dbName);
  mock = await startMock(['--threads', '2']);
  // All three at once on an empty database: the schema migrations must apply exactly once.
  gws.push(...await Promise.all(Array.from({ length: GATEWAYS }, () =>
    startGateway(mock, { store: dbUrl, inFlightTimeout: IN_FLIGHT_TIMEOUT_S }))));
});

after(async () => {
  for (const gw of gws) { await gw.stop(); gw.cleanup(); }
  mock?.child.kill();
  if (dbUrl) psql(PG_URL, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
});

test('three gateways started at once on an empty database migrate it once and all serve', async () => {
  const { allocation, secret } = await createAgreement(gws[0]);
  for (let i = 0; i < GATEWAYS; i++) {
    const r = await chatVia(gwAt(i), secret, { model: 'm', messages: msg });
    assert.equal(r.status, 200, `gateway ${i}: ${r.text}`);
  }
  // One row per migration, 1..latest, none missing: each applied exactly once.
  const [count, max] = psql(dbUrl, 'SELECT count(*), max(version) FROM schema_migrations').trim().split('|').map(Number);
  assert.ok(count >= 1, 'migrations were recorded');
  assert.equal(count, max, `schema_migrations has ${count} rows for versions up to ${max}`);
  const s = await gws[2].admin('GET', `/admin/v1/allocations/${allocation.id}`);
  assert.equal(s.status, 200, 'an agreement created through one gateway is visible through another');
  assert.equal(s.body.current.requests_last_minute, GATEWAYS);
});

test('max_concurrency 4 across three gateways: the provider never sees more than 4 at once', async () => {
  const LIMIT = 4;
  const { allocation, secret } = await createAgreement(gws[0], { max_concurrency: LIMIT });
  await fetch(mock.url + '/mock/reset', { method: 'POST' });
  const results = await Promise.all(Array.from({ length: 40 }, (_, i) =>
    chatVia(gwAt(i), secret, { model: 'mock?delay-ms=300', messages: msg })));
  const ok = results.filter((r) => r.status === 200).length;
  const limited = results.filter((r) => r.status === 429);
  assert.equal(ok + limited.length, 40, `only 200 or 429: ${results.map((r) => r.status)}`);
  assert.ok(ok >= LIMIT, `at least the cap admitted (got ${ok})`);
  assert.ok(limited.length > 0, 'the cap was reached: some requests were refused');
  for (const r of limited) {
    assert.equal(r.body.error.limit, 'max_concurrency', r.text);
    assert.equal(r.headers.get('retry-after'), '2');
  }
  const stats = await mockStats(mock);
  assert.ok(stats.peak_in_flight <= LIMIT, `provider saw ${stats.peak_in_flight} in flight at once (cap ${LIMIT})`);
  assert.ok(stats.peak_in_flight >= 1, 'the provider saw the admitted requests');
  const s = await gws[1].admin('GET', `/admin/v1/allocations/${allocation.id}`);
  assert.equal(s.body.current.in_flight, 0);
  assert.equal(s.body.current.requests_last_minute, ok, 'only admitted requests count as started');
});

test('requests_per_minute 20 across three gateways: exactly 20 of 45 parallel requests admitted', async () => {
  const { allocation, secret } = await createAgreement(gws[0], { requests_per_minute: 20 });
  const results = await Promise.all(Array.from({ length: 45 }, (_, i) =>
    chatVia(gwAt(i), secret, { model: 'mock?delay-ms=20', messages: msg })));
  const ok = results.filter((r) => r.status === 200);
  const limited = results.filter((r) => r.status === 429);
  assert.equal(ok.length, 20, `admitted ${ok.length} (statuses ${results.map((r) => r.status)})`);
  assert.equal(limited.length, 25);
  for (const r of limited) {
    assert.equal(r.body.error.limit, 'requests_per_minute', r.text);
    assert.equal(r.headers.get('retry-after'), '60');
  }
  const s = await gws[2].admin('GET', `/admin/v1/allocations/${allocation.id}`);
  assert.equal(s.body.current.requests_last_minute, 20);
  assert.equal((await allEvents(gws[1], allocation.id)).length, 20);
});

test('output allowance 1000 across three gateways: 30 parallel requests of max_tokens 100 never overspend it', async () => {
  const { allocation, agreement, secret } = await createAgreement(gws[0], { output_tokens: 1000 });
  const results = await Promise.all(Array.from({ length: 30 }, (_, i) =>
    chatVia(gwAt(i), secret, { model: 'mock?usage=10,100&delay-ms=50', messages: msg, max_tokens: 100 })));
  const ok = results.filter((r) => r.status === 200);
  assert.ok(ok.length <= 10, `admitted ${ok.length} requests of 100 output tokens on an allowance of 1000`);
  // Each hold is exactly 100 and each booking exactly 100: remaining is always a multiple
  // of 100, so nothing is lowered and every request is admitted until the allowance is held.
  assert.equal(ok.length, 10, `admitted ${ok.length}`);
  for (const r of ok) assert.equal(r.headers.get('x-cairva-max-tokens-lowered'), null);
  for (const r of results.filter((x) => x.status !== 200)) {
    assert.equal(r.status, 402, r.text);
    assert.ok(['allocation_exhausted', 'allocation_depleted'].includes(r.body.error.code), r.text);
  }
  const s = await gws[1].admin('GET', `/admin/v1/allocations/${allocation.id}`);
  assert.equal(s.body.used.output_tokens, ok.length * 100);
  assert.equal(s.body.held.output_tokens, 0);
  assert.equal(s.body.state, 'depleted');
  const events = await allEvents(gws[2], allocation.id);
  assert.equal(events.length, ok.length);
  assert.equal(events.reduce((sum, e) => sum + e.output_tokens, 0), ok.length * 100);
  const a = await gws[2].admin('GET', `/admin/v1/allocations/${allocation.id}`);
  assert.equal(a.body.agreement_id, agreement.id);
});

test('the same provider response id through two gateways is booked once; the other requests stay pending with conflicts', async () => {
  const { allocation, secret } = await createAgreement(gws[0]);
  // Both at once, through two different gateways: the unique key decides, not a process.
  const [a, b] = await Promise.all([
    chatVia(gws[0], secret, { model: 'mock?id=fixed-xyz', messages: msg }),
    chatVia(gws[1], secret, { model: 'mock?id=fixed-xyz', messages: msg }),
  ]);
  for (const r of [a, b]) {
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.id, 'fixed-xyz');
    assert.equal(r.body.usage_source, 'provider', 'a reused id leaves the client response unchanged');
  }
  const events = await allEvents(gws[2], allocation.id);
  assert.equal(events.length, 1, `booked once: ${JSON.stringify(events)}`);
  assert.equal(events[0].provider_request_id, 'fixed-xyz');
  // A third report of the same id, through the third gateway, with other counts.
  const c = await chatVia(gws[2], secret, { model: 'mock?id=fixed-xyz&usage=11,5', messages: msg });
  assert.equal(c.status, 200, c.text);
  assert.equal((await allEvents(gws[0], allocation.id)).length, 1, 'the reused id booked nothing more');
  const requests = (await gws[2].admin('GET', `/admin/v1/requests?allocation_id=${allocation.id}`)).body.data;
  assert.equal(requests.length, 3);
  assert.deepEqual(requests.map((r) => r.state).sort(), ['booked', 'usage_pending', 'usage_pending']);
  const pending = requests.filter((r) => r.state === 'usage_pending');
  for (const r of pending) assert.equal(r.reported_usage.provider_request_id, 'fixed-xyz');
  const conflicts = await gws[1].admin('GET', `/admin/v1/conflicts?allocation_id=${allocation.id}`);
  assert.equal(conflicts.body.data.length, 2, conflicts.text);
  for (const conflict of conflicts.body.data) {
    assert.equal(conflict.provider_request_id, 'fixed-xyz');
    assert.deepEqual(conflict.booked, { input_tokens: events[0].input_tokens, output_tokens: events[0].output_tokens });
  }
  assert.ok(conflicts.body.data.some((cf) => cf.reported.input_tokens === 11 && cf.reported.output_tokens === 5));
  const s = await gws[0].admin('GET', `/admin/v1/allocations/${allocation.id}`);
  assert.deepEqual(s.body.used, { input_tokens: events[0].input_tokens, output_tokens: events[0].output_tokens });
  assert.deepEqual(s.body.held, {
    input_tokens: pending.reduce((n, r) => n + r.hold.input_tokens, 0),
    output_tokens: pending.reduce((n, r) => n + r.hold.output_tokens, 0),
  });
});

test('a provider id no store can keep (a NUL byte, over 512 bytes) counts as absent: booked under the gateway request id', async () => {
  const { allocation, secret } = await createAgreement(gws[0]);
  const nul = 'mock?id=p-\\u0000x';  // the mock writes the id into its JSON as sent: "p-", NUL, "x"
  const long = `mock?id=${'x'.repeat(513)}`;
  const rs = [
    await chatVia(gws[0], secret, { model: nul, messages: msg }),
    await chatVia(gws[1], secret, { model: nul, messages: msg, stream: true }),
    await chatVia(gws[2], secret, { model: long, messages: msg }),
  ];
  for (const r of rs) assert.equal(r.status, 200, r.text);
  assert.equal(rs[0].body.id, 'p-\u0000x', 'the client gets the provider\'s id as sent');
  const events = await allEvents(gws[0], allocation.id);
  assert.deepEqual(events.map((e) => e.provider_request_id).sort(),
    rs.map((r) => r.headers.get('x-cairva-request-id')).sort());
  const s = await gws[0].admin('GET', `/admin/v1/allocations/${allocation.id}`);
  assert.deepEqual(s.body.held, { input_tokens: 0, output_tokens: 0 });
});

test('a key revoked through one gateway is refused at once by the others, whatever the request', async () => {
  const { allocation } = await createAgreement(gws[0]);
  const k = await gws[0].admin('POST', `/admin/v1/allocations/${allocation.id}/keys`);
  assert.equal(k.status, 201, k.text);
  const { id, secret } = k.body.api_key;
  // Every gateway has served the key (a gateway on PostgreSQL keeps its grant for admissions).
  for (const gw of gws) assert.equal((await chatVia(gw, secret, { model: 'm', messages: msg })).status, 200);
  const rv = await gws[0].admin('DELETE', `/admin/v1/keys/${id}`);
  assert.equal(rv.status, 200, rv.text);
  // The first two each meet a gateway that still holds the key's grant: one refused before
  // its admission (a malformed body: the key is judged first), one at its admission.
  const refused = [
    await chatVia(gws[1], secret, '{"model":'),
    await chatVia(gws[2], secret, { model: 'm', messages: msg }),
    await chatVia(gws[1], secret, { model: 'm', messages: msg, stream: true }),
    await fetch(`${gws[0].url}/v1/allocations/current`, { headers: { authorization: `Bearer ${secret}` } })
      .then(async (r) => ({ status: r.status, text: await r.text() })),
  ];
  for (const [i, r] of refused.entries()) {
    assert.equal(r.status, 401, `request ${i}: ${r.text}`);
    assert.equal(JSON.parse(r.text).error.code, 'invalid_api_key', `request ${i}: ${r.text}`);
  }
  const requests = await gws[0].admin('GET', `/admin/v1/requests?allocation_id=${allocation.id}`);
  assert.equal(requests.body.data.length, GATEWAYS, 'nothing admitted after the revocation');
});

test('a gateway SIGKILLed mid-stream: the others keep serving and its request becomes usage_pending after the timeout', async () => {
  const { allocation, secret } = await createAgreement(gws[0]);
  const victim = gws[2];
  const res = await fetch(victim.url + '/v1/chat/completions', {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'mock?chunks=50&chunk-delay-ms=100', messages: msg, stream: true }),
  });
  assert.equal(res.status, 200);
  const requestId = res.headers.get('x-cairva-request-id');
  assert.match(requestId, /^req_/);
  const reader = res.body.getReader();
  const first = await reader.read();
  assert.ok(!first.done && first.value.length > 0, 'the stream started');
  await victim.stop('SIGKILL');
  await reader.read().then(() => {}, () => {});  // the cut stream may end or fail: either is fine
  reader.cancel().catch(() => {});

  // The surviving gateways keep serving, round-robin.
  for (let i = 0; i < 4; i++) {
    const r = await chatVia(gws[i % 2], secret, { model: 'm', messages: msg });
    assert.equal(r.status, 200, `gateway ${i % 2} after the kill: ${r.text}`);
  }

  const findRequest = async () => {
    const r = await gws[0].admin('GET', `/admin/v1/requests?allocation_id=${allocation.id}`);
    return r.body.data.find((x) => x.id === requestId);
  };
  const killed = await findRequest();
  assert.ok(killed, `the killed gateway's request ${requestId} was recorded before forwarding`);
  const pending = await eventually(async () => {
    const r = await findRequest();
    return r.state === 'usage_pending' ? r : undefined;
  }, 100, 100);  // up to ~10 s: timeout 3 s plus one sweep interval, with slack
  assert.ok(pending, `request ${requestId} became usage_pending (state now ${(await findRequest()).state})`);
  const pendingSeenAt = Date.now();
  const startedAt = Date.parse(pending.started_at);
  assert.ok(pendingSeenAt - startedAt >= IN_FLIGHT_TIMEOUT_S * 1000 - 250,
    `not swept before in_flight_timeout_s: started ${pending.started_at}, pending seen after ${pendingSeenAt - startedAt} ms`);
  assert.ok(pending.hold.output_tokens > 0, 'a stale request keeps its hold');
  const s = await gws[1].admin('GET', `/admin/v1/allocations/${allocation.id}`);
  assert.equal(s.body.current.in_flight, 0, 'a stale request stops counting toward concurrency');
  assert.equal(s.body.current.usage_pending, 1);
  assert.deepEqual(s.body.held, pending.hold);

  const result = audit(dbUrl);
  assert.equal(result.code, 0, `cairva audit --store ${dbUrl} failed:\n${result.out}`);
  assert.ok(result.out.length > 0, 'audit printed a summary');
});

// Regression: src/gateway/chat.cpp wrote `Result<SettleResult> settled = c ? co_await a :
// co_await b;` — GCC 12 destroys that co_await result twice, so a settlement that returned
// an error aborted the gateway ("free(): double free detected in tcache 2").
test('a settlement the database refuses answers 503 store_unavailable (plain) and every gateway keeps serving', async () => {
  const { allocation, secret } = await createAgreement(gws[0]);
  // Every new usage event is refused from now on (existing rows are not checked).
  psql(dbUrl, 'ALTER TABLE usage_events ADD CONSTRAINT cv_test_refuse_events CHECK (false) NOT VALID');
  try {
    const r = await chatVia(gws[0], secret, { model: 'm', messages: msg });
    assert.equal(r.status, 503, r.text);
    assert.equal(r.body.error.code, 'store_unavailable', r.text);
    // Streaming: the 200 and the chunks are already out when settlement fails; the gateway
    // must end the stream and live on.
    const st = await chatVia(gws[1], secret, { model: 'm', messages: msg, stream: true });
    assert.equal(st.status, 200, st.text);
  } finally {
    psql(dbUrl, 'ALTER TABLE usage_events DROP CONSTRAINT cv_test_refuse_events');
  }
  for (const gw of [gws[0], gws[1]]) {
    const r = await chatVia(gw, secret, { model: 'm', messages: msg });
    assert.equal(r.status, 200, `${gw.url} survived the failed settlements: ${r.text}`);
  }
  const s = await gws[1].admin('GET', `/admin/v1/allocations/${allocation.id}`);
  assert.equal(s.body.used.output_tokens, 2 * 7, 'only the two requests after the refusal were booked');
});
