// Money (issue 25, items 1, 2 and 5): a buyer key cannot take more than was sold.
//  - the provider always receives the limit that was held (SPEC §4), so requests that send
//    no max_tokens cannot book more output than the allowance;
//  - the input estimate counts everything a provider bills (SPEC §4's one rule);
//  - a service_tier that changes the supplier's price needs the agreement's leave (SPEC §2).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import {
  gatewayForFile, startGateway, createAgreement, chat, mockLast, BIN, ADMIN_TOKEN,
} from './harness.mjs';

let mock, gw;
gatewayForFile({}, async (m, g) => {
  mock = m;
  gw = g;
});

function client(g, secret) {
  return new OpenAI({ apiKey: secret, baseURL: g.url + '/v1', maxRetries: 0 });
}

async function requestsOf(g, allocationId) {
  return (await g.admin('GET', `/admin/v1/requests?allocation_id=${allocationId}`)).body.data;
}

// The mock writes this many completion tokens per choice unless the request's limit stops it.
const UNCAPPED_OUTPUT = 16000;

test('requests without max_tokens cannot book more output than the allowance', async () => {
  // 8 x the default hold (1024) is exactly the allowance: all 8 are admitted. Each must reach
  // the provider capped at what was held, or a model that writes 16,000 tokens books 128,000.
  const { allocation, secret } = await createAgreement(gw, { output_tokens: 8192 });
  const openai = client(gw, secret);
  const replies = await Promise.allSettled(Array.from({ length: 8 }, () => openai.chat.completions.create({
    model: `mock?output=${UNCAPPED_OUTPUT}`, messages: [{ role: 'user', content: 'write a long story' }],
  })));
  const status = await gw.admin('GET', `/admin/v1/allocations/${allocation.id}`);
  assert.ok(status.body.used.output_tokens <= 8192,
    `booked output ${status.body.used.output_tokens} never exceeds the 8192 sold`);
  for (const r of replies) {
    assert.equal(r.status, 'fulfilled', String(r.reason));
    assert.equal(r.value.usage.completion_tokens, 1024);
  }
  assert.equal(status.body.used.output_tokens, 8192);
  assert.deepEqual(status.body.held, { input_tokens: 0, output_tokens: 0 });
  const sent = (await mockLast(mock)).body;
  assert.equal(sent.max_completion_tokens, 1024, 'the held limit written in the default limit_field');
  assert.equal(sent.max_tokens, undefined);
});

