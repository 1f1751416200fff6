// Graceful drain (SPEC §9; docs/operations.md "Draining and restarting"): SIGTERM stops
// accepting, /healthz answers 503 on connections still open, idle connections close,
// streams in flight run to their end and are booked under their provider id; what is still
// open at server.drain_timeout_s (or a second signal) is settled usage_pending under the
// provider id seen; kill -9 mid-stream keeps the id noted at the stream's first chunk.
// The mock's hold=NAME keeps a stream open after its first event until the test releases
// it: every "mid-stream" moment here is one the test observed, never a sleep.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { startMock, startGateway, createAgreement, chat, eventually } from './harness.mjs';

// Opens a streaming chat completion; `firstChunk` resolves with the first body bytes,
// `done` once the response ends (or is cut) with everything read.
function openStream(gw, secret, model) {
  const body = JSON.stringify({ model, stream: true, stream_options: { include_usage: true },
    messages: [{ role: 'user', content: 'drain' }] });
  let text = '';
  let firstChunk;
  const first = new Promise((res) => { firstChunk = res; });
  const done = new Promise((res) => {
    const req = http.request(gw.url + '/v1/chat/completions', {
      method: 'POST', agent: false,
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    }, (r) => {
      r.setEncoding('utf8');
      r.on('data', (d) => { text += d; firstChunk(text); });
      r.on('end', () => res({ status: r.statusCode, text, headers: r.headers, complete: true }));
      r.on('error', () => res({ status: r.statusCode, text, headers: r.headers, complete: false }));
      r.on('aborted', () => res({ status: r.statusCode, text, headers: r.headers, complete: false }));
    });
    req.on('error', () => res({ status: 0, text, complete: false }));
    req.end(body);
  });
  return { first, done };
}

const release = (mock, name) => fetch(`${mock.url}/mock/release/${name}`, { method: 'POST' });

function exited(child) {
  return new Promise((res) => {
    if (child.exitCode !== null || child.signalCode !== null) res({ code: child.exitCode, signal: child.signalCode });
    else child.once('exit', (code, signal) => res({ code, signal }));
  });
}

// A raw connection with what it received so far and a promise for its close.
function rawConnection(port) {
  const sock = net.connect(port, '127.0.0.1');
  const conn = { sock, data: '' };
  conn.connected = new Promise((res, rej) => { sock.once('connect', res); sock.once('error', rej); });
  conn.closed = new Promise((res) => sock.once('close', res));
  sock.on('data', (d) => { conn.data += d; });
  sock.on('error', () => {});
  return conn;
}

// Resolves with the connection's error code, or 'connected' when it was accepted.
function tryConnect(port) {
  return new Promise((res) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => { s.destroy(); res('connected'); });
    s.once('error', (e) => res(e.code));
  });
}

async function requestRow(gw, allocationId, requestId) {
  const r = await gw.admin('GET', `/admin/v1/requests?allocation_id=${allocationId}`);
  return r.body.data.find((q) => q.id === requestId);
}

