// Back up and restore under load (issue 28, item 4; docs/operations.md "Back up and restore").
// Embedded store: `cairva backup` copies the store while the official openai client keeps
// traffic flowing; the copy, put in place of a fresh gateway's store, audits clean and holds
// every request booked before the backup began with identical counts.
// PostgreSQL: pg_dump of a database with traffic booked, pg_restore into a new database,
// `cairva audit` clean on it with the same totals. Needs CAIRVA_TEST_PG_URL (scripts/test.sh
// sets it) and pg_dump/pg_restore (postgresql-client-15).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { BIN, ADMIN_TOKEN, startMock, startGateway, createAgreement, psql, databaseUrl } from './harness.mjs';

const WORKERS = 8;
// Requests each must have seen booked before the backup starts: enough that the copy is
// taken over a ledger with history, while the same workers keep sending.
const BOOKED_BEFORE_BACKUP = 200;

// The CLI without blocking this process: the traffic's workers keep running meanwhile.
async function cairvaAsync(args) {
  try {
    const r = await promisify(execFile)(BIN, args, { env: { ...process.env, CAIRVA_ADMIN_TOKEN: ADMIN_TOKEN } });
    return { code: 0, out: r.stdout };
  } catch (e) {
    return { code: e.code, out: String(e.stdout) + String(e.stderr) };
  }
}

function cairva(args, env = {}) {
  try {
    const out = execFileSync(BIN, args, {
      encoding: 'utf8', stdio: 'pipe', env: { ...process.env, CAIRVA_ADMIN_TOKEN: ADMIN_TOKEN, ...env },
    });
    return { code: 0, out };
  } catch (e) {
    return { code: e.status, out: String(e.stdout) + String(e.stderr) };
  }
}

// WORKERS loops of chat completions through the openai client, streamed and not, with
// varied prompts (so varied counts), until stop(). Every answer's request id and usage is
// recorded in completion order: a request is in `done` once its response has ended, which is
// after its booking is durable (SPEC §9).
function startTraffic(gw, secret) {
  const client = new OpenAI({ apiKey: secret, baseURL: gw.url + '/v1', maxRetries: 0 });
  const done = [];
  const failures = [];
  let stopping = false;
  let n = 0;
  async function one() {
    const i = n++;
    const content = 'tell me something '.repeat(1 + (i % 7));
    if (i % 3 === 0) {
      const { data: stream, response } = await client.chat.completions.create({
        model: 'mock?chunks=3', messages: [{ role: 'user', content }], stream: true,
        stream_options: { include_usage: true }, max_tokens: 16 + (i % 5),
      }).withResponse();
      let usage = null;
      for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
      return { id: response.headers.get('x-cairva-request-id'), usage };
    }
    const { data, response } = await client.chat.completions.create({
      model: 'mock', messages: [{ role: 'user', content }], max_tokens: 16 + (i % 5),
    }).withResponse();
    return { id: response.headers.get('x-cairva-request-id'), usage: data.usage };
  }
  const workers = Array.from({ length: WORKERS }, async () => {
    while (!stopping) {
      try {
        done.push(await one());
      } catch (e) {
        failures.push(e);
      }
    }
  });
  return {
    done,
    failures,
    async stop() {
      stopping = true;
      await Promise.all(workers);
    },
  };
}

