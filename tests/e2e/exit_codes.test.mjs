// `cairva serve`'s exit codes, as the systemd unit relies on them (packaging/cairva.service,
// docs/operations.md "Deploy with systemd"): 0 after SIGTERM or SIGINT, 2 for a bad config
// file or command line or a store that needs an earlier build first (RestartPreventExitStatus:
// no restart mends it), 1 for a runtime error (Restart=on-failure tries again).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, startMock, startGateway, stopProcess } from './harness.mjs';

// Runs `cairva args...` to its end; resolves { code, signal, err }.
function runToEnd(args, env = {}) {
  return new Promise((resolve) => {
    const child = spawn(BIN, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => { err += d; });
    child.on('exit', (code, signal) => resolve({ code, signal, err }));
  });
}

test('a bad config file or command line exits 2 with one line', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cairva-exit-'));
  try {
    const path = join(dir, 'cairva.toml');
    writeFileSync(path, '[server]\nlisten = 8080\n');
    for (const args of [
      ['serve', '--config', path],
      ['serve', '--config', join(dir, 'missing.toml')],
      ['serve', '--listen', 'nowhere'],
      ['serve', '--no-such-flag'],
      ['no-such-command'],
    ]) {
      const r = await runToEnd(args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.err}`);
      assert.ok(r.err.trim().length > 0, args.join(' '));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a runtime error exits 1: the store held by another gateway, the admin port taken', async () => {
  const mock = await startMock();
  const gw = await startGateway(mock);
  try {
    const inUse = await runToEnd(['serve', '--config', gw.configPath, '--listen', '127.0.0.1:0', '--admin-listen', '127.0.0.1:0'],
      { CAIRVA_TEST_PROVIDER_KEY: 'k' });
    assert.equal(inUse.code, 1, inUse.err);
    assert.match(inUse.err, /in use by another cairva process/);
    // (The public port is shared by design, SO_REUSEPORT; the admin port is not.)
    const portTaken = await runToEnd(['serve', '--store', `sqlite://${join(gw.dir, 'other.db')}`,
      '--listen', '127.0.0.1:0', '--admin-listen', `127.0.0.1:${gw.adminPort}`]);
    assert.equal(portTaken.code, 1, portTaken.err);
  } finally {
    await gw.stop();
    mock.child.kill();
    gw.cleanup();
  }
});

// An embedded store whose operation log an earlier build wrote (one SQLite file, cairva.db-oplog)
// holding writes the tables lack: the gateway names the build to start once, changes nothing,
// and exits 2, since a restart of this build cannot mend it.
test('an earlier build\'s unapplied operation log exits 2 and is left as it was', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cairva-exit-'));
  try {
    const log = join(dir, 'cairva.db-oplog');
    execFileSync('sqlite3', [log, 'CREATE TABLE records (seq INTEGER PRIMARY KEY, kind INTEGER NOT NULL,' +
      ' t0 TEXT NOT NULL, t1 TEXT NOT NULL, t2 TEXT NOT NULL, t3 TEXT NOT NULL, t4 TEXT NOT NULL, t5 TEXT NOT NULL,' +
      ' t6 TEXT NOT NULL, n0 INTEGER NOT NULL, n1 INTEGER NOT NULL, n2 INTEGER NOT NULL, n3 INTEGER NOT NULL,' +
      " n4 INTEGER NOT NULL); INSERT INTO records VALUES (1, 1, 'req_1', 'alloc_1', '', '', '', '', '', 0, 0, 0, 0, 0);"]);
    const before = readFileSync(log);
    const r = await runToEnd(['serve', '--store', `sqlite://${join(dir, 'cairva.db')}`,
      '--listen', '127.0.0.1:0', '--admin-listen', '127.0.0.1:0']);
    assert.equal(r.code, 2, r.err);
    assert.match(r.err, /cairva\.db-oplog is the operation log of an earlier build, holding 1 write .*Start cairva 0\.1\.0 \(commit [0-9a-f]{12}\)/);
    assert.deepEqual(readFileSync(log), before, 'the log is unchanged');
    assert.equal(existsSync(join(dir, 'cairva.db')), false, 'no database was created');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('SIGTERM and SIGINT end the gateway with 0', async () => {
  const mock = await startMock();
  try {
    for (const signal of ['SIGTERM', 'SIGINT']) {
      const gw = await startGateway(mock);
      // An answer from an event loop: those start once the signal handler is in place.
      assert.equal((await fetch(gw.url + '/healthz')).status, 200);
      const exited = new Promise((resolve) => gw.child.once('exit', (code, sig) => resolve({ code, sig })));
      await stopProcess(gw.child, signal);
      assert.deepEqual(await exited, { code: 0, sig: null }, signal);
      gw.cleanup();
    }
  } finally {
    mock.child.kill();
  }
});
