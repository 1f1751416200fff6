// The rate-limit reset headers over real HTTP (SPEC §3, §6): x-ratelimit-reset-requests and
// x-ratelimit-reset-tokens on every authenticated response, retry-after-ms on a 429 for
// requests_per_minute or tokens_per_minute, and the official OpenAI client retrying after it.
// The gateway has no clock a test can move, so each figure is checked against what the test
// controls: an instant the store stamps and reads at once, a provider delay that must pass
// between two stamps, and two readings of one window in causal order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import OpenAI from 'openai';
import { gatewayForFile, createAgreement, chat } from './harness.mjs';

let gw;
gatewayForFile({}, async (_m, g) => {
  gw = g;
});

const msg = [{ role: 'user', content: 'x' }];
const windowMs = 60_000;

// Milliseconds in OpenAI's duration notation ("0s", "20ms", "1.5s", "1m0s"), or NaN.
function durationMs(text) {
  const ms = /^(\d+)ms$/.exec(text ?? '');
  if (ms) return Number(ms[1]);
  const m = /^(?:(\d+)h)?(?:(\d+)m)?(\d+(?:\.\d{1,3})?)s$/.exec(text ?? '');
  if (!m) return NaN;
  return Math.round(Number(m[1] ?? 0) * 3_600_000 + Number(m[2] ?? 0) * 60_000 + Number(m[3]) * 1000);
}

async function current(secret) {
  const res = await fetch(gw.url + '/v1/allocations/current', { headers: { authorization: `Bearer ${secret}` } });
  await res.arrayBuffer();
  return res.headers;
}

test('requests_per_minute: the 429 says when the oldest start leaves, and the OpenAI client waits that long', async () => {
  const { secret } = await createAgreement(gw, { requests_per_minute: 1 });
  // The start is stamped at admission and the response's figures read at that same instant:
  // the last slot's start leaves a full window later, exactly.
  const delayMs = 1500;
  const first = await chat(gw, secret, { model: `mock?delay-ms=${delayMs}`, messages: msg });
  assert.equal(first.status, 200);
  assert.equal(first.headers.get('x-ratelimit-remaining-requests'), '0');
  assert.equal(first.headers.get('x-ratelimit-reset-requests'), '1m0s');
  assert.equal(first.headers.get('x-ratelimit-reset-tokens'), '0s');

  // The provider held the first request delayMs after its start, so the window has at most
  // a minute less that; the status endpoint reads it before the refusal does.
  const statusReset = durationMs((await current(secret)).get('x-ratelimit-reset-requests'));
  const refused = await chat(gw, secret, { model: 'm', messages: msg });
  assert.equal(refused.status, 429);
  assert.equal(refused.body.error.limit, 'requests_per_minute');
  assert.equal(refused.headers.get('retry-after'), '60', 'the seed header stays as written');
  const retryMs = Number(refused.headers.get('retry-after-ms'));
  assert.ok(Number.isInteger(retryMs) && retryMs > 0, refused.headers.get('retry-after-ms'));
  assert.ok(retryMs <= windowMs - delayMs + 1, `retry-after-ms ${retryMs} counts the ${delayMs} ms that passed`);
  assert.equal(durationMs(refused.headers.get('x-ratelimit-reset-requests')), retryMs);
  assert.ok(statusReset >= retryMs, `read earlier, the status says ${statusReset} >= ${retryMs}`);
  assert.equal(refused.headers.get('x-ratelimit-reset-tokens'), '0s');

  // The official client: one retry, after the gateway's retry-after-ms (it reads that before
  // Retry-After). The wrapper times each attempt on the monotonic clock.
  const attempts = [];
  const timedFetch = async (url, init) => {
    const started = performance.now();
    const before = attempts.at(-1);
    if (before) {
      // Node's timers run on a millisecond loop clock and may fire a millisecond or two
      // early; whatever their precision, the retry leaves no earlier than the time
      // advertised, so that its answer depends on the gateway's window alone.
      while (performance.now() < before.answeredAt + before.advertised) {
        await new Promise((r) => setTimeout(r, before.answeredAt + before.advertised - performance.now() + 1));
      }
    }
    const res = await fetch(url, init);
    attempts.push({ started, status: res.status, answeredAt: performance.now(), advertised: Number(res.headers.get('retry-after-ms')) });
    return res;
  };
  const client = new OpenAI({ apiKey: secret, baseURL: gw.url + '/v1', maxRetries: 1, fetch: timedFetch, timeout: 120_000 });
  const completion = await client.chat.completions.create({ model: 'm', messages: msg });
  assert.equal(completion.choices[0].message.content, 'Hello from the mock provider.');
  assert.deepEqual(attempts.map((a) => a.status), [429, 200]);
  const [no, yes] = attempts;
  assert.ok(no.advertised > 0 && no.advertised <= retryMs, `${no.advertised} <= ${retryMs}`);
  // The client's own wait (not Retry-After's 60 s, not its default back-off of a second or two).
  const waited = yes.started - no.answeredAt;
  assert.ok(waited >= no.advertised - 3, `the client waited ${waited} ms of the ${no.advertised} advertised`);
});

test('tokens_per_minute: the 429 says when enough booked tokens leave, consistently with the headers before it', async () => {
  const { secret } = await createAgreement(gw, { tokens_per_minute: 30 });
  // Each response shows the window as its own admission left it, before its own booking.
  const a = await chat(gw, secret, { model: 'm', messages: msg });  // books 17
  assert.equal(a.status, 200);
  assert.equal(a.headers.get('x-ratelimit-reset-tokens'), '0s');
  const b = await chat(gw, secret, { model: 'm', messages: msg });  // 17 in the window: room; books 17 -> 34
  assert.equal(b.status, 200);
  assert.equal(b.headers.get('x-ratelimit-reset-tokens'), '0s');
  // 34 >= 30: the first booking's 17 must leave (17 < 30 then). Two readings of that one
  // instant, in order: the later one names a wait no longer than the earlier.
  const statusReset = durationMs((await current(secret)).get('x-ratelimit-reset-tokens'));
  assert.ok(statusReset > 0 && statusReset <= windowMs, `status: ${statusReset}`);
  const refused = await chat(gw, secret, { model: 'm', messages: msg });
  assert.equal(refused.status, 429);
  assert.equal(refused.body.error.limit, 'tokens_per_minute');
  assert.equal(refused.headers.get('retry-after'), '60');
  const retryMs = Number(refused.headers.get('retry-after-ms'));
  assert.ok(Number.isInteger(retryMs) && retryMs > 0 && retryMs <= statusReset, `${retryMs} <= ${statusReset}`);
  assert.equal(durationMs(refused.headers.get('x-ratelimit-reset-tokens')), retryMs);
  assert.equal(refused.headers.get('x-ratelimit-remaining-tokens'), '0');
  assert.equal(refused.headers.get('x-ratelimit-reset-requests'), '0s');
});

test('errors before admission carry the reset headers too, from the allocation as it is', async () => {
  const { secret } = await createAgreement(gw, { requests_per_minute: 1, models: ['gpt-a'] });
  assert.equal((await chat(gw, secret, { model: 'gpt-a', messages: msg })).status, 200);
  const bad = await chat(gw, secret, { model: 'gpt-b', messages: msg });
  assert.equal(bad.status, 400);
  const resetMs = durationMs(bad.headers.get('x-ratelimit-reset-requests'));
  assert.ok(resetMs > 0 && resetMs <= windowMs, bad.headers.get('x-ratelimit-reset-requests'));
  assert.equal(bad.headers.get('retry-after-ms'), null, 'only a rate-limit refusal names a wait');
});
