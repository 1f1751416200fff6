// The operator's command line against a running gateway (SPEC §8): each admin command is a
// thin client of the admin API; bad config exits non-zero with one clear line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import net from 'node:net';
import { promisify } from 'node:util';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gatewayForFile, chat, createAgreement, BIN, ADMIN_TOKEN } from './harness.mjs';

const run = promisify(execFile);
let mock, gw;
gatewayForFile({}, async (m, g) => {
  mock = m;
  gw = g;
});

async function cairva(args, env = {}) {
  try {
    const r = await run(BIN, args, { env: { ...process.env, CAIRVA_ADMIN_URL: gw.adminUrl, CAIRVA_ADMIN_TOKEN: ADMIN_TOKEN, ...env } });
    return { code: 0, out: r.stdout, err: r.stderr };
  } catch (e) {
    return { code: e.code, out: e.stdout, err: e.stderr };
  }
}

test('agreement create, allocation show/list, key create/revoke, requests pending, reconcile', async () => {
  const created = await cairva(['agreement', 'create', '--supplier', 'acme', '--buyer', 'bob', '--provider', 'mock',
    '--input-tokens', '5000', '--output-tokens', '3000', '--duration', '1h', '--rpm', '60', '--tpm', '100000', '--concurrency', '4', '--json']);
  assert.equal(created.code, 0, created.err);
  const body = JSON.parse(created.out);
  const allocId = body.allocation.id;
  const secret = body.api_key.secret;
  assert.match(secret, /^cv_/);

  const table = await cairva(['allocation', 'show', allocId]);
  assert.equal(table.code, 0, table.err);
  assert.match(table.out, new RegExp(allocId));
  assert.ok(!table.out.includes(secret));
  const list = await cairva(['allocation', 'list', '--json']);
  assert.ok(JSON.parse(list.out).data.some((a) => a.id === allocId));

  const key = await cairva(['key', 'create', allocId, '--json']);
  assert.equal(key.code, 0, key.err);
  const second = JSON.parse(key.out).api_key;
  assert.equal((await chat(gw, second.secret, { model: 'm', messages: [{ role: 'user', content: 'x' }] })).status, 200);
  assert.equal((await cairva(['key', 'revoke', second.id])).code, 0);
  assert.equal((await chat(gw, second.secret, { model: 'm', messages: [{ role: 'user', content: 'x' }] })).status, 401);

  const r = await chat(gw, secret, { model: 'mock?no-usage', messages: [{ role: 'user', content: 'x' }], max_tokens: 20 });
  const reqId = r.headers.get('x-cairva-request-id');
  const pending = await cairva(['requests', 'pending', '--allocation', allocId, '--json']);
  assert.deepEqual(JSON.parse(pending.out).data.map((q) => q.id), [reqId]);
  const rec = await cairva(['reconcile', reqId, '--input', '11', '--output', '13', '--evidence', 'provider usage export', '--json']);
  assert.equal(rec.code, 0, rec.err);
  assert.equal(JSON.parse(rec.out).event.source, 'reconciliation');
  const again = await cairva(['reconcile', reqId, '--input', '1', '--output', '1', '--evidence', 'x']);
  assert.notEqual(again.code, 0);
  assert.match(again.err + again.out, /not_pending|not usage_pending/);
});

test('a wrong admin token is reported with the API error and a non-zero exit', async () => {
  const r = await cairva(['allocation', 'list'], { CAIRVA_ADMIN_TOKEN: 'wrong' });
  assert.notEqual(r.code, 0);
  assert.match(r.err + r.out, /invalid_admin_token/);
});

