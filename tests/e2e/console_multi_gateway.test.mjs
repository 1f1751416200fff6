// Paging across gateways on one PostgreSQL database (SPEC-CONSOLE §1): rows committed by
// several processes out of id order still reach a reader that follows `after` exactly once,
// and a usage series read through one gateway counts the traffic of all of them.
// Needs CAIRVA_TEST_PG_URL (exported by scripts/test.sh); without it every test fails.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { BIN, startMock, startGateway, createAgreement, chat, psql } from './harness.mjs';

const GATEWAYS = 2;
const msg = [{ role: 'user', content: 'x' }];
const PG_URL = process.env.CAIRVA_TEST_PG_URL;
const dbName = `cairva_console_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
let dbUrl;
let mock;
const gws = [];

before(async () => {
  assert.ok(PG_URL, 'CAIRVA_TEST_PG_URL is not set: this suite needs a PostgreSQL server (scripts/test.sh)');
  psql(PG_URL, `CREATE DATABASE ${dbName}`);
  const u = new URL(PG_URL);
  u.pathname = '/' + dbName;
  dbUrl = u.toString();
  mock = await startMock(['--threads', '2']);
  gws.push(...await Promise.all(Array.from({ length: GATEWAYS }, () => startGateway(mock, { store: dbUrl }))));
});

after(async () => {
  for (const gw of gws) { await gw.stop(); gw.cleanup(); }
  mock?.child.kill();
  if (dbUrl) psql(PG_URL, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
});

test('a follower through one gateway sees every request and event of all gateways once', async () => {
  const allocs = [await createAgreement(gws[0]), await createAgreement(gws[1])];
  const sent = [];
  let done = false;
  const load = (async () => {
    let i = 0;
    const worker = async () => {
      while (i < 200) {
        const n = i++;
        const a = allocs[n % allocs.length];
        const r = await chat(gws[n % GATEWAYS], a.secret, { model: 'm', messages: msg, max_tokens: 10 });
        assert.equal(r.status, 200, r.text);
        sent.push(r.headers.get('x-cairva-request-id'));
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    done = true;
  })();
  async function followLive(path, limit) {
    const seen = [];
    let afterId = null;
    for (let pages = 0; pages < 100_000; pages++) {
      const finished = done;
      const r = await gws[1].admin('GET', `${path}?limit=${limit}${afterId ? `&after=${afterId}` : ''}`);
      assert.equal(r.status, 200, r.text);
      for (const row of r.body.data) seen.push(row);
      if (r.body.data.length) afterId = r.body.data.at(-1).id;
      if (!r.body.has_more && finished) return seen;
    }
    throw new Error('never caught up');
  }
  const [requests, events] = await Promise.all([followLive('/admin/v1/requests', 9), followLive('/admin/v1/events', 6)]);
  await load;
  const mine = new Set(allocs.map((a) => a.allocation.id));
  const ids = requests.filter((r) => mine.has(r.allocation_id)).map((r) => r.id);
  assert.equal(new Set(ids).size, ids.length, 'no request twice');
  assert.deepEqual(new Set(ids), new Set(sent));
  const eventIds = events.filter((e) => mine.has(e.allocation_id)).map((e) => e.id);
  assert.equal(new Set(eventIds).size, eventIds.length, 'no event twice');
  assert.equal(eventIds.length, sent.length);

  const to = new Date(Date.now() + 60_000).toISOString();
  const series = await gws[0].admin('GET', `/admin/v1/allocations/${allocs[1].allocation.id}/usage?bucket=hour&to=${to}`);
  assert.equal(series.status, 200, series.text);
  assert.equal(series.body.data.reduce((t, b) => t + b.requests, 0), 100);
  const audit = execFileSync(BIN, ['audit', '--store', dbUrl], { encoding: 'utf8' });
  assert.match(audit, /ok: no violation/);
});
