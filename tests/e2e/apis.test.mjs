// The OpenAI APIs beside Chat Completions (SPEC-APIS §2, §3) over real HTTP with the
// official OpenAI client: Responses (plain and streamed), Embeddings, Models and the
// stored response objects, each booked (or not) as the ledger says.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { gatewayForFile, createAgreement, mockLast, mockStats, PROVIDER_KEY } from './harness.mjs';

let mock, gw;
gatewayForFile({}, async (m, g) => {
  mock = m;
  gw = g;
});

function client(secret) {
  return new OpenAI({ apiKey: secret, baseURL: gw.url + '/v1', maxRetries: 0 });
}

async function allocationOf(id) {
  const r = await gw.admin('GET', `/admin/v1/allocations/${id}`);
  assert.equal(r.status, 200);
  return r.body;
}

async function eventsOf(id) {
  return (await gw.admin('GET', `/admin/v1/events?allocation_id=${id}`)).body.data;
}

// ---------------------------------------------------------------- Responses

test('responses.create books the provider usage and tags usage_source provider', async () => {
  const { allocation, secret } = await createAgreement(gw);
  const res = await client(secret).responses.create({ model: 'gpt-test', input: 'Write a haiku about ledgers.' });
  assert.match(res.id, /^resp_/);
  assert.equal(res.output_text, 'tok0 tok1 tok2 ');
  assert.equal(res.usage_source, 'provider');
  assert.equal(res.usage.input_tokens, 10);
  assert.equal(res.usage.output_tokens, 7);
  const a = await allocationOf(allocation.id);
  assert.deepEqual(a.used, { input_tokens: res.usage.input_tokens, output_tokens: res.usage.output_tokens });
  assert.deepEqual(a.held, { input_tokens: 0, output_tokens: 0 });
  const events = await eventsOf(allocation.id);
  assert.equal(events.length, 1);
  assert.equal(events[0].provider_request_id, res.id);
  const sent = (await mockLast(mock)).body;
  assert.equal(sent.max_output_tokens, 1024, 'the held default is written into max_output_tokens');
});

test('a streamed response passes every event and books its terminal usage', async () => {
  const { allocation, secret } = await createAgreement(gw);
  const stream = await client(secret).responses.create({
    model: 'mock?chunks=4&output=9', input: [{ role: 'user', content: 'hi' }], stream: true, max_output_tokens: 64,
  });
  const events = [];
  for await (const e of stream) events.push(e);
  assert.deepEqual(events.map((e) => e.type), [
    'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
    'response.output_text.delta', 'response.output_text.delta', 'response.output_text.delta',
    'response.output_text.delta', 'response.output_text.done', 'response.content_part.done',
    'response.output_item.done', 'response.completed',
  ]);
  assert.deepEqual(events.map((e) => e.sequence_number), [...events.keys()], 'nothing dropped or reordered');
  const done = events.at(-1).response;
  assert.equal(done.usage_source, 'provider');
  assert.deepEqual([done.usage.input_tokens, done.usage.output_tokens], [10, 9]);
  const a = await allocationOf(allocation.id);
  assert.deepEqual(a.used, { input_tokens: 10, output_tokens: 9 });
  assert.deepEqual(a.held, { input_tokens: 0, output_tokens: 0 });
  assert.equal((await eventsOf(allocation.id))[0].provider_request_id, events[0].response.id);
});

test('a response stream cut before its terminal event settles usage_pending and keeps its hold', async () => {
  const { allocation, secret } = await createAgreement(gw);
  const stream = await client(secret).responses.create({ model: 'mock?cut-after=5', input: 'hi', stream: true });
  const seen = [];
  await assert.rejects(async () => {
    for await (const e of stream) seen.push(e.type);
  }, (err) => err instanceof OpenAI.APIError && /cut off/.test(err.message));
  assert.equal(seen.length, 5);
  const pending = await gw.admin('GET', `/admin/v1/requests?allocation_id=${allocation.id}&state=usage_pending`);
  assert.equal(pending.body.data.length, 1);
  const a = await allocationOf(allocation.id);
  assert.deepEqual(a.used, { input_tokens: 0, output_tokens: 0 });
  assert.equal(a.held.output_tokens, 1024);
  assert.ok(a.held.input_tokens > 0);
  assert.equal(a.current.usage_pending, 1);
});

