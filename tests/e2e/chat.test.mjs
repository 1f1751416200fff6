// The data path over real HTTP with the official OpenAI client: SPEC §4–§6.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { gatewayForFile, createAgreement, chat, mockLast, PROVIDER_KEY, eventually } from './harness.mjs';

let mock, gw;
gatewayForFile({}, async (m, g) => {
  mock = m;
  gw = g;
});

function client(secret) {
  return new OpenAI({ apiKey: secret, baseURL: gw.url + '/v1', maxRetries: 0 });
}

test('a non-streaming completion is forwarded, booked once, and tagged usage_source provider', async () => {
  const { allocation, secret } = await createAgreement(gw);
  const res = await client(secret).chat.completions.create({
    model: 'gpt-test', messages: [{ role: 'user', content: 'hello' }], max_tokens: 50,
  });
  assert.equal(res.choices[0].message.content, 'Hello from the mock provider.');
  assert.deepEqual(res.usage, { prompt_tokens: 10, completion_tokens: 7, total_tokens: 17 });
  assert.equal(res.usage_source, 'provider');
  const status = await gw.admin('GET', `/admin/v1/allocations/${allocation.id}`);
  assert.equal(status.status, 200);
  assert.deepEqual(status.body.used, { input_tokens: 10, output_tokens: 7 });
  assert.deepEqual(status.body.held, { input_tokens: 0, output_tokens: 0 });
  const events = await gw.admin('GET', `/admin/v1/events?allocation_id=${allocation.id}`);
  assert.equal(events.body.data.length, 1);
  assert.equal(events.body.data[0].source, 'provider');
  assert.equal(events.body.data[0].finality, 'reported');
  assert.equal(events.body.data[0].provider_request_id, res.id);
});

test("the provider's x-request-id header reaches the client, plain and streamed", async () => {
  const { secret } = await createAgreement(gw);
  const plain = await chat(gw, secret, { model: 'mock?header-id=hdr-plain-1', messages: [{ role: 'user', content: 'x' }] });
  assert.equal(plain.status, 200);
  assert.equal(plain.headers.get('x-request-id'), 'hdr-plain-1');
  const streamed = await chat(gw, secret, { model: 'mock?header-id=hdr-stream-1', messages: [{ role: 'user', content: 'x' }], stream: true });
  assert.equal(streamed.headers.get('x-request-id'), 'hdr-stream-1');
  const failed = await chat(gw, secret, { model: 'mock?header-id=hdr-err-1&status=503', messages: [{ role: 'user', content: 'x' }] });
  assert.equal(failed.status, 503);
  assert.equal(failed.headers.get('x-request-id'), 'hdr-err-1');
});

test('the buyer key is never sent upstream; the supplier key is', async () => {
  const { secret } = await createAgreement(gw);
  await chat(gw, secret, { model: 'm', messages: [{ role: 'user', content: 'x' }] });
  const last = await mockLast(mock);
  assert.equal(last.authorization, `Bearer ${PROVIDER_KEY}`);
  assert.ok(!JSON.stringify(last).includes(secret));
});

test('every response carries x-cairva-request-id and the x-ratelimit headers', async () => {
  const { secret } = await createAgreement(gw, { requests_per_minute: 7, tokens_per_minute: 1000 });
  const r = await chat(gw, secret, { model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: 5 });
  assert.equal(r.status, 200);
  assert.match(r.headers.get('x-cairva-request-id'), /^req_/);
  assert.equal(r.headers.get('x-ratelimit-limit-requests'), '7');
  assert.equal(r.headers.get('x-ratelimit-remaining-requests'), '6');
  assert.equal(r.headers.get('x-ratelimit-limit-tokens'), '1000');
  const cur = await fetch(gw.url + '/v1/allocations/current', { headers: { authorization: `Bearer ${secret}` } });
  assert.equal(cur.status, 200);
  assert.equal(cur.headers.get('x-ratelimit-remaining-tokens'), String(1000 - 15));
  const bad = await chat(gw, secret, '{"model": 5}');
  assert.equal(bad.status, 400);
  assert.equal(bad.headers.get('x-ratelimit-remaining-requests'), '6', 'exact use on errors before admission');
  assert.equal(bad.headers.get('x-ratelimit-remaining-tokens'), String(1000 - 15));
  const notFound = await fetch(gw.url + '/nope');
  assert.equal(notFound.status, 404);
  assert.match(notFound.headers.get('x-cairva-request-id'), /^req_/);
});

test('streaming without include_usage: chunks pass through, the usage chunk is dropped, usage still booked', async () => {
  const { allocation, secret } = await createAgreement(gw);
  const stream = await client(secret).chat.completions.create({
    model: 'mock?chunks=4', messages: [{ role: 'user', content: 'hi' }], stream: true, max_tokens: 20,
  });
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  assert.equal(chunks.length, 6);  // role, 4 content, finish
  for (const c of chunks) {
    assert.ok(!('usage' in c), 'no usage field for a client that did not ask');
    assert.ok(c.choices.length > 0);
  }
  assert.equal(chunks.map((c) => c.choices[0].delta.content ?? '').join(''), 'tok0 tok1 tok2 tok3 ');
  const last = await mockLast(mock);
  assert.equal(last.body.stream_options.include_usage, true, 'gateway asked the provider for usage');
  const status = await gw.admin('GET', `/admin/v1/allocations/${allocation.id}`);
  assert.deepEqual(status.body.used, { input_tokens: 10, output_tokens: 7 });
});

