// The access log (docs/operations.md "Logs"): lines appear while the gateway runs (no
// SIGTERM needed), a kill -9 loses none already written out, JSON lines parse and carry
// every field, no secret is ever in a line, SIGHUP after a rename makes a new file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { startMock, startGateway, createAgreement, chat, eventually, PROVIDER_KEY } from './harness.mjs';

const read = (path) => (existsSync(path) ? readFileSync(path, 'utf8') : '');
const lines = (text) => text.split('\n').filter((l) => l.length > 0);

test('text lines reach the file while the gateway runs and survive kill -9', async () => {
  const mock = await startMock();
  let gw = await startGateway(mock, { serverToml: 'access_log_path = "access.log"' });
  const path = join(gw.dir, 'access.log');
  try {
    const { allocation, secret } = await createAgreement(gw);
    const ids = [];
    for (let i = 0; i < 20; i++) {
      const r = await chat(gw, secret, { model: 'mock?id=chatcmpl-log-' + i, messages: [{ role: 'user', content: 'x' }] });
      assert.equal(r.status, 200);
      ids.push(r.headers.get('x-cairva-request-id'));
    }
    const health = await fetch(gw.url + '/healthz?token=' + secret);
    assert.equal(health.status, 200);
    // Every answered request's line is written out while the process runs.
    assert.ok(await eventually(() => ids.every((id) => read(path).includes(`request_id=${id} `))), read(path));
    await gw.stop('SIGKILL');
    const text = read(path);
    for (const [i, id] of ids.entries()) {
      const line = lines(text).find((l) => l.includes(`request_id=${id} `));
      assert.ok(line, `line for ${id}`);
      assert.match(line, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z client=127\.0\.0\.1 method=POST path=\/v1\/chat\/completions status=200 /);
      assert.match(line, new RegExp(`allocation_id=${allocation.id} `));
      assert.match(line, new RegExp(`provider_request_id=chatcmpl-log-${i} `));
      assert.match(line, / model="mock\?id=chatcmpl-log-\d+" input_tokens=\d+ output_tokens=\d+ outcome=booked latency_ms=\d+\.\d{3}$/);
    }
    const healthLine = lines(text).find((l) => l.includes('path=/healthz '));
    assert.ok(healthLine, 'the health check has its line');
    assert.ok(!text.includes(secret), 'no API key (nor a query string) in the log');
    assert.ok(!text.includes(PROVIDER_KEY));
  } finally {
    await gw.stop();
    mock.child.kill();
    gw.cleanup();
  }
});

test('JSON lines parse and carry every field; a refusal has its error code and no tokens', async () => {
  const mock = await startMock();
  const gw = await startGateway(mock, { serverToml: 'access_log_format = "json"\naccess_log_path = "access.jsonl"' });
  const path = join(gw.dir, 'access.jsonl');
  try {
    const { allocation, secret } = await createAgreement(gw, { models: ['mock'] });
    const ok = await chat(gw, secret, { model: 'mock', messages: [{ role: 'user', content: 'x' }] });
    assert.equal(ok.status, 200);
    const refused = await chat(gw, secret, { model: 'other\n"model"', messages: [{ role: 'user', content: 'x' }] });
    assert.equal(refused.status, 400);
    const okId = ok.headers.get('x-cairva-request-id');
    const refusedId = refused.headers.get('x-cairva-request-id');
    const parsed = await eventually(() => {
      const all = lines(read(path)).map((l) => JSON.parse(l));
      const a = all.find((o) => o.request_id === okId);
      const b = all.find((o) => o.request_id === refusedId);
      return a && b ? { a, b } : undefined;
    });
    assert.ok(parsed, read(path));
    const { a, b } = parsed;
    assert.deepEqual(Object.keys(a), ['time', 'client', 'method', 'path', 'status', 'allocation_id', 'request_id',
      'provider_request_id', 'model', 'input_tokens', 'output_tokens', 'outcome', 'latency_ms']);
    assert.match(a.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(a.client, '127.0.0.1');
    assert.equal(a.method, 'POST');
    assert.equal(a.path, '/v1/chat/completions');
    assert.equal(a.status, 200);
    assert.equal(a.allocation_id, allocation.id);
    assert.equal(a.provider_request_id, ok.body.id);
    assert.equal(a.model, 'mock');
    assert.equal(a.input_tokens, ok.body.usage.prompt_tokens);
    assert.equal(a.output_tokens, ok.body.usage.completion_tokens);
    assert.equal(a.outcome, 'booked');
    assert.equal(typeof a.latency_ms, 'number');
    assert.equal(b.status, 400);
    assert.equal(b.outcome, 'model_not_allowed');
    assert.equal(b.model, 'other\n"model"', 'escaped in the line, the same once parsed');
    assert.equal(b.provider_request_id, null);
    assert.equal(b.input_tokens, 0);
  } finally {
    await gw.stop();
    mock.child.kill();
    gw.cleanup();
  }
});

test('SIGHUP after the file was renamed makes a new file (logrotate)', async () => {
  const mock = await startMock();
  const gw = await startGateway(mock, { serverToml: 'access_log_path = "access.log"' });
  const path = join(gw.dir, 'access.log');
  try {
    const { secret } = await createAgreement(gw);
    const before = await chat(gw, secret, { model: 'mock', messages: [{ role: 'user', content: 'x' }] });
    const beforeId = before.headers.get('x-cairva-request-id');
    assert.ok(await eventually(() => read(path).includes(beforeId)));
    renameSync(path, path + '.1');
    gw.child.kill('SIGHUP');
    assert.ok(await eventually(() => /access log .* reopened/.test(gw.child.output())), gw.child.output());
    const after = await chat(gw, secret, { model: 'mock', messages: [{ role: 'user', content: 'x' }] });
    const afterId = after.headers.get('x-cairva-request-id');
    assert.ok(await eventually(() => read(path).includes(afterId)), 'the new file has the new line');
    assert.ok(read(path + '.1').includes(beforeId));
    assert.ok(!read(path + '.1').includes(afterId), 'the rotated file has no later line');
    assert.equal(gw.child.exitCode, null, 'SIGHUP does not end the process');
  } finally {
    await gw.stop();
    mock.child.kill();
    gw.cleanup();
  }
});

test('by default lines go to stdout as each request ends', async () => {
  const mock = await startMock();
  const gw = await startGateway(mock);
  try {
    const { secret } = await createAgreement(gw);
    const r = await chat(gw, secret, { model: 'mock', messages: [{ role: 'user', content: 'x' }] });
    const id = r.headers.get('x-cairva-request-id');
    assert.ok(await eventually(() => gw.child.output().includes(`request_id=${id} `)), gw.child.output());
  } finally {
    await gw.stop();
    mock.child.kill();
    gw.cleanup();
  }
});