async function waitForBookings(traffic, count) {
  while (traffic.done.length < count && traffic.failures.length === 0) {
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.deepEqual(traffic.failures.map(String), [], 'traffic before the backup');
}

async function allEvents(gw, allocationId) {
  const events = [];
  let after = '';
  for (;;) {
    const page = await gw.admin('GET', `/admin/v1/events?allocation_id=${allocationId}&limit=1000${after ? `&after=${after}` : ''}`);
    assert.equal(page.status, 200, page.text);
    if (page.body.data.length === 0) return events;
    events.push(...page.body.data);
    after = page.body.data.at(-1).id;
  }
}

// Every request of `before` has exactly one event in `events`, with the counts its client saw.
function assertBookedAsSeen(before, events, where) {
  const byRequest = new Map(events.map((e) => [e.request_id, e]));
  for (const r of before) {
    const e = byRequest.get(r.id);
    assert.ok(e, `${where}: request ${r.id}, booked before the backup, has no event`);
    assert.equal(e.input_tokens, r.usage.prompt_tokens, `${where}: ${r.id} input`);
    assert.equal(e.output_tokens, r.usage.completion_tokens, `${where}: ${r.id} output`);
  }
}

test('embedded store: a backup taken under load restores into a fresh gateway, audit-clean, with every earlier booking', async () => {
  const mock = await startMock(['--threads', '2']);
  const live = await startGateway(mock);
  let restored;
  try {
    const { allocation, secret } = await createAgreement(live);
    const traffic = startTraffic(live, secret);
    await waitForBookings(traffic, BOOKED_BEFORE_BACKUP);
    // Everything that finished so far was booked before the backup began.
    const before = traffic.done.slice();
    const target = join(live.dir, 'backups', 'cairva-backup.db');
    mkdirSync(join(live.dir, 'backups'));
    const backup = await cairvaAsync(['backup', '--to', target, '--admin-url', live.adminUrl, '--json']);
    const doneDuringBackup = traffic.done.length - before.length;
    await traffic.stop();
    assert.equal(backup.code, 0, backup.out);
    assert.deepEqual(traffic.failures.map(String), [], 'traffic during the backup');
    const report = JSON.parse(backup.out).backup;
    assert.equal(report.path, target);
    assert.equal(statSync(target).mode & 0o777, 0o600, 'the copy is private');
    assert.deepEqual(readdirSync(join(live.dir, 'backups')), ['cairva-backup.db'], 'one file, nothing beside it');
    assert.ok(report.usage_events >= before.length, JSON.stringify(report));

    // The copy stands alone and is sound before it is put anywhere.
    const audit = cairva(['audit', '--store', `sqlite://${target}`]);
    assert.equal(audit.code, 0, audit.out);
    assert.match(audit.out, /ok: no violation/);
    assert.ok(audit.out.includes(`${report.requests} requests, ${report.usage_events} usage events`), audit.out);

    // The live gateway's own ledger: the same events for those requests.
    const liveEvents = await allEvents(live, allocation.id);
    assertBookedAsSeen(before, liveEvents, 'live');
    await live.stop();

    // Restore: a fresh gateway whose store file is the copy (docs/operations.md).
    const restoredDir = join(live.dir, 'restored');
    mkdirSync(restoredDir);
    copyFileSync(target, join(restoredDir, 'cairva.db'));
    restored = await startGateway(mock, { dir: restoredDir });
    const restoredEvents = await allEvents(restored, allocation.id);
    assert.equal(restoredEvents.length, report.usage_events);
    assertBookedAsSeen(before, restoredEvents, 'restored');
    const liveById = new Map(liveEvents.map((e) => [e.id, e]));
    for (const e of restoredEvents) assert.deepEqual(e, liveById.get(e.id), 'an event of the copy is the live one');
    const status = await restored.admin('GET', `/admin/v1/allocations/${allocation.id}`);
    assert.equal(status.body.used.input_tokens, restoredEvents.reduce((s, e) => s + e.input_tokens, 0));
    assert.equal(status.body.used.output_tokens, restoredEvents.reduce((s, e) => s + e.output_tokens, 0));
    // Requests in flight at the copy's moment wait for reconciliation there, as after a
    // restart; none is in flight.
    const inFlight = await restored.admin('GET', `/admin/v1/requests?allocation_id=${allocation.id}&state=in_flight`);
    assert.deepEqual(inFlight.body.data, []);
    const pending = await restored.admin('GET', `/admin/v1/requests?allocation_id=${allocation.id}&state=usage_pending&limit=1000`);
    assert.equal(pending.body.data.length, report.requests - report.usage_events);
    for (const r of pending.body.data) assert.ok(!before.some((b) => b.id === r.id), `${r.id} was booked before the backup`);

    // The restored gateway serves and books.
    const client = new OpenAI({ apiKey: secret, baseURL: restored.url + '/v1', maxRetries: 0 });
    const after = await client.chat.completions.create({ model: 'mock', messages: [{ role: 'user', content: 'again' }] });
    assert.ok(after.usage.prompt_tokens > 0);
    const restoredAudit = cairva(['audit', '--store', restored.store]);
    assert.equal(restoredAudit.code, 0, restoredAudit.out);
    assert.match(restoredAudit.out, /ok: no violation/);
    console.log(`backup: ${before.length} booked before, ${doneDuringBackup} answered during the call, `
      + `copy of ${report.requests} requests / ${report.usage_events} events (${pending.body.data.length} in flight then), `
      + `${report.bytes} bytes`);
  } finally {
    await live.stop();
    await restored?.stop();
    mock.child.kill();
    live.cleanup();
  }
});

test('embedded store: backup refuses to replace a file and says so', async () => {
  const mock = await startMock();
  const gw = await startGateway(mock);
  try {
    const target = join(gw.dir, 'copy.db');
    assert.equal(cairva(['backup', '--to', target, '--admin-url', gw.adminUrl]).code, 0);
    const again = cairva(['backup', '--to', target, '--admin-url', gw.adminUrl]);
    assert.equal(again.code, 1);
    assert.match(again.out, /409 conflict: backup: .*copy\.db exists; a backup never replaces a file/);
    const missing = cairva(['backup', '--to', join(gw.dir, 'no', 'such', 'dir.db'), '--admin-url', gw.adminUrl]);
    assert.equal(missing.code, 1);
    assert.match(missing.out, /400 invalid_request: backup: directory .* does not exist/);
    assert.ok(!existsSync(join(gw.dir, 'no')));
  } finally {
    await gw.stop();
    mock.child.kill();
    gw.cleanup();
  }
});

const PG_URL = process.env.CAIRVA_TEST_PG_URL;

test('PostgreSQL: pg_dump of a database with traffic booked, pg_restore into a new one: audit clean, same totals', async () => {
  assert.ok(PG_URL, 'CAIRVA_TEST_PG_URL is not set: this test needs a PostgreSQL server '
    + '(run it through scripts/test.sh, or export CAIRVA_TEST_PG_URL=postgresql://user@host:port/db)');
  const suffix = `${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const source = `cairva_dump_${suffix}`;
  const target = `cairva_restore_${suffix}`;
  psql(PG_URL, `CREATE DATABASE ${source}`);
  psql(PG_URL, `CREATE DATABASE ${target}`);
  const sourceUrl = databaseUrl(PG_URL, source);
  const targetUrl = databaseUrl(PG_URL, target);
  const mock = await startMock(['--threads', '2']);
  const gw = await startGateway(mock, { store: sourceUrl });
  let restored;
  try {
    const { allocation, secret } = await createAgreement(gw);
    const traffic = startTraffic(gw, secret);
    await waitForBookings(traffic, BOOKED_BEFORE_BACKUP / 2);
    await traffic.stop();
    assert.deepEqual(traffic.failures.map(String), []);
    // A request left for reconciliation, and its reconciliation: both sources of events.
    const pending = await new OpenAI({ apiKey: secret, baseURL: gw.url + '/v1', maxRetries: 0 })
      .chat.completions.create({ model: 'mock?no-usage', messages: [{ role: 'user', content: 'x' }] }).withResponse();
    const pendingId = pending.response.headers.get('x-cairva-request-id');
    const rec = await gw.admin('POST', `/admin/v1/requests/${pendingId}/reconcile`, { input_tokens: 5, output_tokens: 9, evidence: 'export' });
    assert.equal(rec.status, 200, rec.text);

    // As docs/operations.md says: custom format, taken while the gateway serves.
    const dumpFile = join(gw.dir, 'cairva.dump');
    execFileSync('pg_dump', ['--format=custom', '--file', dumpFile, sourceUrl], { stdio: 'pipe' });
    execFileSync('pg_restore', ['--exit-on-error', '--no-owner', '--dbname', targetUrl, dumpFile], { stdio: 'pipe' });

    const sourceAudit = cairva(['audit', '--store', sourceUrl]);
    const restoredAudit = cairva(['audit', '--store', targetUrl]);
    assert.equal(restoredAudit.code, 0, restoredAudit.out);
    assert.match(restoredAudit.out, /ok: no violation/);
    assert.equal(restoredAudit.out, sourceAudit.out, 'the same allocations, requests and events');
    const totals = (url) => psql(url, 'SELECT COUNT(*), SUM(input_tokens), SUM(output_tokens) FROM usage_events');
    assert.equal(totals(targetUrl), totals(sourceUrl));
    assert.equal(Number(totals(targetUrl).split('|')[0]), traffic.done.length + 1);

    // A gateway on the restored database serves the same ledger, with every booking as seen.
    restored = await startGateway(mock, { store: targetUrl });
    const restoredEvents = await allEvents(restored, allocation.id);
    assertBookedAsSeen(traffic.done, restoredEvents, 'restored');
    assert.deepEqual(restoredEvents, await allEvents(gw, allocation.id));
    const a = await gw.admin('GET', `/admin/v1/allocations/${allocation.id}`);
    const b = await restored.admin('GET', `/admin/v1/allocations/${allocation.id}`);
    assert.deepEqual(b.body.used, a.body.used);
    assert.deepEqual(b.body.held, a.body.held);
    console.log(`pg_dump: ${sourceAudit.out.split('\n')[0]}`);
  } finally {
    await gw.stop();
    await restored?.stop();
    mock.child.kill();
    gw.cleanup();
    psql(PG_URL, `DROP DATABASE IF EXISTS ${source} WITH (FORCE)`);
    psql(PG_URL, `DROP DATABASE IF EXISTS ${target} WITH (FORCE)`);
  }
});
