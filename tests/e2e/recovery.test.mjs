// Durability on the embedded store: kill -9 at random moments under load, restart,
// and check that nothing acknowledged was lost and nothing booked twice (SPEC §9).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { startMock, startGateway, createAgreement, chat, sleep, BIN } from './harness.mjs';

const KILLS = Number(process.env.CAIRVA_E2E_KILLS ?? 12);

function audit(store) {
  try {
    return { code: 0, out: execFileSync(BIN, ['audit', '--store', store], { encoding: 'utf8' }) };
  } catch (e) {
    return { code: e.status, out: String(e.stdout) + String(e.stderr) };
  }
}

test(`kill -9 under load ${KILLS} times: acknowledged bookings survive, in-flight become usage_pending, audit clean`, async () => {
  const mock = await startMock(['--threads', '2']);
  let gw = await startGateway(mock);
  const { dir, port, adminPort } = gw;
  const { allocation, secret } = await createAgreement(gw);
  const acknowledged = new Set();  // provider ids of responses the client fully received
  let seed = 12345;  // fixed seed: kill moments are reproducible in count, not in timing
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  try {
    for (let k = 0; k < KILLS; k++) {
      const load = Array.from({ length: 16 }, (_, i) =>
        chat(gw, secret, { model: `mock?delay-ms=${Math.floor(rand() * 40)}`, messages: [{ role: 'user', content: `k${k} i${i}` }] })
          .then((r) => { if (r.status === 200 && r.body?.usage_source === 'provider') acknowledged.add(r.body.id); })
          .catch(() => {}));
      await sleep(5 + Math.floor(rand() * 40));
      await gw.stop('SIGKILL');
      await Promise.all(load);
      gw = await startGateway(mock, { dir, port, adminPort });
      const inFlight = await gw.admin('GET', `/admin/v1/requests?allocation_id=${allocation.id}&state=in_flight`);
      assert.equal(inFlight.body.data.length, 0, 'no request left in flight after restart');
    }
    const events = [];
    let after = '';
    for (;;) {
      const page = await gw.admin('GET', `/admin/v1/events?allocation_id=${allocation.id}${after ? `&after=${after}` : ''}`);
      events.push(...page.body.data);
      if (page.body.data.length === 0) break;
      after = page.body.data.at(-1).id;
    }
    const ids = events.map((e) => e.provider_request_id);
    assert.equal(new Set(ids).size, ids.length, 'nothing booked twice');
    for (const id of acknowledged) assert.ok(ids.includes(id), `acknowledged response ${id} was booked`);
    const status = await gw.admin('GET', `/admin/v1/allocations/${allocation.id}`);
    assert.equal(status.body.used.input_tokens, events.reduce((s, e) => s + e.input_tokens, 0));
    console.log(`kills=${KILLS} acknowledged=${acknowledged.size} events=${events.length} pending=${status.body.current.usage_pending}`);
  } finally {
    await gw.stop();
    mock.child.kill();
  }
  const result = audit(gw.store);
  assert.equal(result.code, 0, result.out);
  gw.cleanup();
});

test('a second gateway on the same SQLite file refuses to start with a clear message', async () => {
  const mock = await startMock();
  const gw = await startGateway(mock);
  try {
    await assert.rejects(startGateway(mock, { store: gw.store }), /in use/);
  } finally {
    await gw.stop();
    mock.child.kill();
    gw.cleanup();
  }
});
