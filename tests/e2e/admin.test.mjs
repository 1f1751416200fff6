// The admin API over HTTP: SPEC §7.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { gatewayForFile, createAgreement, chat, adminCall, BIN } from './harness.mjs';

function audit(store) {
  try {
    return { code: 0, out: execFileSync(BIN, ['audit', '--store', store], { encoding: 'utf8' }) };
  } catch (e) {
    return { code: e.status, out: String(e.stdout) + String(e.stderr) };
  }
}

let mock, gw;
gatewayForFile({}, async (m, g) => {
  mock = m;
  gw = g;
});

const msg = [{ role: 'user', content: 'x' }];

test('a wrong or missing admin token is 401 invalid_admin_token', async () => {
  const r = await adminCall(gw.adminUrl, 'GET', '/admin/v1/allocations', undefined, 'wrong');
  assert.equal(r.status, 401);
  assert.equal(r.body.error.code, 'invalid_admin_token');
});

test('creating an agreement returns agreement, allocation and a key shown once', async () => {
  const { agreement, allocation, secret } = await createAgreement(gw, { models: ['a', 'b'] });
  assert.match(agreement.id, /^agr_/);
  assert.equal(agreement.state, 'in_force');
  assert.deepEqual(agreement.models, ['a', 'b']);
  assert.match(allocation.id, /^alloc_/);
  assert.equal(allocation.agreement_id, agreement.id);
  assert.match(secret, /^cv_/);
  const list = await gw.admin('GET', '/admin/v1/allocations');
  assert.ok(list.body.data.some((a) => a.id === allocation.id));
  assert.ok(!list.text.includes(secret), 'the secret is never shown again');
});

test('bad agreements are 400 invalid_request', async () => {
  const now = Date.now();
  const base = {
    supplier: 's', buyer: 'b', provider: 'mock', input_tokens: 10, output_tokens: 10,
    ends_at: new Date(now + 60_000).toISOString(), requests_per_minute: 1, tokens_per_minute: 1, max_concurrency: 1,
  };
  for (const bad of [
    { ...base, provider: 'nope' },
    { ...base, starts_at: new Date(now + 120_000).toISOString() },
    { ...base, requests_per_minute: 0 },
    { ...base, input_tokens: -1 },
    { ...base, max_concurrency: 'many' },
    { ...base, surprise: true },
  ]) {
    const r = await gw.admin('POST', '/admin/v1/agreements', bad);
    assert.equal(r.status, 400, JSON.stringify(bad));
    assert.equal(r.body.error.code, 'invalid_request');
  }
});

test('keys: a second key works; a revoked key is refused at once', async () => {
  const { allocation, secret } = await createAgreement(gw);
  const k = await gw.admin('POST', `/admin/v1/allocations/${allocation.id}/keys`);
  assert.equal(k.status, 201);
  assert.equal((await chat(gw, k.body.api_key.secret, { model: 'm', messages: msg })).status, 200);
  const rv = await gw.admin('DELETE', `/admin/v1/keys/${k.body.api_key.id}`);
  assert.equal(rv.status, 200);
  assert.equal(rv.body.api_key.revoked, true);
  assert.equal((await chat(gw, k.body.api_key.secret, { model: 'm', messages: msg })).status, 401);
  assert.equal((await chat(gw, secret, { model: 'm', messages: msg })).status, 200);
});