test('SIGTERM drains: the stream in flight completes and is booked; /healthz 503; no new connections; exit 0', async () => {
  const mock = await startMock();
  // One event loop: the ordering argument below needs every connection on the same loop.
  let gw = await startGateway(mock, { threads: 1, serverToml: 'drain_timeout_s = 60' });
  try {
    const { allocation, secret } = await createAgreement(gw);
    const stream = openStream(gw, secret, 'mock?hold=drain-1&id=chatcmpl-drain-1');
    await stream.first;
    // An idle keep-alive connection (one request answered) and one in the middle of a request.
    const idle = rawConnection(gw.port);
    await idle.connected;
    idle.sock.write('GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n');
    await eventually(() => idle.data.includes('"status":"ok"'));
    assert.match(idle.data, /^HTTP\/1\.1 200/);
    const health = rawConnection(gw.port);
    await health.connected;
    await new Promise((res) => health.sock.write('GET /healthz HTTP/1.1\r\n', res));
    // The loop has read that first line once it has answered a request whose bytes arrived
    // after it (a chat completion takes several rounds of the one loop): the connection is
    // then mid-request, not idle.
    const marker = await chat(gw, secret, { model: 'mock', messages: [{ role: 'user', content: 'after' }] });
    assert.equal(marker.status, 200);
    const end = exited(gw.child);
    gw.child.kill('SIGTERM');
    await eventually(() => /draining/.test(gw.child.output()));
    await idle.closed;  // closed at once
    assert.notEqual(await tryConnect(gw.port), 'connected', 'the public listener is closed');
    health.sock.write('Host: gw\r\n\r\n');
    await health.closed;
    assert.match(health.data, /^HTTP\/1\.1 503/);
    assert.match(health.data, /"status":"draining"/);
    assert.match(health.data, /Connection: close/i);
    assert.equal(gw.child.exitCode, null, 'still draining while the stream runs');
    await release(mock, 'drain-1');
    const r = await stream.done;
    assert.equal(r.status, 200);
    assert.ok(r.complete, 'the stream ended properly');
    assert.match(r.text, /data: \[DONE\]/);
    assert.match(r.text, /"usage_source":"provider"/);
    const requestId = r.headers['x-cairva-request-id'];
    assert.deepEqual(await end, { code: 0, signal: null });
    assert.match(gw.child.output(), /drained in/);
    gw = await startGateway(mock, { dir: gw.dir, port: gw.port, adminPort: gw.adminPort });
    const row = await requestRow(gw, allocation.id, requestId);
    assert.equal(row.state, 'booked');
    assert.equal(row.provider_request_id, 'chatcmpl-drain-1');
  } finally {
    await release(mock, 'drain-1');
    await gw.stop();
    mock.child.kill();
    gw.cleanup();
  }
});

test('a stream longer than drain_timeout_s is cut and left usage_pending with its provider id; exit 0', async () => {
  const mock = await startMock();
  let gw = await startGateway(mock, { serverToml: 'drain_timeout_s = 1' });
  try {
    const { allocation, secret } = await createAgreement(gw);
    const stream = openStream(gw, secret, 'mock?hold=drain-2&id=chatcmpl-drain-2');
    await stream.first;
    const end = exited(gw.child);
    gw.child.kill('SIGTERM');
    assert.deepEqual(await end, { code: 0, signal: null });
    assert.match(gw.child.output(), /1 requests cut at the end of the drain/);
    const r = await stream.done;
    assert.doesNotMatch(r.text, /\[DONE\]/, 'a cut stream never ends as a success');
    const requestId = r.headers['x-cairva-request-id'];
    gw = await startGateway(mock, { dir: gw.dir, port: gw.port, adminPort: gw.adminPort });
    const row = await requestRow(gw, allocation.id, requestId);
    assert.equal(row.state, 'usage_pending');
    assert.equal(row.provider_request_id, 'chatcmpl-drain-2');
    const status = await gw.admin('GET', `/admin/v1/allocations/${allocation.id}`);
    assert.equal(status.body.current.usage_pending, 1);
    assert.ok(status.body.held.output_tokens > 0, 'its hold is kept');
  } finally {
    await release(mock, 'drain-2');
    await gw.stop();
    mock.child.kill();
    gw.cleanup();
  }
});

