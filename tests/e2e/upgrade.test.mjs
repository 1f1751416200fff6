// Versions and upgrades (issue 28, item 3; docs/operations.md "Upgrade and roll back"):
//  - a store whose schema a newer cairva migrated is refused by this one, serve and audit
//    alike, with a clear message and exit 1, and left exactly as it was (the embedded file
//    byte for byte, the PostgreSQL database dump for dump);
//  - a rolling restart of three gateways on one PostgreSQL database, one at a time, each
//    taken out of the clients' rotation and drained (SIGTERM) with requests in flight, while
//    clients keep sending: no request fails, the ledger is exact.
// The PostgreSQL tests need CAIRVA_TEST_PG_URL (exported by scripts/test.sh).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { BIN, ADMIN_TOKEN, startMock, startGateway, createAgreement, mockStats, psql, databaseUrl } from './harness.mjs';

const PG_URL = process.env.CAIRVA_TEST_PG_URL;

// `cairva args...` to its end: { code, out, err }.
function run(args, env = {}) {
  return new Promise((resolve) => {
    const child = spawn(BIN, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    child.on('exit', (code) => resolve({ code, out, err }));
  });
}

function schemaVersions() {
  const v = execFileSync(BIN, ['--version'], { encoding: 'utf8' });
  const m = /schema: sqlite (\d+), postgresql (\d+)/.exec(v);
  assert.ok(m, v);
  return { sqlite: Number(m[1]), postgresql: Number(m[2]) };
}

function newDatabase(prefix) {
  const name = `${prefix}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  psql(PG_URL, `CREATE DATABASE ${name}`);
  return { name, url: databaseUrl(PG_URL, name), drop: () => psql(PG_URL, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

// Every file of the embedded store (the database, its log segments), by name.
function storeFiles(dir) {
  const files = {};
  for (const name of readdirSync(dir).filter((n) => n.startsWith('cairva.db') && !n.endsWith('.lock')).sort()) {
    files[name] = readFileSync(join(dir, name)).toString('base64');
  }
  return files;
}

test('an embedded store a newer cairva migrated is refused by serve and audit and left byte for byte', async () => {
  const { sqlite } = schemaVersions();
  const mock = await startMock();
  const gw = await startGateway(mock);
  try {
    await createAgreement(gw);
    await gw.stop();
    // What a newer cairva leaves: its schema version in the file's header.
    const db = join(gw.dir, 'cairva.db');
    execFileSync('sqlite3', [db, `PRAGMA user_version = ${sqlite + 1}`]);
    const before = storeFiles(gw.dir);
    assert.ok(before['cairva.db']);

    const served = await run(['serve', '--config', gw.configPath],
      { CAIRVA_ADMIN_TOKEN: ADMIN_TOKEN, CAIRVA_TEST_PROVIDER_KEY: 'k' });
    assert.equal(served.code, 1, served.err);
    assert.equal(served.err.trim().split('\n').at(-1),
      `cairva: store sqlite://${db}: store ${db}: sqlite: schema version ${sqlite + 1} is newer than this cairva knows`
      + ` (${sqlite}): a newer cairva migrated it; run that version or newer (nothing was changed)`);
    assert.deepEqual(storeFiles(gw.dir), before);

    const audited = await run(['audit', '--store', `sqlite://${db}`]);
    assert.equal(audited.code, 1, audited.err);
    assert.equal(audited.err.trim(),
      `cairva: audit: sqlite: ${db} has schema version ${sqlite + 1}, newer than this cairva audits (${sqlite}):`
      + ' run `cairva audit` of the version that migrated it (nothing was changed)');
    // A read-only open may leave SQLite's empty -wal/-shm beside the file; the database and
    // its operation log are untouched.
    const after = storeFiles(gw.dir);
    for (const name of Object.keys(before)) assert.equal(after[name], before[name], name);
  } finally {
    mock.child.kill();
    gw.cleanup();
  }
});

test('a PostgreSQL schema a newer cairva migrated is refused by serve and audit and left unchanged', { skip: !PG_URL && 'CAIRVA_TEST_PG_URL is not set' }, async () => {
  const { postgresql } = schemaVersions();
  const db = newDatabase('cairva_newer');
  const mock = await startMock();
  try {
    const gw = await startGateway(mock, { store: db.url });
    await createAgreement(gw);
    await gw.stop();
    gw.cleanup();
    // A newer cairva's migration that older gateways cannot use (as migration 2 was).
    const next = postgresql + 1;
    psql(db.url, `INSERT INTO schema_migrations (version) VALUES (${next});`
      + `INSERT INTO schema_compatibility VALUES (${next}, ${next})`);
    // (pg_dump's \restrict lines carry a random key of each run.)
    const dump = () => execFileSync('pg_dump', ['--no-owner', db.url], { encoding: 'utf8' })
      .split('\n').filter((l) => !/^\\(un)?restrict /.test(l)).join('\n');
    const before = dump();

    const served = await serveExpectingFailure(db.url);
    assert.equal(served.code, 1, served.err);
    assert.match(served.err, new RegExp(`postgres: the schema is at version ${next}, newer than this cairva's \\(${postgresql}\\), `
      + `and gateways older than schema version ${next} cannot use it: run a cairva of that version or newer \\(nothing was changed\\)`));
    const audited = await run(['audit', '--store', db.url]);
    assert.equal(audited.code, 1, audited.err);
    assert.equal(audited.err.trim(), `cairva: audit: postgres: the schema is at version ${next}, newer than this cairva audits`
      + ` (${postgresql}): run \`cairva audit\` of the version that migrated it (nothing was changed)`);
    assert.equal(dump(), before);
  } finally {
    mock.child.kill();
    db.drop();
  }
});