test('max_output_tokens over the remaining output is lowered, written and announced', async () => {
  const { secret } = await createAgreement(gw, { output_tokens: 100 });
  const { data, response } = await client(secret).responses
    .create({ model: 'mock', input: 'x', max_output_tokens: 500 })
    .withResponse();
  assert.equal(response.headers.get('x-cairva-max-tokens-lowered'), '100');
  assert.equal((await mockLast(mock)).body.max_output_tokens, 100);
  assert.equal(data.usage.output_tokens, 7);
});

test('a limit lowered under Responses minimum of 16 is refused 402, not forwarded', async () => {
  const { secret } = await createAgreement(gw, { output_tokens: 15 });
  const before = (await mockStats(mock)).requests;
  await assert.rejects(client(secret).responses.create({ model: 'mock', input: 'x' }),
    (err) => err.status === 402 && err.code === 'allocation_exhausted');
  assert.equal((await mockStats(mock)).requests, before);
});

test('background responses are refused 400 before admission', async () => {
  const { allocation, secret } = await createAgreement(gw);
  await assert.rejects(client(secret).responses.create({ model: 'mock', input: 'x', background: true }),
    (err) => err instanceof OpenAI.BadRequestError && /background responses are not supported/.test(err.message));
  const a = await allocationOf(allocation.id);
  assert.equal(a.current.requests_last_minute, 0, 'counts toward nothing');
});

test('a model outside the agreement allow-list is refused on every API', async () => {
  const { secret } = await createAgreement(gw, { models: ['gpt-allowed'] });
  const c = client(secret);
  await assert.rejects(c.responses.create({ model: 'gpt-other', input: 'x' }),
    (err) => err.status === 400 && err.code === 'model_not_allowed');
  await assert.rejects(c.embeddings.create({ model: 'gpt-other', input: 'x' }),
    (err) => err.status === 400 && err.code === 'model_not_allowed');
});

// ---------------------------------------------------------------- Embeddings

test('embeddings.create books usage.prompt_tokens as input, nothing as output, under x-request-id', async () => {
  const { allocation, secret } = await createAgreement(gw);
  const { data, response } = await client(secret).embeddings
    .create({ model: 'text-embedding-3-small', input: ['first text', 'second one'] })
    .withResponse();
  assert.equal(data.data.length, 2);
  assert.equal(data.data[0].embedding.length, 8, 'the client decoded the base64 it asked for');
  assert.equal(data.usage_source, 'provider');
  const a = await allocationOf(allocation.id);
  assert.deepEqual(a.used, { input_tokens: data.usage.prompt_tokens, output_tokens: 0 });
  assert.deepEqual(a.held, { input_tokens: 0, output_tokens: 0 });
  const [event] = await eventsOf(allocation.id);
  assert.equal(event.provider_request_id, response.headers.get('x-request-id'));
  assert.match(event.provider_request_id, /^req_/);
});

test('token-array embeddings are booked as the provider counts them', async () => {
  const { allocation, secret } = await createAgreement(gw);
  const res = await client(secret).embeddings.create({
    model: 'm', input: [[101, 2023, 2003], [1037, 3231]], encoding_format: 'float',
  });
  assert.equal(res.data.length, 2);
  assert.equal(res.usage.prompt_tokens, 5);
  assert.deepEqual((await allocationOf(allocation.id)).used, { input_tokens: 5, output_tokens: 0 });
});

// ---------------------------------------------------------------- Models

