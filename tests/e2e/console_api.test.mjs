// Operating at volume (SPEC-CONSOLE §1–§4b) through the HTTP APIs and the CLI, against a
// real gateway: lists that page while traffic arrives, usage series for operators and
// buyers, exports, bulk reconciliation from a file, adjustments.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gatewayForFile, createAgreement, chat, BIN, ADMIN_TOKEN } from './harness.mjs';

const run = promisify(execFile);
let gw;
gatewayForFile({}, async (m, g) => {
  gw = g;
});

const msg = [{ role: 'user', content: 'x' }];

async function cairva(args) {
  try {
    const r = await run(BIN, args, {
      env: { ...process.env, CAIRVA_ADMIN_URL: gw.adminUrl, CAIRVA_ADMIN_TOKEN: ADMIN_TOKEN },
      maxBuffer: 64 << 20,
    });
    return { code: 0, out: r.stdout, err: r.stderr };
  } catch (e) {
    return { code: e.code, out: e.stdout, err: e.stderr };
  }
}

// Every row of a listing, following `after` from the first page to has_more:false.
async function follow(path, limit) {
  const rows = [];
  let after = null;
  for (let pages = 0; pages < 10_000; pages++) {
    const sep = path.includes('?') ? '&' : '?';
    const r = await gw.admin('GET', `${path}${sep}limit=${limit}${after ? `&after=${after}` : ''}`);
    assert.equal(r.status, 200, r.text);
    assert.ok(r.body.data.length <= limit);
    rows.push(...r.body.data);
    if (!r.body.has_more) return rows;
    after = r.body.data.at(-1).id;
  }
  throw new Error('the listing never ended');
}

// `n` chat requests, `parallel` at a time; resolves with their gateway request ids.
async function traffic(secret, n, parallel, model = 'm') {
  const ids = [];
  let next = 0;
  async function worker() {
    while (next < n) {
      next++;
      const r = await chat(gw, secret, { model, messages: msg, max_tokens: 20 });
      assert.equal(r.status, 200, r.text);
      ids.push(r.headers.get('x-cairva-request-id'));
    }
  }
  await Promise.all(Array.from({ length: parallel }, worker));
  return ids;
}

test('every admin list pages with limit/after and has_more; an unknown after is 400', async () => {
  const made = [];
  for (let i = 0; i < 3; i++) made.push(await createAgreement(gw));
  const agreements = await follow('/admin/v1/agreements', 2);
  const ids = agreements.map((a) => a.id);
  const mine = made.map((m) => m.agreement.id);
  assert.deepEqual(ids.filter((id) => mine.includes(id)), mine, 'creation order');
  assert.equal(new Set(ids).size, ids.length);
  const allocations = await follow('/admin/v1/allocations', 2);
  assert.deepEqual(allocations.map((a) => a.id).filter((id) => made.some((m) => m.allocation.id === id)),
    made.map((m) => m.allocation.id));
  const first = await gw.admin('GET', '/admin/v1/agreements?limit=1');
  assert.equal(first.body.has_more, true);
  for (const path of ['/admin/v1/agreements?after=agr_nope', '/admin/v1/allocations?after=alloc_nope',
    '/admin/v1/requests?after=req_nope', '/admin/v1/events?after=evt_nope', '/admin/v1/conflicts?after=cfl_nope',
    '/admin/v1/requests?limit=0', '/admin/v1/events?limit=1001']) {
    const r = await gw.admin('GET', path);
    assert.equal(r.status, 400, path);
    assert.equal(r.body.error.code, 'invalid_request', path);
  }
});

test('an allocation lists its keys without secrets; a revoked key shows as revoked', async () => {
  const { allocation, secret } = await createAgreement(gw);
  const second = await gw.admin('POST', `/admin/v1/allocations/${allocation.id}/keys`);
  assert.equal(second.status, 201);
  await gw.admin('DELETE', `/admin/v1/keys/${second.body.api_key.id}`);
  const keys = await follow(`/admin/v1/allocations/${allocation.id}/keys`, 1);
  assert.equal(keys.length, 2);
  assert.deepEqual(keys.map((k) => k.revoked), [false, true]);
  for (const k of keys) {
    assert.deepEqual(Object.keys(k).sort(), ['allocation_id', 'created_at', 'id', 'object', 'revoked']);
  }
  const text = JSON.stringify(keys);
  assert.ok(!text.includes(secret) && !text.includes(second.body.api_key.secret), 'never a secret');
  assert.equal((await gw.admin('GET', '/admin/v1/allocations/alloc_nope/keys')).status, 404);
  const cli = await cairva(['key', 'list', allocation.id]);
  assert.equal(cli.code, 0, cli.err);
  assert.match(cli.out, new RegExp(second.body.api_key.id));
});