// `cairva serve` on a store it must refuse: { code, err }.
function serveExpectingFailure(store) {
  return run(['serve', '--store', store, '--listen', '127.0.0.1:0', '--admin-listen', '127.0.0.1:0'],
    { CAIRVA_ADMIN_TOKEN: ADMIN_TOKEN });
}

// One chat completion on a connection of its own (as through a load balancer that opens
// one per request): { status, text } or { refused: true } when nothing accepted the
// connection (the one case a balancer may retry elsewhere: the request reached no gateway).
function post(gw, secret, body, onFirstData = () => {}) {
  return new Promise((resolve) => {
    const req = http.request(gw.url + '/v1/chat/completions', {
      method: 'POST', agent: false,
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; onFirstData(); });
      res.on('end', () => resolve({ status: res.statusCode, text }));
      res.on('error', (e) => resolve({ status: res.statusCode, text, error: e.message }));
    });
    req.on('error', (e) => resolve(e.code === 'ECONNREFUSED' ? { refused: true } : { status: 0, error: e.message }));
    req.end(JSON.stringify(body));
  });
}

function exited(child) {
  return new Promise((res) => {
    if (child.exitCode !== null || child.signalCode !== null) res({ code: child.exitCode, signal: child.signalCode });
    else child.once('exit', (code, signal) => res({ code, signal }));
  });
}

test('a rolling restart of three gateways on PostgreSQL, one drained at a time, fails no request', { skip: !PG_URL && 'CAIRVA_TEST_PG_URL is not set' }, async () => {
  const db = newDatabase('cairva_rolling');
  const mock = await startMock(['--threads', '2']);
  const gws = [];
  let stop = false;
  try {
    for (let i = 0; i < 3; i++) gws.push(await startGateway(mock, { store: db.url }));
    const { allocation, secret } = await createAgreement(gws[0]);
    await fetch(mock.url + '/mock/reset', { method: 'POST' });

    const answered = [];
    const failures = [];
    let next = 0;
    // The gateway taken out of the rotation before its SIGTERM, as an operator takes it out
    // of the balancer (docs/operations.md, section 9): requests already sent to it finish.
    let outOfRotation = -1;
    // Each client sends one request after another, round-robin over the gateways in the
    // rotation, moving to the next gateway only when one refused the connection.
    const client = async (n) => {
      while (!stop) {
        let r;
        for (let tries = 0; tries < 3 * gws.length; tries++) {
          const at = next++ % gws.length;
          if (at === outOfRotation) continue;
          r = await post(gws[at], secret,
            { model: 'mock?delay-ms=20', messages: [{ role: 'user', content: `client ${n}` }] });
          if (!r.refused) break;
        }
        if (r.status === 200) answered.push(JSON.parse(r.text).id);
        else failures.push(r);
      }
    };
    const clients = Array.from({ length: 4 }, (_, n) => client(n));

    for (let i = 0; i < gws.length; i++) {
      // A stream held open at the provider while its gateway is told to stop: the drain lets
      // it end, and it is booked.
      let firstChunk;
      const started = new Promise((res) => { firstChunk = res; });
      const held = post(gws[i], secret, { model: `mock?hold=rolling-${i}&id=chatcmpl-rolling-${i}`, stream: true,
        stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'held' }] }, () => firstChunk());
      await Promise.race([started, held]);
      const old = gws[i];
      outOfRotation = i;
      old.child.kill('SIGTERM');
      await fetch(`${mock.url}/mock/release/rolling-${i}`, { method: 'POST' });
      const stream = await held;
      assert.equal(stream.status, 200, stream.text);
      assert.match(stream.text, /data: \[DONE\]/);
      const end = await exited(old.child);
      assert.deepEqual(end, { code: 0, signal: null }, old.child.output?.());
      // The new version takes its place (here the same build: what is checked is the drain
      // and the hand-over; schema compatibility is postgres_store_test's).
      gws[i] = await startGateway(mock, { store: db.url });
      outOfRotation = -1;
      old.cleanup();
    }
    stop = true;
    await Promise.all(clients);

    assert.deepEqual(failures, []);
    assert.ok(answered.length > 0);
    console.log(`rolling restart: ${answered.length} requests answered, none failed`);
    const stats = await mockStats(mock);
    assert.equal(stats.requests, answered.length + gws.length, 'every request the provider served was answered');
    const total = Number(psql(db.url, `SELECT count(*) FROM usage_events WHERE allocation_id = '${allocation.id}'`).trim());
    assert.equal(total, answered.length + gws.length, 'one event per answered request and held stream');
    const pending = Number(psql(db.url, "SELECT count(*) FROM requests WHERE state <> 'booked'").trim());
    assert.equal(pending, 0);
    const audit = await run(['audit', '--store', db.url]);
    assert.equal(audit.code, 0, audit.out + audit.err);
    assert.match(audit.out, /ok: no violation/);
  } finally {
    stop = true;
    for (const gw of gws) { await gw.stop(); gw.cleanup(); }
    mock.child.kill();
    db.drop();
  }
});