test('suspend, resume and cancel', async () => {
  const { agreement, allocation, secret } = await createAgreement(gw);
  const s = await gw.admin('POST', `/admin/v1/allocations/${allocation.id}/suspend`);
  assert.equal(s.status, 200);
  assert.equal(s.body.state, 'suspended');
  const r = await chat(gw, secret, { model: 'm', messages: msg });
  assert.equal(r.status, 403);
  assert.equal(r.body.error.code, 'allocation_not_active');
  const rs = await gw.admin('POST', `/admin/v1/allocations/${allocation.id}/resume`);
  assert.equal(rs.body.state, 'active');
  assert.equal((await chat(gw, secret, { model: 'm', messages: msg })).status, 200);
  const c = await gw.admin('POST', `/admin/v1/agreements/${agreement.id}/cancel`);
  assert.equal(c.status, 200);
  assert.equal(c.body.agreement.state, 'cancelled');
  const after = await chat(gw, secret, { model: 'm', messages: msg });
  assert.equal(after.status, 403);
  assert.equal(after.body.error.code, 'allocation_not_active');
  // Every reader is shown the state requests get (SPEC §2): cancelled, not active.
  assert.equal((await gw.admin('GET', `/admin/v1/allocations/${allocation.id}`)).body.state, 'cancelled');
  const listed = (await gw.admin('GET', '/admin/v1/allocations')).body.data.find((a) => a.id === allocation.id);
  assert.equal(listed.state, 'cancelled');
  const own = await fetch(gw.url + '/v1/allocations/current', { headers: { authorization: `Bearer ${secret}` } });
  assert.equal((await own.json()).state, 'cancelled');
  const resumed = await gw.admin('POST', `/admin/v1/allocations/${allocation.id}/resume`);
  assert.equal(resumed.status, 409);
  assert.match(resumed.body.error.message, /cannot resume an allocation that is cancelled: its agreement was cancelled; create a new agreement/);
});

test('a depleted allocation is shown depleted, and resuming it says why not', async () => {
  const { allocation, secret } = await createAgreement(gw, { output_tokens: 5 });
  assert.equal((await chat(gw, secret, { model: 'm', messages: msg })).status, 200);
  assert.equal((await gw.admin('GET', `/admin/v1/allocations/${allocation.id}`)).body.state, 'depleted');
  const resumed = await gw.admin('POST', `/admin/v1/allocations/${allocation.id}/resume`);
  assert.equal(resumed.status, 409);
  assert.match(resumed.body.error.message, /its allowance is fully booked/);
});

test('suspending a depleted allocation is 409', async () => {
  const { allocation, secret } = await createAgreement(gw, { output_tokens: 5 });
  assert.equal((await chat(gw, secret, { model: 'm', messages: msg })).status, 200);
  const s = await gw.admin('POST', `/admin/v1/allocations/${allocation.id}/suspend`);
  assert.equal(s.status, 409);
});

test('reconcile a usage_pending request with evidence; its errors in order', async () => {
  const { allocation, secret } = await createAgreement(gw);
  const r = await chat(gw, secret, { model: 'mock?no-usage', messages: msg, max_tokens: 10 });
  const reqId = r.headers.get('x-cairva-request-id');
  assert.equal((await gw.admin('POST', `/admin/v1/requests/${reqId}/reconcile`, { input_tokens: 1, output_tokens: 2 })).status, 400);
  assert.equal((await gw.admin('POST', `/admin/v1/requests/${reqId}/reconcile`, { input_tokens: -1, output_tokens: 2, evidence: 'x' })).status, 400);
  assert.equal((await gw.admin('POST', '/admin/v1/requests/req_unknown/reconcile', { input_tokens: 1, output_tokens: 2, evidence: 'x' })).status, 404);
  const ok = await gw.admin('POST', `/admin/v1/requests/${reqId}/reconcile`, { input_tokens: 12, output_tokens: 9, evidence: 'provider dashboard export 2026-11-30' });
  assert.equal(ok.status, 200);
  assert.equal(ok.body.event.source, 'reconciliation');
  assert.equal(ok.body.event.finality, 'confirmed');
  assert.equal(ok.body.event.evidence, 'provider dashboard export 2026-11-30');
  assert.equal(ok.body.event.request_id, reqId);
  const again = await gw.admin('POST', `/admin/v1/requests/${reqId}/reconcile`, { input_tokens: 1, output_tokens: 1, evidence: 'x' });
  assert.equal(again.status, 409);
  assert.equal(again.body.error.code, 'not_pending');
  const s = await gw.admin('GET', `/admin/v1/allocations/${allocation.id}`);
  assert.deepEqual(s.body.used, { input_tokens: 12, output_tokens: 9 });
  assert.deepEqual(s.body.held, { input_tokens: 0, output_tokens: 0 });
});

