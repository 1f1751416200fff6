// The Anthropic dialect over real HTTP with the official Anthropic SDK (SPEC-APIS §1–§4):
// a provider with kind = "anthropic" (the mock), its buyers' calls booked with the cache
// counts, and every gateway error raised as the SDK's own error class.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { gatewayForFile, createAgreement, rawHttp, PROVIDER_KEY } from './harness.mjs';

let mock, gw;
gatewayForFile({
  gateway: {
    extraToml: (m) => `
[[providers]]
name = "claude"
kind = "anthropic"
base_url = "${m.url}/v1"
api_key_env = "CAIRVA_TEST_PROVIDER_KEY"
timeout_s = 30
`,
  },
}, (m, g) => {
  mock = m;
  gw = g;
});

const hi = [{ role: 'user', content: 'hello' }];

function claudeAgreement(overrides = {}) {
  return createAgreement(gw, { provider: 'claude', ...overrides });
}
function client(secret, options = {}) {
  return new Anthropic({ apiKey: secret, baseURL: gw.url, maxRetries: 0, ...options });
}
async function allocationOf(allocation) {
  return (await gw.admin('GET', `/admin/v1/allocations/${allocation.id}`)).body;
}
async function requestsOf(allocation, state) {
  return (await gw.admin('GET', `/admin/v1/requests?allocation_id=${allocation.id}&state=${state}`)).body.data;
}
// What the mock received last: the Anthropic fields and the body.
async function lastAtProvider() {
  const fields = await (await fetch(mock.url + '/mock/anthropic/last')).json();
  const body = await (await fetch(mock.url + '/mock/last')).json();
  return { fields, body };
}
// The error `call` rejects with.
async function rejection(call) {
  try {
    await call();
  } catch (err) {
    return err;
  }
  assert.fail('expected the call to fail');
}
function rawMessages(secret, body, headers = {}) {
  return fetch(gw.url + '/v1/messages', {
    method: 'POST',
    headers: { 'x-api-key': secret, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

test('messages.create: booked input is input plus both cache counts, output as reported', async () => {
  const { allocation, secret } = await claudeAgreement();
  const msg = await client(secret).messages.create({ model: 'claude-test?cache=6,8', max_tokens: 100, messages: hi });
  assert.equal(msg.content[0].text, 'Hello from the mock provider.');
  assert.deepEqual(msg.usage, { input_tokens: 10, cache_creation_input_tokens: 6, cache_read_input_tokens: 8, output_tokens: 7 });
  assert.equal(msg.usage_source, 'provider');
  const status = await allocationOf(allocation);
  assert.deepEqual(status.used, { input_tokens: 10 + 6 + 8, output_tokens: 7 });
  assert.deepEqual(status.held, { input_tokens: 0, output_tokens: 0 });
  const events = await gw.admin('GET', `/admin/v1/events?allocation_id=${allocation.id}`);
  assert.equal(events.body.data.length, 1);
  assert.equal(events.body.data[0].provider_request_id, msg.id);
});

test('messages.create stream: every event passes, message_delta carries usage_source, booked on message_stop', async () => {
  const { allocation, secret } = await claudeAgreement();
  const stream = await client(secret).messages.create({ model: 'claude-test?chunks=4', max_tokens: 100, messages: hi, stream: true });
  const events = [];
  for await (const event of stream) events.push(event);
  assert.deepEqual(events.map((e) => e.type), ['message_start', 'content_block_start', 'content_block_delta', 'content_block_delta',
    'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
  const delta = events.find((e) => e.type === 'message_delta');
  assert.equal(delta.usage_source, 'provider');
  assert.equal(delta.usage.output_tokens, 7);
  assert.deepEqual(events[0].message.usage, { input_tokens: 10, cache_creation_input_tokens: 2, cache_read_input_tokens: 4, output_tokens: 1 });
  const status = await allocationOf(allocation);
  assert.deepEqual(status.used, { input_tokens: 16, output_tokens: 7 });
  assert.deepEqual(status.held, { input_tokens: 0, output_tokens: 0 });
});

test('messages.stream helper: the final message and the booking agree with the provider', async () => {
  const { allocation, secret } = await claudeAgreement();
  const stream = client(secret).messages.stream({ model: 'claude-test?output=5', max_tokens: 100, messages: hi });
  const final = await stream.finalMessage();
  assert.equal(final.content[0].text, 'tok0 tok1 tok2 ');
  assert.equal(final.usage.output_tokens, 5);
  assert.deepEqual((await allocationOf(allocation)).used, { input_tokens: 16, output_tokens: 5 });
});

test('count_tokens is forwarded, books nothing and counts toward no limit', async () => {
  const { allocation, secret } = await claudeAgreement({ requests_per_minute: 1 });
  const anthropic = client(secret);
  for (let i = 0; i < 3; i++) {
    const counted = await anthropic.messages.countTokens({ model: 'claude-test', messages: hi });
    assert.deepEqual(counted, { input_tokens: 10 });
  }
  assert.equal((await lastAtProvider()).fields.target, 'POST /v1/messages/count_tokens');
  assert.deepEqual((await allocationOf(allocation)).used, { input_tokens: 0, output_tokens: 0 });
  assert.equal((await gw.admin('GET', `/admin/v1/requests?allocation_id=${allocation.id}`)).body.data.length, 0);
  // The one request a minute is still there to be made.
  await anthropic.messages.create({ model: 'claude-test', max_tokens: 10, messages: hi });
});

test('count_tokens: the model list and the allocation state apply', async () => {
  const { allocation, secret } = await claudeAgreement({ models: ['claude-ok'] });
  const outside = await rejection(() => client(secret).messages.countTokens({ model: 'claude-other', messages: hi }));
  assert.ok(outside instanceof Anthropic.BadRequestError);
  assert.equal(outside.error.error.code, 'model_not_allowed');
  await gw.admin('POST', `/admin/v1/allocations/${allocation.id}/suspend`);
  const suspended = await rejection(() => client(secret).messages.countTokens({ model: 'claude-ok', messages: hi }));
  assert.ok(suspended instanceof Anthropic.PermissionDeniedError);
  assert.equal(suspended.error.error.code, 'allocation_not_active');
});

test('x-api-key and Authorization: Bearer both authenticate; the buyer key never reaches the provider', async () => {
  const { secret } = await claudeAgreement();
  await client(secret).messages.create({ model: 'claude-test', max_tokens: 10, messages: hi });
  const byKey = await lastAtProvider();
  assert.equal(byKey.fields['x-api-key'], PROVIDER_KEY);
  assert.equal(byKey.fields.authorization, '');
  await new Anthropic({ authToken: secret, apiKey: null, baseURL: gw.url, maxRetries: 0 })
    .messages.create({ model: 'claude-test', max_tokens: 10, messages: hi });
  const byBearer = await lastAtProvider();
  assert.equal(byBearer.fields['x-api-key'], PROVIDER_KEY);
  assert.equal(byBearer.fields.authorization, '');
  assert.ok(!JSON.stringify(byBearer).includes(secret));
  // Without either, the message names both ways to send it.
  const none = await rawMessages('', { model: 'claude-test', max_tokens: 10, messages: hi }, { 'x-api-key': '' });
  assert.equal(none.status, 401);
  const body = await none.json();
  assert.equal(body.type, 'error');
  assert.equal(body.error.type, 'authentication_error');
  assert.match(body.error.message, /Authorization: Bearer.*x-api-key/);
});

test('anthropic-version (default 2023-06-01) and anthropic-beta are passed on', async () => {
  const { secret } = await claudeAgreement();
  const plain = await rawMessages(secret, { model: 'claude-test', max_tokens: 10, messages: hi });
  assert.equal(plain.status, 200);
  assert.equal((await lastAtProvider()).fields['anthropic-version'], '2023-06-01');
  await client(secret).beta.messages.create({ model: 'claude-test', max_tokens: 10, messages: hi, betas: ['fine-grained-tool-streaming-2025-05-14'] });
  const { fields } = await lastAtProvider();
  assert.equal(fields['anthropic-beta'], 'fine-grained-tool-streaming-2025-05-14');
  assert.match(fields['anthropic-version'], /^\d{4}-\d{2}-\d{2}$/);
  assert.equal(fields.target, 'POST /v1/messages');
  // Earlier SDKs marked beta calls with ?beta=true: the query goes on with the call.
  const marked = await fetch(gw.url + '/v1/messages?beta=true', {
    method: 'POST',
    headers: { 'x-api-key': secret, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'claude-test', max_tokens: 10, messages: hi }),
  });
  assert.equal(marked.status, 200);
  assert.equal((await lastAtProvider()).fields.target, 'POST /v1/messages?beta=true');
});

test('models.list on an Anthropic allocation: the agreement\'s list in Anthropic\'s shape, else the provider\'s, asked with its version', async () => {
  const listed = await claudeAgreement({ models: ['claude-a', 'claude-b'] });
  const page = await client(listed.secret).models.list();
  assert.deepEqual(page.data.map((m) => [m.type, m.id]), [['model', 'claude-a'], ['model', 'claude-b']]);
  const open = await claudeAgreement();
  const passed = await fetch(gw.url + '/v1/models', { headers: { 'x-api-key': open.secret } });
  assert.equal(passed.status, 200);
  const { fields } = await lastAtProvider();
  assert.equal(fields.target, 'GET /v1/models');
  assert.equal(fields['anthropic-version'], '2023-06-01');
  assert.equal(fields['x-api-key'], PROVIDER_KEY);
});

test('a lowered max_tokens is what the provider gets, and the thinking budget goes under it', async () => {
  const { secret } = await claudeAgreement({ output_tokens: 2000 });
  const { data, response } = await client(secret).messages.create({
    model: 'claude-test', max_tokens: 4096, messages: hi, thinking: { type: 'enabled', budget_tokens: 3000 },
  }).withResponse();
  assert.equal(response.headers.get('x-cairva-max-tokens-lowered'), '2000');
  assert.equal(data.usage_source, 'provider');
  const { body } = await lastAtProvider();
  assert.equal(body.max_tokens, 2000);
  assert.deepEqual(body.thinking, { type: 'enabled', budget_tokens: 1999 });
});

test('a thinking budget the lowering cannot keep at 1024 is refused 402 and counts toward no limit', async () => {
  const { secret } = await claudeAgreement({ output_tokens: 1000, requests_per_minute: 1 });
  const err = await rejection(() => client(secret).messages.create({
    model: 'claude-test', max_tokens: 4096, messages: hi, thinking: { type: 'enabled', budget_tokens: 2000 },
  }));
  assert.ok(err instanceof Anthropic.APIError);
  assert.equal(err.status, 402);
  assert.equal(err.error.error.type, 'billing_error');
  assert.equal(err.error.error.code, 'allocation_exhausted');
  // The refusal started no request: the minute's one request is still there.
  const ok = await client(secret).messages.create({ model: 'claude-test', max_tokens: 500, messages: hi });
  assert.equal(ok.usage_source, 'provider');
});

test('each gateway error reaches the SDK as its own error class, in Anthropic\'s shape', async () => {
  const bad = await rejection(() => client('cv_nope').messages.create({ model: 'claude-test', max_tokens: 10, messages: hi }));
  assert.ok(bad instanceof Anthropic.AuthenticationError);
  assert.equal(bad.error.type, 'error');
  assert.equal(bad.error.error.code, 'invalid_api_key');

  const small = await claudeAgreement({ input_tokens: 5 });
  const exhausted = await rejection(() => client(small.secret).messages.create({ model: 'claude-test', max_tokens: 10, messages: hi }));
  assert.ok(exhausted instanceof Anthropic.APIError);
  assert.equal(exhausted.status, 402);
  assert.equal(exhausted.error.error.code, 'allocation_exhausted');

  const paused = await claudeAgreement();
  await gw.admin('POST', `/admin/v1/allocations/${paused.allocation.id}/suspend`);
  const suspended = await rejection(() => client(paused.secret).messages.create({ model: 'claude-test', max_tokens: 10, messages: hi }));
  assert.ok(suspended instanceof Anthropic.PermissionDeniedError);
  assert.equal(suspended.error.error.type, 'permission_error');

  const { secret } = await claudeAgreement({ requests_per_minute: 1 });
  const missing = await rejection(() => client(secret).messages.create({ model: 'claude-test', messages: hi }));
  assert.ok(missing instanceof Anthropic.BadRequestError);
  assert.equal(missing.error.error.type, 'invalid_request_error');
  assert.equal(missing.error.error.message, 'max_tokens is required');

  const notFound = await rejection(() => client(secret).messages.batches.list());
  assert.ok(notFound instanceof Anthropic.NotFoundError);
  const providerNotFound = await rejection(() => client(secret).messages.create({ model: 'claude-test?status=404', max_tokens: 10, messages: hi }));
  assert.ok(providerNotFound instanceof Anthropic.NotFoundError);
  assert.equal(providerNotFound.error.error.type, 'not_found_error', "the provider's own 404 passes through");

  const limited = await rejection(() => client(secret).messages.create({ model: 'claude-test', max_tokens: 10, messages: hi }));
  assert.ok(limited instanceof Anthropic.RateLimitError);
  assert.equal(limited.error.error.type, 'rate_limit_error');
  assert.equal(limited.error.error.limit, 'requests_per_minute');
  assert.equal(limited.headers.get('retry-after'), '60');
  assert.equal(limited.headers.get('anthropic-ratelimit-requests-limit'), '1');
  assert.equal(limited.headers.get('anthropic-ratelimit-requests-remaining'), '0');
  assert.equal(limited.headers.get('x-ratelimit-remaining-requests'), '0');
  assert.ok(limited.headers.get('anthropic-ratelimit-tokens-limit'));
  assert.ok(limited.headers.get('anthropic-ratelimit-tokens-remaining'));
  const reset = Date.parse(limited.headers.get('anthropic-ratelimit-requests-reset'));
  assert.ok(reset > Date.now() && reset <= Date.now() + 60_000, limited.headers.get('anthropic-ratelimit-requests-reset'));
});

test('every answer on the Anthropic paths is in Anthropic\'s shape: 405, 401 before the key, 413', async () => {
  const anthropicBody = (raw) => JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4));
  const wrongMethod = await fetch(gw.url + '/v1/messages/count_tokens', { method: 'GET' });
  assert.equal(wrongMethod.status, 405);
  assert.equal((await wrongMethod.json()).error.type, 'invalid_request_error');
  const unknownKey = await rawHttp(gw.port,
    `POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: cv_nope\r\nConnection: close\r\nContent-Length: ${17 << 20}\r\n\r\n`);
  assert.match(unknownKey, /^HTTP\/1\.1 401/, '401 comes before 413');
  assert.equal(anthropicBody(unknownKey).error.type, 'authentication_error');
  const { secret } = await claudeAgreement();
  const tooLarge = await rawHttp(gw.port,
    `POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: ${secret}\r\nConnection: close\r\nContent-Length: ${(16 << 20) + 1}\r\n\r\n`);
  assert.match(tooLarge, /^HTTP\/1\.1 413/);
  assert.match(tooLarge, /anthropic-ratelimit-requests-limit: /i);
  const body = anthropicBody(tooLarge);
  assert.equal(body.type, 'error');
  assert.equal(body.error.type, 'request_too_large');
  assert.equal(body.error.code, 'request_too_large');
  // The OpenAI paths keep OpenAI's shape.
  const chatWrongMethod = await fetch(gw.url + '/v1/chat/completions', { method: 'GET' });
  assert.equal((await chatWrongMethod.json()).error.code, 'method_not_allowed');
});

test('a path of the other dialect is 400 unsupported_api, each in its own SDK\'s shape', async () => {
  const openaiSide = await createAgreement(gw);  // the OpenAI-kind provider
  const viaAnthropic = await rejection(() => client(openaiSide.secret).messages.create({ model: 'm', max_tokens: 10, messages: hi }));
  assert.ok(viaAnthropic instanceof Anthropic.BadRequestError);
  assert.equal(viaAnthropic.error.error.code, 'unsupported_api');
  assert.match(viaAnthropic.error.error.message, /POST \/v1\/chat\/completions/);

  const claudeSide = await claudeAgreement();
  const openai = new OpenAI({ apiKey: claudeSide.secret, baseURL: gw.url + '/v1', maxRetries: 0 });
  const viaOpenAI = await rejection(() => openai.chat.completions.create({ model: 'm', messages: hi }));
  assert.ok(viaOpenAI instanceof OpenAI.BadRequestError);
  assert.equal(viaOpenAI.code, 'unsupported_api');
  assert.match(viaOpenAI.message, /POST \/v1\/messages/);
});

test('a model outside the agreement\'s list is refused 400 model_not_allowed', async () => {
  const { secret } = await claudeAgreement({ models: ['claude-ok'] });
  const err = await rejection(() => client(secret).messages.create({ model: 'claude-other', max_tokens: 10, messages: hi }));
  assert.ok(err instanceof Anthropic.BadRequestError);
  assert.equal(err.error.error.code, 'model_not_allowed');
  await client(secret).messages.create({ model: 'claude-ok', max_tokens: 10, messages: hi });
});

test('supplier-account errors come back in Anthropic\'s shape with nothing of the supplier', async () => {
  const { secret } = await claudeAgreement();
  const denied = await rejection(() => client(secret).messages.create({ model: 'claude-test?status=401', max_tokens: 10, messages: hi }));
  assert.equal(denied.status, 502);
  assert.equal(denied.error.error.type, 'api_error');
  assert.equal(denied.error.error.code, 'provider_unavailable');
  const limited = await rejection(() => client(secret).messages.create({ model: 'claude-test?status=429&retry-after=4', max_tokens: 10, messages: hi }));
  assert.ok(limited instanceof Anthropic.RateLimitError);
  assert.equal(limited.headers.get('retry-after'), '4');
  for (const err of [denied, limited]) {
    const text = JSON.stringify(err.error);
    assert.ok(!text.includes('org-MockSupplier7Q2') && !text.includes('k3Yz'), text);
  }
});

test('a stream cut before its usage settles usage_pending and keeps its hold', async () => {
  const { allocation, secret } = await claudeAgreement();
  const stream = await client(secret).messages.create({ model: 'claude-test?cut-after=4', max_tokens: 50, messages: hi, stream: true });
  const seen = [];
  const err = await rejection(async () => {
    for await (const event of stream) seen.push(event.type);
  });
  assert.ok(err instanceof Anthropic.APIError);
  assert.equal(err.error.error.code, 'provider_unavailable');
  assert.deepEqual(seen, ['message_start', 'content_block_start', 'content_block_delta']);
  const pending = await requestsOf(allocation, 'usage_pending');
  assert.equal(pending.length, 1);
  assert.equal(pending[0].hold.output_tokens, 50);
  assert.ok(pending[0].hold.input_tokens > 0);
  const status = await allocationOf(allocation);
  assert.deepEqual(status.held, pending[0].hold);
  assert.deepEqual(status.used, { input_tokens: 0, output_tokens: 0 });
});

test('every anthropic-beta line reaches the provider, as one list', async () => {
  const { secret } = await claudeAgreement();
  const body = JSON.stringify({ model: 'claude-test', max_tokens: 10, messages: hi });
  const raw = await rawHttp(gw.port,
    `POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: ${secret}\r\nanthropic-beta: beta-one,beta-two\r\n` +
    `anthropic-version: 2023-06-01\r\nanthropic-beta: beta-three\r\nContent-Type: application/json\r\n` +
    `Connection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  assert.match(raw, /^HTTP\/1\.1 200/);
  assert.equal((await lastAtProvider()).fields['anthropic-beta'], 'beta-one,beta-two, beta-three');
});

test('the Messages paths\' own errors are all in Anthropic\'s shape: 405, 401, 400, 413; unserved paths 404', async () => {
  const isAnthropicError = async (res, status, type) => {
    assert.equal(res.status, status);
    const body = await res.json();
    assert.equal(body.type, 'error', JSON.stringify(body));
    assert.equal(body.error.type, type, JSON.stringify(body));
    assert.equal(typeof body.error.message, 'string');
    return body;
  };
  const { secret } = await claudeAgreement();
  const auth = { 'x-api-key': secret, 'anthropic-version': '2023-06-01' };
  // Anthropic API paths the gateway does not serve: 404 in OpenAI's shape, as on every path
  // but the two Messages paths (SPEC-APIS §4); the SDK still raises its NotFoundError.
  for (const [method, path] of [['GET', '/v1/messages/batches'], ['POST', '/v1/messages/batches'], ['GET', '/v1/messages/msg_1/x']]) {
    const res = await fetch(gw.url + path, { method, headers: auth });
    assert.equal(res.status, 404, path);
    assert.equal((await res.json()).error.code, 'not_found', path);
  }
  const batches = await rejection(() => client(secret).messages.batches.list());
  assert.ok(batches instanceof Anthropic.NotFoundError);
  // 405 on both Anthropic paths.
  await isAnthropicError(await fetch(gw.url + '/v1/messages', { headers: auth }), 405, 'invalid_request_error');
  await isAnthropicError(await fetch(gw.url + '/v1/messages/count_tokens', { headers: auth }), 405, 'invalid_request_error');
  // 401 with x-api-key or a Bearer, unknown key.
  await isAnthropicError(await rawMessages('cv_unknown', {}), 401, 'authentication_error');
  await isAnthropicError(await fetch(gw.url + '/v1/messages/count_tokens', {
    method: 'POST', headers: { authorization: 'Bearer cv_unknown', 'content-type': 'application/json' }, body: '{}',
  }), 401, 'authentication_error');
  // 400 on a malformed body, on both paths; the anthropic-ratelimit-* headers come along.
  for (const path of ['/v1/messages', '/v1/messages/count_tokens']) {
    const res = await fetch(gw.url + path, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"model":' });
    assert.ok(res.headers.get('anthropic-ratelimit-requests-limit'), path);
    await isAnthropicError(res, 400, 'invalid_request_error');
  }
  // 413 on a chunked body past the limit (the announced-length case is tested above).
  const big = 'x'.repeat(1 << 20);
  const chunks = Array.from({ length: 17 }, () => `${big.length.toString(16)}\r\n${big}\r\n`).join('');
  const tooLarge = await rawHttp(gw.port,
    `POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: ${secret}\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n${chunks}0\r\n\r\n`);
  assert.match(tooLarge, /^HTTP\/1\.1 413/);
  assert.equal(JSON.parse(tooLarge.slice(tooLarge.indexOf('\r\n\r\n') + 4)).error.type, 'request_too_large');
});

test('GET /v1/models answers its errors in OpenAI\'s shape for every caller; the SDKs still raise by status', async () => {
  const openAIError = async (res, status, code) => {
    assert.equal(res.status, status);
    const body = await res.json();
    assert.equal(body.error.code, code, JSON.stringify(body));
    assert.equal(body.type, undefined, JSON.stringify(body));
  };
  await openAIError(await fetch(gw.url + '/v1/models', { headers: { 'x-api-key': 'cv_unknown', 'anthropic-version': '2023-06-01' } }),
    401, 'invalid_api_key');
  const sdk401 = await rejection(() => client('cv_unknown').models.list());
  assert.ok(sdk401 instanceof Anthropic.AuthenticationError);
  await openAIError(await fetch(gw.url + '/v1/models', { method: 'POST', headers: { 'anthropic-version': '2023-06-01' } }),
    405, 'method_not_allowed');
  const { allocation, secret } = await claudeAgreement();
  await gw.admin('POST', `/admin/v1/allocations/${allocation.id}/suspend`);
  const suspended = await fetch(gw.url + '/v1/models', { headers: { 'x-api-key': secret } });
  assert.equal(suspended.status, 403);
  const sdk403 = await rejection(() => client(secret).models.list());
  assert.ok(sdk403 instanceof Anthropic.PermissionDeniedError);
});

test('models.list passed through from an Anthropic provider comes in Anthropic\'s shape', async () => {
  const { secret } = await claudeAgreement();
  const raw = await fetch(gw.url + '/v1/models', { headers: { 'x-api-key': secret } });
  assert.equal(raw.status, 200);
  const body = await raw.json();
  assert.deepEqual(body, {
    data: [
      { type: 'model', id: 'mock-model-a', display_name: 'mock-model-a', created_at: '2023-11-14T22:13:20Z' },
      { type: 'model', id: 'mock-model-b', display_name: 'mock-model-b', created_at: '2023-11-14T22:13:20Z' },
    ],
    has_more: false, first_id: 'mock-model-a', last_id: 'mock-model-b',
  });
  const ids = [];
  for await (const model of client(secret).models.list()) ids.push([model.type, model.id, model.display_name]);
  assert.deepEqual(ids, [['model', 'mock-model-a', 'mock-model-a'], ['model', 'mock-model-b', 'mock-model-b']]);
  // An OpenAI provider's list stays OpenAI's.
  const openaiSide = await createAgreement(gw);
  const openaiList = await (await fetch(gw.url + '/v1/models', { headers: { authorization: `Bearer ${openaiSide.secret}` } })).json();
  assert.equal(openaiList.object, 'list');
  assert.equal(openaiList.data[0].object, 'model');
});