test('a follower of requests and events sees every row once while traffic arrives', async () => {
  const { allocation, secret } = await createAgreement(gw);
  let done = false;
  const sent = traffic(secret, 150, 8).then((ids) => { done = true; return ids; });
  async function followLive(path, limit) {
    const seen = [];
    let after = null;
    for (let pages = 0; pages < 100_000; pages++) {
      const finished = done;
      const r = await gw.admin('GET', `${path}&limit=${limit}${after ? `&after=${after}` : ''}`);
      assert.equal(r.status, 200, r.text);
      for (const row of r.body.data) seen.push(row.id);
      if (r.body.data.length) after = r.body.data.at(-1).id;
      if (!r.body.has_more && finished) return seen;
    }
    throw new Error('never caught up');
  }
  const [requests, events] = await Promise.all([
    followLive(`/admin/v1/requests?allocation_id=${allocation.id}`, 7),
    followLive(`/admin/v1/events?allocation_id=${allocation.id}`, 5),
  ]);
  const ids = await sent;
  assert.equal(new Set(requests).size, requests.length, 'no request twice');
  assert.deepEqual(new Set(requests), new Set(ids));
  assert.equal(new Set(events).size, events.length, 'no event twice');
  assert.equal(events.length, ids.length);
  const pending = await cairva(['requests', 'list', '--allocation', allocation.id, '--json']);
  assert.equal(JSON.parse(pending.out).data.length, ids.length, 'the CLI follows every page');
});

test('usage over time: admin and buyer see the same buckets; bad queries are 400', async () => {
  const a = await createAgreement(gw);
  const b = await createAgreement(gw);
  await traffic(a.secret, 3, 1);
  await traffic(b.secret, 1, 1);
  const failed = await chat(gw, a.secret, { model: 'mock?status=500', messages: msg, max_tokens: 5 });
  assert.equal(failed.status, 500);
  const to = new Date(Date.now() + 60_000).toISOString();
  const admin = await gw.admin('GET', `/admin/v1/allocations/${a.allocation.id}/usage?bucket=minute&to=${to}`);
  assert.equal(admin.status, 200, admin.text);
  assert.equal(admin.body.object, 'usage_series');
  assert.equal(admin.body.bucket, 'minute');
  assert.equal(admin.body.data.length, 24, 'default: 24 buckets, the last one holding `to`');
  for (const [i, bucket] of admin.body.data.entries()) {
    assert.match(bucket.start, /:00(\.0+)?Z$/, 'UTC-aligned');
    if (i) assert.equal(Date.parse(bucket.start) - Date.parse(admin.body.data[i - 1].start), 60_000);
  }
  const total = admin.body.data.reduce((t, x) => ({
    input: t.input + x.input_tokens, output: t.output + x.output_tokens, requests: t.requests + x.requests, failed: t.failed + x.failed,
  }), { input: 0, output: 0, requests: 0, failed: 0 });
  const status = await gw.admin('GET', `/admin/v1/allocations/${a.allocation.id}`);
  assert.deepEqual([total.input, total.output], [status.body.used.input_tokens, status.body.used.output_tokens]);
  assert.equal(total.requests, 4);
  assert.equal(total.failed, 1);
  const res = await fetch(`${gw.url}/v1/allocations/current/usage?bucket=minute&to=${to}`, {
    headers: { authorization: `Bearer ${a.secret}` },
  });
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), admin.body, "the buyer's series is the same answer");
  const theirs = await (await fetch(`${gw.url}/v1/allocations/current/usage?bucket=hour`, {
    headers: { authorization: `Bearer ${b.secret}` },
  })).json();
  assert.equal(theirs.allocation_id, b.allocation.id, 'a key shows only its own allocation');
  const bad = [
    `/admin/v1/allocations/${a.allocation.id}/usage?bucket=week`,
    `/admin/v1/allocations/${a.allocation.id}/usage?bucket=minute&from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z`,
    `/admin/v1/allocations/${a.allocation.id}/usage?from=yesterday`,
    `/admin/v1/allocations/${a.allocation.id}/usage?surprise=1`,
  ];
  for (const path of bad) assert.equal((await gw.admin('GET', path)).status, 400, path);
  assert.equal((await gw.admin('GET', '/admin/v1/allocations/alloc_nope/usage')).status, 404);
  const buyerBad = await fetch(`${gw.url}/v1/allocations/current/usage?bucket=week`, {
    headers: { authorization: `Bearer ${a.secret}` },
  });
  assert.equal(buyerBad.status, 400);
  assert.equal((await fetch(`${gw.url}/v1/allocations/current/usage`)).status, 401);
});

