// Secrets at rest and in logs (issue 7): after real traffic — completions, streams,
// refused keys, refused admin tokens, key creation and revocation — neither the SQLite
// files nor the gateway's stdout/stderr contain a buyer key, the supplier's provider key
// or the admin token. Also the keys' shape and the admin API's refusal of a wrong token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import http from 'node:http';
import {
  startMock, startGateway, createAgreement, chat, adminCall, ADMIN_TOKEN, PROVIDER_KEY,
} from './harness.mjs';

test('no secret appears in the database files or the gateway output after traffic', async () => {
  const mock = await startMock();
  const gw = await startGateway(mock);
  const secrets = [ADMIN_TOKEN, PROVIDER_KEY];
  try {
    const a = await createAgreement(gw);
    secrets.push(a.secret);
    assert.match(a.secret, /^cv_[A-Za-z0-9]{43}$/, 'a recognisable prefix and high entropy');
    const k = await gw.admin('POST', `/admin/v1/allocations/${a.allocation.id}/keys`);
    assert.equal(k.status, 201);
    secrets.push(k.body.api_key.secret);
    for (const secret of [a.secret, k.body.api_key.secret]) {
      assert.equal((await chat(gw, secret, { model: 'mock', messages: [{ role: 'user', content: 'hi' }] })).status, 200);
      const s = await chat(gw, secret, { model: 'mock', stream: true, messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(s.status, 200);
      assert.equal((await chat(gw, secret, { model: 'mock?status=500', messages: [{ role: 'user', content: 'x' }] })).status, 500);
      assert.equal((await chat(gw, secret, '{not json')).status, 400);
    }
    const revoked = await gw.admin('DELETE', `/admin/v1/keys/${k.body.api_key.id}`);
    assert.equal(revoked.status, 200);
    const refused = await chat(gw, k.body.api_key.secret, { model: 'mock', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(refused.status, 401);
    assert.ok(!refused.text.includes(k.body.api_key.secret), 'the refusal does not echo the key');
    // A guessed key and a wrong admin token: refused, and not echoed or logged either.
    const guessed = 'cv_guessed' + 'x'.repeat(40);
    secrets.push(guessed);
    assert.equal((await chat(gw, guessed, { model: 'mock', messages: [] })).status, 401);
    const wrongToken = ADMIN_TOKEN + '-wrong';
    secrets.push(wrongToken);
    const wrong = await adminCall(gw.adminUrl, 'GET', '/admin/v1/allocations', undefined, wrongToken);
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body.error.code, 'invalid_admin_token');
    assert.ok(!wrong.text.includes(wrongToken));
    // Metrics and listings carry no secret either.
    for (const path of ['/metrics', '/admin/v1/allocations', `/admin/v1/requests?allocation_id=${a.allocation.id}`,
      `/admin/v1/events?allocation_id=${a.allocation.id}`]) {
      const r = await gw.admin('GET', path);
      for (const s of secrets) assert.ok(!r.text.includes(s), `${path} leaks a secret`);
    }
  } finally {
    await gw.stop();
    mock.child.kill();
  }
  // After a clean stop and while the WAL may still hold pages: every file of the store.
  const files = readdirSync(gw.dir).filter((f) => f.startsWith('cairva.db'));
  assert.ok(files.includes('cairva.db'));
  const dumps = files.map((f) => [f, readFileSync(join(gw.dir, f)).toString('latin1')]);
  dumps.push(['gateway stdout/stderr', gw.child.output()]);
  for (const [name, text] of dumps) {
    for (const s of secrets) assert.ok(!text.includes(s), `${name} contains a secret (${s.slice(0, 6)}…)`);
  }
  // The hashes are there: the dump really saw the keys table.
  const stored = dumps.map(([, text]) => text).join('');
  for (const s of secrets.slice(2, 4)) {
    assert.ok(stored.includes(createHash('sha256').update(s).digest('hex')), 'the dump holds each key\'s hash');
  }
  gw.cleanup();
});

// The gateway reuses a key's hash while a connection keeps sending the same key: on one
// keep-alive connection, another key is still its own allocation's and a revoked key is
// refused at once.
test('on one keep-alive connection, each request is authenticated by its own key', async () => {
  const mock = await startMock();
  const gw = await startGateway(mock);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const send = (secret) => new Promise((resolve, reject) => {
    const req = http.request(gw.url + '/v1/chat/completions', {
      method: 'POST', agent,
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, limit: res.headers['x-ratelimit-limit-requests'], reused: req.reusedSocket }));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ model: 'mock', messages: [{ role: 'user', content: 'hi' }] }));
  });
  try {
    const a = await createAgreement(gw, { requests_per_minute: 1111 });
    const b = await createAgreement(gw, { requests_per_minute: 2222 });
    const ka = await gw.admin('POST', `/admin/v1/allocations/${a.allocation.id}/keys`);
    assert.equal(ka.status, 201);
    const first = await send(ka.body.api_key.secret);
    assert.deepEqual([first.status, first.limit], [200, '1111']);
    const other = await send(b.secret);
    assert.deepEqual([other.status, other.limit, other.reused], [200, '2222', true]);
    const again = await send(ka.body.api_key.secret);
    assert.deepEqual([again.status, again.limit, again.reused], [200, '1111', true]);
    assert.equal((await gw.admin('DELETE', `/admin/v1/keys/${ka.body.api_key.id}`)).status, 200);
    const refused = await send(ka.body.api_key.secret);
    assert.deepEqual([refused.status, refused.reused], [401, true]);
  } finally {
    agent.destroy();
    await gw.stop();
    mock.child.kill();
  }
});