test('bad config exits non-zero with one line naming file, key and problem', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cairva-cfg-'));
  try {
    const cases = [
      ['[server]\nlisten = 8080\n', /cairva\.toml: server\.listen: expected a string/],
      ['[store]\nsync = "sometimes"\n', /cairva\.toml: store\.sync/],
      ['[holds]\nsurprise = 1\n', /cairva\.toml: holds\.surprise: unknown key/],
      ['[[providers]]\nname = "p"\nbase_url = "https://x.test/v1"\napi_key_env = "CAIRVA_SURELY_UNSET_VAR"\n', /CAIRVA_SURELY_UNSET_VAR/],
    ];
    for (const [text, pattern] of cases) {
      const path = join(dir, 'cairva.toml');
      writeFileSync(path, text);
      const r = await cairva(['serve', '--config', path]);
      assert.notEqual(r.code, 0, text);
      assert.match(r.err, pattern, text);
      assert.equal(r.err.trim().split('\n').length, 1, `one line: ${r.err}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an admin URL that is neither http:// nor https:// is refused with a clear line, nothing sent', async () => {
  for (const url of ['ftp://127.0.0.1:1', '127.0.0.1:8081', 'http://']) {
    const r = await cairva(['allocation', 'list', '--admin-url', url]);
    assert.notEqual(r.code, 0, url);
    assert.match(r.err, /admin URL must look like http:\/\/HOST:PORT or https:\/\/HOST:PORT/, url);
  }
});

test('an admin API that accepts but never answers: the command stops at --admin-timeout with a clear line', async () => {
  const sockets = [];
  const silent = net.createServer((s) => sockets.push(s));  // reads nothing, answers nothing
  await new Promise((r) => silent.listen(0, '127.0.0.1', r));
  const port = silent.address().port;
  try {
    const plain = await cairva(['allocation', 'list', '--admin-url', `http://127.0.0.1:${port}`, '--admin-timeout', '1']);
    assert.notEqual(plain.code, 0);
    assert.match(plain.err, /no valid answer: no answer within 1 s/);
    const tls = await cairva(['allocation', 'list', '--admin-url', `https://127.0.0.1:${port}`, '--admin-timeout', '1']);
    assert.notEqual(tls.code, 0);
    assert.match(tls.err, /TLS handshake failed: no answer within 1 s/);
    const bad = await cairva(['allocation', 'list', '--admin-timeout', '0']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.err, /--admin-timeout/);
  } finally {
    for (const s of sockets) s.destroy();
    silent.close();
  }
});

test('--version prints the version, the commit and both schema versions, and exits 0', async () => {
  const r = await cairva(['--version']);
  assert.equal(r.code, 0, r.err);
  const [first, second] = r.out.trim().split('\n');
  assert.match(first, /^cairva \d+\.\d+\.\d+ \(commit ([0-9a-f]{12}(-dirty)?|unknown)\)$/);
  assert.match(second, /^schema: sqlite [1-9]\d*, postgresql [1-9]\d*$/);
});

// Regression: a model name with terminal escapes, stored with its request, erased its row of
// `cairva requests list` on the operator's terminal (issue 25, item 15).
test('stored fields with terminal controls are printed escaped in tables and --json', async () => {
  const { allocation, secret } = await createAgreement(gw);
  const model = 'evil\u001b[2K\r\u009b31mforged\nrow';
  // The request is stored whatever the mock makes of that model (it echoes it back raw, which
  // the gateway refuses as a malformed response): only the stored row matters here.
  const r = await chat(gw, secret, { model, messages: [{ role: 'user', content: 'x' }], max_tokens: 5 });
  const reqId = r.headers.get('x-cairva-request-id');
  assert.ok(reqId, `no request id: ${r.status} ${r.text}`);
  const table = await cairva(['requests', 'list', '--allocation', allocation.id]);
  assert.equal(table.code, 0, table.err);
  assert.ok(!/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/.test(table.out), JSON.stringify(table.out));
  const rows = table.out.trimEnd().split('\n');
  assert.equal(rows.length, 2, table.out);  // the header and one row: nothing forged
  assert.ok(rows[1].startsWith(reqId), table.out);
  assert.ok(rows[1].includes('evil\\x1b[2K\\x0d\\u009b31mforged\\x0arow'), table.out);
  const json = await cairva(['requests', 'list', '--allocation', allocation.id, '--json']);
  assert.equal(json.code, 0, json.err);
  assert.ok(!/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/.test(json.out), JSON.stringify(json.out));
  assert.equal(JSON.parse(json.out).data[0].model, model);  // the same value, escaped
});