test('events and requests export as CSV and JSONL, complete and without duplicates under load', async () => {
  const { allocation, secret } = await createAgreement(gw);
  await traffic(secret, 40, 4);
  const before = (await follow(`/admin/v1/events?allocation_id=${allocation.id}`, 1000)).map((e) => e.id);
  const load = traffic(secret, 120, 6);  // more bookings while the export pages
  const csv = await cairva(['events', 'export', '--allocation', allocation.id]);
  await load;
  assert.equal(csv.code, 0, csv.err);
  const lines = csv.out.split('\r\n').filter((l) => l);
  assert.equal(lines[0], 'id,allocation_id,request_id,provider_request_id,input_tokens,output_tokens,source,finality,evidence,booked_at,corrects');
  const exported = lines.slice(1).map((l) => l.split(',')[0]);
  assert.equal(new Set(exported).size, exported.length, 'no duplicates');
  for (const id of before) assert.ok(exported.includes(id), `${id} booked before the export began is in it`);
  const all = (await follow(`/admin/v1/events?allocation_id=${allocation.id}`, 1000)).map((e) => e.id);
  assert.deepEqual(exported, all.slice(0, exported.length), 'booking order, a prefix of the final listing');

  const jsonl = await cairva(['events', 'export', '--allocation', allocation.id, '--format', 'jsonl']);
  const objects = jsonl.out.trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(objects.map((e) => e.id), all);
  assert.ok(objects.every((e) => e.allocation_id === allocation.id && e.source === 'provider'));

  const from = objects[10].booked_at;
  const ranged = await cairva(['events', 'export', '--allocation', allocation.id, '--from', from, '--format', 'jsonl']);
  const rangedIds = ranged.out.trim().split('\n').map((l) => JSON.parse(l).id);
  assert.ok(rangedIds.length > 0 && rangedIds.length <= all.length - 10);
  assert.ok(rangedIds.every((id) => all.indexOf(id) >= 10));

  const req = await cairva(['requests', 'export', '--allocation', allocation.id]);
  assert.equal(req.code, 0, req.err);
  const reqLines = req.out.split('\r\n').filter((l) => l);
  assert.equal(reqLines[0], 'id,allocation_id,state,started_at,finished_at,model,stream,hold_input_tokens,hold_output_tokens,provider_request_id');
  assert.equal(reqLines.length - 1, 160);
});