test('the held limit is written without announcing a lowering, and a sent null is replaced', async () => {
  const { secret } = await createAgreement(gw);
  const r = await chat(gw, secret, { model: 'mock', messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('x-cairva-max-tokens-lowered'), null, 'nothing was lowered');
  const nulls = await chat(gw, secret, {
    model: `mock?output=${UNCAPPED_OUTPUT}`, messages: [{ role: 'user', content: 'hi' }],
    max_tokens: null, max_completion_tokens: null,
  });
  assert.equal(nulls.status, 200);
  assert.equal(nulls.body.usage.completion_tokens, 1024);
  const sent = (await mockLast(mock)).body;
  assert.equal(sent.max_tokens, 1024);
  assert.equal(sent.max_completion_tokens, 1024);
  // Both limits sent: both equal the held one (max_completion_tokens wins the hold).
  const both = await chat(gw, secret, {
    model: `mock?output=${UNCAPPED_OUTPUT}`, messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 5000, max_completion_tokens: 40,
  });
  assert.equal(both.status, 200);
  assert.equal(both.headers.get('x-cairva-max-tokens-lowered'), null);
  const sentBoth = (await mockLast(mock)).body;
  assert.equal(sentBoth.max_tokens, 40);
  assert.equal(sentBoth.max_completion_tokens, 40);
});

test('a provider with limit_field = "max_tokens" gets the held limit there', async () => {
  const other = await startGateway(mock, { extraToml: 'limit_field = "max_tokens"\n' });
  try {
    const { secret } = await createAgreement(other, { output_tokens: 300 });
    const r = await chat(other, secret, { model: `mock?output=${UNCAPPED_OUTPUT}`, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('x-cairva-max-tokens-lowered'), '300', 'the default hold lowered to fit');
    assert.equal(r.body.usage.completion_tokens, 300);
    const sent = (await mockLast(mock)).body;
    assert.equal(sent.max_tokens, 300);
    assert.equal(sent.max_completion_tokens, undefined);
  } finally {
    await other.stop();
    other.cleanup();
  }
});

// 270 KB of text in places the old estimate skipped: every one of them a provider bills.
const BIG = 'x'.repeat(270_000);
const BILLED_ELSEWHERE = {
  functions: { functions: [{ name: 'lookup', description: BIG, parameters: { type: 'object', properties: {} } }] },
  response_format: {
    response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object', description: BIG } } },
  },
  prediction: { prediction: { type: 'content', content: BIG } },
};

for (const [name, extra] of Object.entries(BILLED_ELSEWHERE)) {
  test(`a 270 KB ${name} raises the input hold, and is refused past the input allowance`, async () => {
    const { allocation, secret } = await createAgreement(gw);
    const r = await chat(gw, secret, { model: 'mock', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5, ...extra });
    assert.equal(r.status, 200, r.text);
    const [req] = await requestsOf(gw, allocation.id);
    assert.ok(req.hold.input_tokens >= 90_000, `hold ${JSON.stringify(req.hold)} counts the ${name}`);
    // An allowance smaller than the estimate refuses it outright.
    const small = await createAgreement(gw, { input_tokens: 50_000 });
    const refused = await chat(gw, small.secret, { model: 'mock', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5, ...extra });
    assert.equal(refused.status, 402);
    assert.equal(refused.body.error.code, 'allocation_exhausted');
  });
}

test('an image part holds its fixed media estimate whatever its size', async () => {
  const { allocation, secret } = await createAgreement(gw);
  const r = await chat(gw, secret, {
    model: 'mock', max_tokens: 5,
    messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,' + 'A'.repeat(100_000) } }] }],
  });
  assert.equal(r.status, 200, r.text);
  const [req] = await requestsOf(gw, allocation.id);
  // 1600 for the image, and the 63 code points of keys and strings around it: 21 + 4 + 8.
  assert.equal(req.hold.input_tokens, 1600 + 21 + 4 + 8);
});

test('service_tier beyond auto/default is refused 400 unless the agreement lists it, counting toward nothing', async () => {
  const { allocation, secret } = await createAgreement(gw, { requests_per_minute: 1 });
  const body = (tier) => ({ model: 'mock', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5, service_tier: tier });
  for (const tier of ['priority', 'flex', 'scale']) {
    const r = await chat(gw, secret, body(tier));
    assert.equal(r.status, 400, tier);
    assert.equal(r.body.error.code, 'invalid_request');
    assert.match(r.body.error.message, new RegExp(`service_tier "${tier}"`));
  }
  const ill = await chat(gw, secret, body(7));
  assert.equal(ill.status, 400);
  assert.equal(ill.body.error.message, 'service_tier must be a string');
  const status = await gw.admin('GET', `/admin/v1/allocations/${allocation.id}`);
  assert.equal(status.body.current.requests_last_minute, 0, 'refused before admission');
  assert.equal((await requestsOf(gw, allocation.id)).length, 0);
  // auto and null pass (one request: the agreement's rpm is 1).
  assert.equal((await chat(gw, secret, body('auto'))).status, 200);
  for (const tier of ['default', null]) {
    const other = await createAgreement(gw);
    assert.equal((await chat(gw, other.secret, body(tier))).status, 200, String(tier));
  }
});

test('an agreement listing service_tiers allows them, through the admin API and the CLI', async () => {
  const listed = await createAgreement(gw, { service_tiers: ['priority'] });
  assert.deepEqual(listed.agreement.service_tiers, ['priority']);
  const openai = client(gw, listed.secret);
  const res = await openai.chat.completions.create({
    model: 'mock', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5, service_tier: 'priority',
  });
  assert.equal(res.usage_source, 'provider');
  assert.equal((await mockLast(mock)).body.service_tier, 'priority');
  await assert.rejects(
    openai.chat.completions.create({ model: 'mock', messages: [{ role: 'user', content: 'hi' }], service_tier: 'flex' }),
    (e) => e.status === 400 && /service_tier "flex"/.test(e.message));
  const shown = await gw.admin('GET', `/admin/v1/agreements/${listed.agreement.id}`);
  assert.equal(shown.status, 200);
  assert.deepEqual(shown.body.service_tiers, ['priority'], 'stored and shown');

  const run = promisify(execFile);
  const cli = await run(BIN, ['agreement', 'create', '--supplier', 'acme', '--buyer', 'bob', '--provider', 'mock',
    '--input-tokens', '5000', '--output-tokens', '3000', '--duration', '1h', '--rpm', '60', '--tpm', '100000',
    '--concurrency', '4', '--service-tier', 'priority', '--service-tier', 'flex', '--json'],
  { env: { ...process.env, CAIRVA_ADMIN_URL: gw.adminUrl, CAIRVA_ADMIN_TOKEN: ADMIN_TOKEN } });
  const created = JSON.parse(cli.stdout);
  assert.deepEqual(created.agreement.service_tiers, ['priority', 'flex']);
  const viaCli = await chat(gw, created.api_key.secret, {
    model: 'mock', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5, service_tier: 'flex',
  });
  assert.equal(viaCli.status, 200);
});