test('streaming with include_usage: the usage chunk arrives tagged usage_source provider', async () => {
  const { secret } = await createAgreement(gw);
  const stream = await client(secret).chat.completions.create({
    model: 'mock', messages: [{ role: 'user', content: 'hi' }], stream: true,
    stream_options: { include_usage: true }, max_tokens: 3,
  });
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  const usage = chunks.filter((c) => c.usage);
  assert.equal(usage.length, 1);
  assert.deepEqual(usage[0].usage, { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 });
  assert.equal(usage[0].usage_source, 'provider');
});

test('usage missing: request usage_pending, hold kept, body says usage null and pending', async () => {
  const { allocation, secret } = await createAgreement(gw);
  const r = await chat(gw, secret, { model: 'mock?no-usage', messages: [{ role: 'user', content: 'hello' }], max_tokens: 100 });
  assert.equal(r.status, 200);
  assert.equal(r.body.usage, null);
  assert.equal(r.body.usage_source, 'pending');
  const reqs = await gw.admin('GET', `/admin/v1/requests?allocation_id=${allocation.id}&state=usage_pending`);
  assert.equal(reqs.body.data.length, 1);
  const status = await gw.admin('GET', `/admin/v1/allocations/${allocation.id}`);
  // SPEC §4: every key and string but the model's name, 43 code points: 15 + 4 + 8.
  assert.deepEqual(status.body.held, { input_tokens: 27, output_tokens: 100 });
  assert.equal(status.body.current.usage_pending, 1);
});

test('a stream without usage ends with a pending usage chunk for a client that asked', async () => {
  const { secret } = await createAgreement(gw);
  const stream = await client(secret).chat.completions.create({
    model: 'mock?no-usage', messages: [{ role: 'user', content: 'hi' }], stream: true,
    stream_options: { include_usage: true },
  });
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  const last = chunks.at(-1);
  assert.equal(last.usage, null);
  assert.equal(last.usage_source, 'pending');
});

test('max_tokens over the remaining output allowance is lowered to fit and announced', async () => {
  const { allocation, secret } = await createAgreement(gw, { output_tokens: 40 });
  const r = await chat(gw, secret, { model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: 500, n: 2 });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('x-cairva-max-tokens-lowered'), '20');
  const last = await mockLast(mock);
  assert.equal(last.body.max_tokens, 20);
  assert.equal(last.body.n, 2);
  const r2 = await chat(gw, (await createAgreement(gw, { output_tokens: 30 })).secret,
    { model: 'm', messages: [{ role: 'user', content: 'x' }] });
  assert.equal(r2.headers.get('x-cairva-max-tokens-lowered'), '30');
  const added = (await mockLast(mock)).body;
  assert.equal(added.max_completion_tokens, 30, "the provider's limit_field added when the client sent none");
  assert.equal(added.max_tokens, undefined);
  void allocation;
});

test('provider error status is passed on, the hold released, nothing booked, rpm still counted', async () => {
  const { allocation, secret } = await createAgreement(gw, { requests_per_minute: 2 });
  const r = await chat(gw, secret, { model: 'mock?status=500', messages: [{ role: 'user', content: 'x' }] });
  assert.equal(r.status, 500);
  assert.equal(r.body.error.type, 'mock_error');
  const status = await gw.admin('GET', `/admin/v1/allocations/${allocation.id}`);
  assert.deepEqual(status.body.held, { input_tokens: 0, output_tokens: 0 });
  assert.deepEqual(status.body.used, { input_tokens: 0, output_tokens: 0 });
  assert.equal(status.body.current.requests_last_minute, 1);
  const failed = await gw.admin('GET', `/admin/v1/requests?allocation_id=${allocation.id}&state=failed`);
  assert.equal(failed.body.data.length, 1);
});

test('a provider status no client could take as a final answer reaches the client as 502', async () => {
  const { allocation, secret } = await createAgreement(gw);
  const r = await chat(gw, secret, { model: 'mock?status=600', messages: [{ role: 'user', content: 'x' }] });
  assert.equal(r.status, 502);
  const status = await gw.admin('GET', `/admin/v1/allocations/${allocation.id}`);
  assert.deepEqual(status.body.held, { input_tokens: 0, output_tokens: 0 });
  assert.deepEqual(status.body.used, { input_tokens: 0, output_tokens: 0 });
});

test('a mid-stream client disconnect still books the usage', async () => {
  const { allocation, secret } = await createAgreement(gw);
  const ctrl = new AbortController();
  const res = await fetch(gw.url + '/v1/chat/completions', {
    method: 'POST', signal: ctrl.signal,
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'mock?chunks=10&chunk-delay-ms=30', messages: [{ role: 'user', content: 'x' }], stream: true }),
  });
  const reader = res.body.getReader();
  await reader.read();
  ctrl.abort();
  const booked = await eventually(async () => {
    const s = await gw.admin('GET', `/admin/v1/allocations/${allocation.id}`);
    return s.body.used.output_tokens === 7 ? s.body : null;
  });
  assert.ok(booked, 'usage booked after the client went away');
  assert.equal(booked.current.in_flight, 0);
});
