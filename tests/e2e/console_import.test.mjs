// The console's bulk reconciliation import (console/src/admin/bulk_import.js): a file larger
// than one API call is applied whole or not at all (SPEC-CONSOLE §4: malformed input applies
// nothing), against a scripted API and against a real gateway's admin API.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { importItems, batch_items_max } from '../../console/src/admin/bulk_import.js';
import { gatewayForFile, createAgreement, chat } from './harness.mjs';

let gw;
gatewayForFile({}, (m, g) => {
  gw = g;
});

// An API client over the admin API, throwing as the console's (lib/api.js) does.
function adminApi(calls = []) {
  return {
    async post(path, body) {
      calls.push(body);
      const r = await gw.admin('POST', path, body);
      if (r.status >= 400) throw Object.assign(new Error(r.body.error.message), { status: r.status, code: r.body.error.code });
      return r.body;
    },
  };
}

// A scripted API: `refuse(body, call)` returns an error to throw, or nothing to answer each
// item as booked (a dry run too).
function scriptedApi(refuse) {
  const calls = [];
  return {
    calls,
    async post(path, body) {
      calls.push({ dry_run: body.dry_run, size: body.items.length, first: body.items[0] });
      const e = refuse(body, calls.length);
      if (e) throw e;
      return { results: body.items.map((_, i) => ({ item: i, outcome: 'booked' })) };
    },
  };
}

const itemsOf = (n) => Array.from({ length: n }, (_, i) => ({ request_id: `req_${i}`, input_tokens: 1, output_tokens: 1 }));
const malformed = Object.assign(new Error('items[3]: request_id: too long'), { status: 400, code: 'invalid_request' });

test('an apply books nothing when any batch is refused, and names the item in the whole file', async () => {
  const api = scriptedApi((body) => (body.items.some((x) => x.request_id === 'req_2003') ? malformed : null));
  await assert.rejects(importItems(api, 'metering', itemsOf(2 * batch_items_max + 10), false), (e) => {
    assert.equal(e.code, 'invalid_request');
    assert.equal(e.message, 'items[2003]: request_id: too long');
    assert.equal(e.applied, 0);
    return true;
  });
  assert.ok(api.calls.every((c) => c.dry_run === true), 'no batch was applied');
});

test('an apply dry-runs every batch first, then applies each; results are numbered through the file', async () => {
  const api = scriptedApi(() => null);
  const out = await importItems(api, 'metering', itemsOf(batch_items_max + 5), false);
  assert.deepEqual(api.calls.map((c) => [c.dry_run, c.size]), [[true, batch_items_max], [true, 5], [false, batch_items_max], [false, 5]]);
  assert.equal(out.length, batch_items_max + 5);
  assert.deepEqual(out.at(-1), { item: batch_items_max + 4, outcome: 'booked', id: `req_${batch_items_max + 4}` });
  const dry = scriptedApi(() => null);
  await importItems(dry, 'metering', itemsOf(3), true);
  assert.deepEqual(dry.calls.map((c) => c.dry_run), [true], 'a dry run is one pass');
});

test('a failure while booking says how many items were booked before it', async () => {
  const down = Object.assign(new Error('the store is unavailable'), { status: 503, code: 'store_unavailable' });
  const api = scriptedApi((body, call) => (body.dry_run === false && call === 4 ? down : null));
  await assert.rejects(importItems(api, 'metering', itemsOf(batch_items_max + 1), false), (e) => {
    assert.equal(e.code, 'store_unavailable');
    assert.equal(e.applied, batch_items_max);
    return true;
  });
});

test('against a gateway: a malformed item in a later batch leaves the first batch\'s pending request unbooked', async () => {
  const { allocation, secret } = await createAgreement(gw);
  const r = await chat(gw, secret, { model: 'mock?no-usage&no-id', messages: [{ role: 'user', content: 'x' }], max_tokens: 20 });
  const pending = r.headers.get('x-cairva-request-id');
  assert.equal((await gw.admin('GET', `/admin/v1/requests/${pending}`)).body.state, 'usage_pending');
  const items = itemsOf(batch_items_max + 3);
  items[0] = { request_id: pending, input_tokens: 7, output_tokens: 3 };
  items[batch_items_max + 1] = { request_id: 'req_' + 'x'.repeat(300), input_tokens: 1, output_tokens: 1 };
  const calls = [];
  await assert.rejects(importItems(adminApi(calls), 'metering', items, false), (e) => {
    assert.equal(e.status, 400);
    assert.match(e.message, new RegExp(`^items\\[${batch_items_max + 1}\\]`));
    return true;
  });
  assert.ok(calls.every((c) => c.dry_run === true));
  assert.equal((await gw.admin('GET', `/admin/v1/requests/${pending}`)).body.state, 'usage_pending', 'nothing applied');
  assert.deepEqual((await gw.admin('GET', `/admin/v1/allocations/${allocation.id}`)).body.used, { input_tokens: 0, output_tokens: 0 });
  // The file without the malformed item books its one pending request.
  items.splice(batch_items_max + 1, 1);
  const out = await importItems(adminApi(), 'metering', items, false);
  assert.equal(out[0].outcome, 'booked');
  assert.equal(out.filter((x) => x.outcome === 'not_found').length, items.length - 1);
  assert.equal((await gw.admin('GET', `/admin/v1/requests/${pending}`)).body.state, 'booked');
});