test('a second SIGTERM ends the drain at once; the open stream is left usage_pending with its provider id', async () => {
  const mock = await startMock();
  let gw = await startGateway(mock, { serverToml: 'drain_timeout_s = 600' });
  try {
    const { allocation, secret } = await createAgreement(gw);
    const stream = openStream(gw, secret, 'mock?hold=drain-3&id=chatcmpl-drain-3');
    await stream.first;
    const end = exited(gw.child);
    gw.child.kill('SIGTERM');
    await eventually(() => /draining/.test(gw.child.output()));
    gw.child.kill('SIGTERM');
    assert.deepEqual(await end, { code: 0, signal: null });
    const r = await stream.done;
    gw = await startGateway(mock, { dir: gw.dir, port: gw.port, adminPort: gw.adminPort });
    const row = await requestRow(gw, allocation.id, r.headers['x-cairva-request-id']);
    assert.equal(row.state, 'usage_pending');
    assert.equal(row.provider_request_id, 'chatcmpl-drain-3');
  } finally {
    await release(mock, 'drain-3');
    await gw.stop();
    mock.child.kill();
    gw.cleanup();
  }
});

test('kill -9 mid-stream: after the restart the request is usage_pending with the provider id noted at its first chunk', async () => {
  const mock = await startMock();
  let gw = await startGateway(mock);
  try {
    const { allocation, secret } = await createAgreement(gw);
    const stream = openStream(gw, secret, 'mock?hold=drain-4&id=chatcmpl-drain-4');
    await stream.first;
    // The note is not awaited by the stream: wait until the store shows it.
    const noted = await eventually(async () => {
      const r = await gw.admin('GET', `/admin/v1/requests?allocation_id=${allocation.id}&state=in_flight`);
      return r.body.data.find((q) => q.provider_request_id === 'chatcmpl-drain-4');
    });
    assert.ok(noted, 'the provider id is on the in-flight request');
    await gw.stop('SIGKILL');
    await stream.done;
    gw = await startGateway(mock, { dir: gw.dir, port: gw.port, adminPort: gw.adminPort });
    const row = await requestRow(gw, allocation.id, noted.id);
    assert.equal(row.state, 'usage_pending');
    assert.equal(row.provider_request_id, 'chatcmpl-drain-4');
  } finally {
    await release(mock, 'drain-4');
    await gw.stop();
    mock.child.kill();
    gw.cleanup();
  }
});

test('on PostgreSQL: the provider id is noted in flight, and a stream cut by the drain is left usage_pending with it', async () => {
  const PG_URL = process.env.CAIRVA_TEST_PG_URL;
  assert.ok(PG_URL, 'CAIRVA_TEST_PG_URL is not set: this test needs a PostgreSQL server (scripts/test.sh sets it)');
  const name = `cairva_drain_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  execFileSync('psql', [PG_URL, '-qAt', '-v', 'ON_ERROR_STOP=1', '-c', `CREATE DATABASE ${name}`]);
  const u = new URL(PG_URL);
  u.pathname = '/' + name;
  const store = u.toString();
  const mock = await startMock();
  let gw = await startGateway(mock, { store, serverToml: 'drain_timeout_s = 1' });
  try {
    const { allocation, secret } = await createAgreement(gw);
    const stream = openStream(gw, secret, 'mock?hold=drain-5&id=chatcmpl-drain-5');
    await stream.first;
    const noted = await eventually(async () => {
      const r = await gw.admin('GET', `/admin/v1/requests?allocation_id=${allocation.id}&state=in_flight`);
      return r.body.data.find((q) => q.provider_request_id === 'chatcmpl-drain-5');
    });
    assert.ok(noted, 'the provider id is on the in-flight request');
    const end = exited(gw.child);
    gw.child.kill('SIGTERM');
    assert.deepEqual(await end, { code: 0, signal: null });
    await stream.done;
    gw = await startGateway(mock, { store, dir: gw.dir, port: gw.port, adminPort: gw.adminPort });
    const row = await requestRow(gw, allocation.id, noted.id);
    assert.equal(row.state, 'usage_pending');
    assert.equal(row.provider_request_id, 'chatcmpl-drain-5');
  } finally {
    await release(mock, 'drain-5');
    await gw.stop();
    mock.child.kill();
    gw.cleanup();
    execFileSync('psql', [PG_URL, '-qAt', '-c', `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`]);
  }
});