async function modelIds(secret) {
  const ids = [];
  for await (const m of client(secret).models.list()) ids.push(m.id);
  return ids;
}

test("models.list gives the agreement's models, without asking the provider", async () => {
  const { allocation, secret } = await createAgreement(gw, { models: ['gpt-a', 'gpt-b'] });
  const before = (await mockStats(mock)).requests;
  const page = await client(secret).models.list();
  assert.deepEqual(page.data.map((m) => [m.id, m.object, m.owned_by]), [['gpt-a', 'model', 'mock'], ['gpt-b', 'model', 'mock']]);
  assert.equal(page.data[0].created, Math.floor(Date.parse(allocation.window.starts_at) / 1000));
  assert.equal((await mockStats(mock)).requests, before);
  assert.equal((await allocationOf(allocation.id)).current.requests_last_minute, 0, 'counts toward nothing');
});

test("models.list without an agreement list passes the provider's own through", async () => {
  const { allocation, secret } = await createAgreement(gw);
  assert.deepEqual(await modelIds(secret), ['mock-model-a', 'mock-model-b']);
  const last = await mockLast(mock);
  assert.equal(last.target, 'GET /v1/models');
  assert.equal(last.authorization, `Bearer ${PROVIDER_KEY}`, "the supplier's key, never the buyer's");
  assert.deepEqual((await allocationOf(allocation.id)).used, { input_tokens: 0, output_tokens: 0 });
});

test('models.list is refused for a suspended allocation', async () => {
  const { allocation, secret } = await createAgreement(gw, { models: ['gpt-a'] });
  assert.equal((await gw.admin('POST', `/admin/v1/allocations/${allocation.id}/suspend`)).status, 200);
  await assert.rejects(client(secret).models.list(),
    (err) => err.status === 403 && err.code === 'allocation_not_active');
});

// ---------------------------------------------------------------- Stored responses

test("responses.retrieve and delete reach the allocation's own response; another's is 404 unasked", async () => {
  const mine = await createAgreement(gw);
  const theirs = await createAgreement(gw);
  const c = client(mine.secret);
  const created = await c.responses.create({ model: 'mock', input: 'remember me' });
  const got = await c.responses.retrieve(created.id);
  assert.equal(got.id, created.id);
  assert.equal(got.output_text, created.output_text);
  const items = await c.responses.inputItems.list(created.id, { limit: 5 });
  assert.equal(items.data[0].content[0].text, 'remember me');
  assert.match((await mockLast(mock)).target, new RegExp(`^GET /v1/responses/${created.id}/input_items\\?limit=5`));

  const before = (await mockStats(mock)).requests;
  const other = client(theirs.secret);
  await assert.rejects(other.responses.retrieve(created.id), (err) => err instanceof OpenAI.NotFoundError);
  await assert.rejects(other.responses.delete(created.id), (err) => err instanceof OpenAI.NotFoundError);
  await assert.rejects(other.responses.inputItems.list(created.id), (err) => err instanceof OpenAI.NotFoundError);
  assert.equal((await mockStats(mock)).requests, before, 'the provider was never asked');

  await c.responses.delete(created.id);
  assert.equal((await mockLast(mock)).target, `DELETE /v1/responses/${created.id}`);
  await assert.rejects(c.responses.retrieve(created.id), (err) => err instanceof OpenAI.NotFoundError,
    "the provider's own 404 once deleted");
  const a = await allocationOf(mine.allocation.id);
  assert.deepEqual(a.used, { input_tokens: 10, output_tokens: 7 }, 'only the create was booked');
});

test('a streamed response is retrievable once its stream ends', async () => {
  const { secret } = await createAgreement(gw);
  const c = client(secret);
  let id;
  for await (const e of await c.responses.create({ model: 'mock', input: 'x', stream: true })) {
    if (e.type === 'response.completed') id = e.response.id;
  }
  assert.equal((await c.responses.retrieve(id)).status, 'completed');
});