test('a provider id reused by other requests books one; the others stay pending with their holds and a conflict', async () => {
  const { allocation, secret } = await createAgreement(gw);
  // The mock answers every one of these with the response id chatcmpl-fixed-1.
  const a = await chat(gw, secret, { model: 'mock?id=chatcmpl-fixed-1&usage=10,5', messages: msg, max_tokens: 50 });
  const b = await chat(gw, secret, { model: 'mock?id=chatcmpl-fixed-1&usage=10,5', messages: msg, max_tokens: 50 });
  const c = await chat(gw, secret, { model: 'mock?id=chatcmpl-fixed-1&usage=99,99', messages: msg, max_tokens: 50 });
  assert.deepEqual([a.status, b.status, c.status], [200, 200, 200]);
  assert.deepEqual(b.body.usage, { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 }, 'client response unchanged');
  const booked = await gw.admin('GET', `/admin/v1/requests?allocation_id=${allocation.id}&state=booked`);
  assert.equal(booked.body.data.length, 1);
  const pending = await gw.admin('GET', `/admin/v1/requests?allocation_id=${allocation.id}&state=usage_pending`);
  assert.equal(pending.body.data.length, 2);
  for (const r of pending.body.data) {
    assert.equal(r.hold.output_tokens, 50, 'the hold is kept');
    assert.equal(r.reported_usage.provider_request_id, 'chatcmpl-fixed-1');
  }
  assert.deepEqual(pending.body.data.map((r) => r.reported_usage.output_tokens).sort((x, y) => x - y), [5, 99]);
  const s = await gw.admin('GET', `/admin/v1/allocations/${allocation.id}`);
  assert.deepEqual(s.body.used, { input_tokens: 10, output_tokens: 5 });
  assert.equal(s.body.held.output_tokens, 100);
  const ev = await gw.admin('GET', `/admin/v1/events?allocation_id=${allocation.id}`);
  assert.equal(ev.body.data.length, 1);
  const conflicts = await gw.admin('GET', `/admin/v1/conflicts?allocation_id=${allocation.id}`);
  assert.equal(conflicts.body.data.length, 2);
  assert.ok(conflicts.body.data.every((cf) => cf.provider_request_id === 'chatcmpl-fixed-1'));
  assert.deepEqual(new Set(conflicts.body.data.map((cf) => cf.request_id)), new Set(pending.body.data.map((r) => r.id)));
  // One command books a pending request's kept counts.
  const rec = await gw.admin('POST', `/admin/v1/requests/${pending.body.data[0].id}/reconcile`,
    { use_reported: true, evidence: 'the provider reused its id; counts as it reported them' });
  assert.equal(rec.status, 200, rec.text);
  assert.equal(rec.body.event.output_tokens, pending.body.data[0].reported_usage.output_tokens);
  const audited = audit(gw.store);  // beside the live gateway
  assert.equal(audited.code, 0, audited.out);
});

test('events page in booking order with an exclusive after', async () => {
  const { allocation, secret } = await createAgreement(gw);
  for (let i = 0; i < 3; i++) await chat(gw, secret, { model: 'm', messages: msg });
  const all = (await gw.admin('GET', `/admin/v1/events?allocation_id=${allocation.id}`)).body.data;
  assert.equal(all.length, 3);
  const rest = (await gw.admin('GET', `/admin/v1/events?allocation_id=${allocation.id}&after=${all[0].id}`)).body.data;
  assert.deepEqual(rest.map((e) => e.id), all.slice(1).map((e) => e.id));
});

test('a streamed completion times its relay in cairva_stream_relay_seconds', async () => {
  const count = async () => {
    const m = (await gw.admin('GET', '/metrics')).text.match(/^cairva_stream_relay_seconds_count (\d+)$/m);
    assert.ok(m, 'cairva_stream_relay_seconds_count is served');
    return Number(m[1]);
  };
  const before = await count();
  const { secret } = await createAgreement(gw);
  const r = await chat(gw, secret, { model: 'mock?chunks=3', messages: msg, stream: true });
  assert.equal(r.status, 200);
  assert.ok((await count()) > before);
});

test('metrics are served in Prometheus text format', async () => {
  const r = await gw.admin('GET', '/metrics');
  assert.equal(r.status, 200);
  assert.match(r.text, /# TYPE \w+ (counter|gauge|histogram)/);
});