test('bulk reconciliation from a file: dry run first, books, re-import books nothing', async () => {
  const { allocation, secret } = await createAgreement(gw);
  const pendingByProvider = [];
  for (let i = 0; i < 3; i++) {
    const id = `chatcmpl-e2e-${process.pid}-${i}`;
    const r = await chat(gw, secret, { model: `mock?no-usage&id=${id}`, messages: msg, max_tokens: 20 });
    assert.equal(r.status, 200);
    pendingByProvider.push(id);
  }
  const noId = await chat(gw, secret, { model: 'mock?no-usage&no-id', messages: msg, max_tokens: 20 });
  const byRequest = noId.headers.get('x-cairva-request-id');
  const booked = await chat(gw, secret, { model: 'm', messages: msg, max_tokens: 20 });
  const bookedEvent = (await follow(`/admin/v1/events?allocation_id=${allocation.id}`, 100))[0];
  assert.equal(bookedEvent.request_id, booked.headers.get('x-cairva-request-id'));

  const dir = mkdtempSync(join(tmpdir(), 'cairva-import-'));
  try {
    const file = join(dir, 'metering.csv');
    writeFileSync(file, [
      'request_id,provider_request_id,input_tokens,output_tokens',
      ...pendingByProvider.map((p, i) => `,${p},${10 + i},${20 + i}`),
      `${byRequest},,7,8`,
      `,${bookedEvent.provider_request_id},${bookedEvent.input_tokens + 1},${bookedEvent.output_tokens}`,
      'req_nope,,1,1',
    ].join('\n') + '\n');
    const pendingBefore = (await gw.admin('GET', `/admin/v1/allocations/${allocation.id}`)).body.current.usage_pending;
    assert.equal(pendingBefore, 4);

    const dry = await cairva(['reconcile', 'import', file, '--evidence', 'metering export 2026-12', '--dry-run']);
    assert.equal(dry.code, 1, 'a conflict and a not_found need attention');
    assert.match(dry.out, /dry run/);
    assert.match(dry.out, /^  booked {10}4$/m);
    assert.match(dry.out, /^  conflict {8}1$/m);
    assert.match(dry.out, /^  not_found {7}1$/m);
    const afterDry = (await gw.admin('GET', `/admin/v1/allocations/${allocation.id}`)).body;
    assert.equal(afterDry.current.usage_pending, 4, 'a dry run changes nothing');
    assert.equal((await gw.admin('GET', `/admin/v1/conflicts?allocation_id=${allocation.id}`)).body.data.length, 0);

    const real = await cairva(['reconcile', 'import', file, '--evidence', 'metering export 2026-12']);
    assert.equal(real.code, 1);
    assert.match(real.out, /imported 6 items/);
    assert.match(real.out, /^  booked {10}4$/m);
    assert.match(real.out, /^line 6: conflict/m);
    assert.match(real.out, /^line 7: not_found \(request_id req_nope\)$/m);
    const after = (await gw.admin('GET', `/admin/v1/allocations/${allocation.id}`)).body;
    assert.equal(after.current.usage_pending, 0);
    const events = await follow(`/admin/v1/events?allocation_id=${allocation.id}`, 100);
    assert.equal(events.length, 5);
    assert.ok(events.slice(1).every((e) => e.source === 'reconciliation' && e.evidence === 'metering export 2026-12'));
    assert.equal((await gw.admin('GET', `/admin/v1/conflicts?allocation_id=${allocation.id}`)).body.data.length, 1);

    const again = await cairva(['reconcile', 'import', file, '--evidence', 'metering export 2026-12']);
    assert.match(again.out, /^  booked {10}0$/m);
    assert.match(again.out, /^  already_booked {2}4$/m);
    assert.equal((await follow(`/admin/v1/events?allocation_id=${allocation.id}`, 100)).length, 5, 're-import books nothing');
    assert.equal((await gw.admin('GET', `/admin/v1/conflicts?allocation_id=${allocation.id}`)).body.data.length, 1,
      'nor records the same conflict twice');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('POST /admin/v1/reconciliations: a malformed item is 400 by index and nothing is applied', async () => {
  const { allocation, secret } = await createAgreement(gw);
  const r = await chat(gw, secret, { model: 'mock?no-usage&no-id', messages: msg, max_tokens: 20 });
  const id = r.headers.get('x-cairva-request-id');
  const bad = await gw.admin('POST', '/admin/v1/reconciliations', {
    evidence: 'e', items: [{ request_id: id, input_tokens: 1, output_tokens: 1 }, { request_id: id, input_tokens: -1, output_tokens: 1 }],
  });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.code, 'invalid_request');
  assert.match(bad.body.error.message, /^items\[1\]: input_tokens/);
  const tooMuch = await gw.admin('POST', '/admin/v1/reconciliations', {
    evidence: 'e', items: [{ request_id: id, input_tokens: 1, output_tokens: 20 * 10 + 1 }],
  });
  assert.equal(tooMuch.status, 400);
  assert.match(tooMuch.body.error.message, /items\[0\]: output_tokens 201 is 10\.0x the request's hold of 20/);
  assert.equal((await gw.admin('GET', `/admin/v1/requests/${id}`)).body.state, 'usage_pending', 'nothing applied');
  const dry = await gw.admin('POST', '/admin/v1/reconciliations', {
    evidence: 'e', dry_run: true, items: [{ request_id: id, input_tokens: 3, output_tokens: 4 }],
  });
  assert.equal(dry.status, 200);
  assert.deepEqual(dry.body.results, [{ item: 0, outcome: 'booked' }]);
  const ok = await gw.admin('POST', '/admin/v1/reconciliations', {
    evidence: 'e', items: [{ request_id: id, input_tokens: 3, output_tokens: 4 }],
  });
  assert.equal(ok.body.results[0].outcome, 'booked');
  assert.equal(ok.body.results[0].event.source, 'reconciliation');
  assert.equal((await gw.admin('GET', `/admin/v1/allocations/${allocation.id}`)).body.used.input_tokens, 3);
});

test('adjustments correct a booking with a new event; reconciling far above the hold needs --force', async () => {
  const { allocation, secret } = await createAgreement(gw, { input_tokens: 100, output_tokens: 100 });
  const r = await chat(gw, secret, { model: 'mock?no-usage&no-id', messages: msg, max_tokens: 20 });
  const id = r.headers.get('x-cairva-request-id');
  const refused = await cairva(['reconcile', id, '--input', '5000', '--output', '5000', '--evidence', 'typo']);
  assert.equal(refused.code, 1);
  assert.match(refused.err, /reconcile_hold_ratio_max/);
  const forced = await cairva(['reconcile', id, '--input', '5000', '--output', '5000', '--evidence', 'typo', '--force', '--json']);
  assert.equal(forced.code, 0, forced.err);
  const event = JSON.parse(forced.out).event;
  assert.equal((await gw.admin('GET', `/admin/v1/allocations/${allocation.id}`)).body.state, 'depleted');

  const adjusted = await cairva(['adjust', event.id, '--input', '-4950', '--output', '-4960', '--evidence', 'the export said 50/40', '--json']);
  assert.equal(adjusted.code, 0, adjusted.err);
  const adj = JSON.parse(adjusted.out).event;
  assert.equal(adj.source, 'adjustment');
  assert.equal(adj.finality, 'confirmed');
  assert.equal(adj.corrects, event.id);
  assert.equal(adj.input_tokens, -4950);
  const status = (await gw.admin('GET', `/admin/v1/allocations/${allocation.id}`)).body;
  assert.deepEqual(status.used, { input_tokens: 50, output_tokens: 40 });
  assert.equal(status.state, 'active', 'the mistaken depletion is undone');
  assert.equal((await chat(gw, secret, { model: 'm', messages: msg, max_tokens: 5 })).status, 200);

  const events = await follow(`/admin/v1/events?allocation_id=${allocation.id}`, 100);
  assert.equal(events.find((e) => e.id === event.id).input_tokens, 5000, 'the booking is never edited');
  const negative = await gw.admin('POST', `/admin/v1/events/${event.id}/adjust`, { input_tokens: -1000, evidence: 'x' });
  assert.equal(negative.status, 409);
  assert.equal((await gw.admin('POST', '/admin/v1/events/evt_nope/adjust', { input_tokens: 1, evidence: 'x' })).status, 404);
  assert.equal((await gw.admin('POST', `/admin/v1/events/${event.id}/adjust`, { input_tokens: 1 })).status, 400);
  const csv = await cairva(['events', 'export', '--allocation', allocation.id]);
  assert.match(csv.out, /,adjustment,confirmed,the export said 50\/40,/);
  // Each adjustment names the event it corrects, in both formats; other events leave it empty.
  const [header, ...lines] = csv.out.trim().split('\r\n');
  assert.ok(header.endsWith(',booked_at,corrects'), header);
  assert.ok(lines.find((l) => l.includes(',adjustment,')).endsWith(`,${event.id}`), csv.out);
  assert.ok(lines.find((l) => l.startsWith(`${event.id},`)).endsWith(','), csv.out);
  const jsonl = await cairva(['events', 'export', '--allocation', allocation.id, '--format', 'jsonl']);
  const exported = jsonl.out.trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(exported.find((e) => e.source === 'adjustment').corrects, event.id);
  assert.equal(exported.find((e) => e.id === event.id).corrects, null);
  const audit = await run(BIN, ['audit', '--store', gw.store]).catch((e) => e);
  assert.match(audit.stdout, /ok: no violation/);
});
