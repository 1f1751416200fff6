// The clients buyers' tools are built on, pointed at the gateway as their docs say
// (docs/clients.md holds the client × API table this file checks). Each call must work
// unchanged, and what the gateway books must equal what the provider reported.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { generateText, streamText } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { ChatOpenAI } from '@langchain/openai';
import { ChatAnthropic } from '@langchain/anthropic';
import { Agent, run, setDefaultOpenAIClient, setTracingDisabled } from '@openai/agents';
import { gatewayForFile, createAgreement } from './harness.mjs';

let gw;
gatewayForFile({
  gateway: {
    extraToml: (mock) => `
[[providers]]
name = "mock-anthropic"
kind = "anthropic"
base_url = "${mock.url}/v1"
api_key_env = "CAIRVA_TEST_PROVIDER_KEY"
`,
  },
}, async (_m, g) => { gw = g; });

async function eventsOf(allocationId) {
  const r = await gw.admin('GET', `/admin/v1/events?allocation_id=${allocationId}`);
  assert.equal(r.status, 200, r.text);
  return r.body.data;
}

async function requestsOf(allocationId) {
  const r = await gw.admin('GET', `/admin/v1/requests?allocation_id=${allocationId}`);
  assert.equal(r.status, 200, r.text);
  return r.body.data;
}

// The allocation's bookings: each request booked once, the sums the provider reported.
async function booked(allocationId) {
  const events = await eventsOf(allocationId);
  const requests = await requestsOf(allocationId);
  for (const r of requests) assert.equal(r.state, 'booked', `request ${r.id} is ${r.state}`);
  return {
    count: events.length,
    input: events.reduce((s, e) => s + e.input_tokens, 0),
    output: events.reduce((s, e) => s + e.output_tokens, 0),
    providerIds: events.map((e) => e.provider_request_id),
  };
}

async function openaiAgreement() {
  return createAgreement(gw);
}

async function anthropicAgreement() {
  return createAgreement(gw, { provider: 'mock-anthropic' });
}

// ---------------------------------------------------------------- Vercel AI SDK

test('AI SDK: openai(model), the default (Responses API), generateText books the usage it reports', async () => {
  const { allocation, secret } = await openaiAgreement();
  const openai = createOpenAI({ baseURL: gw.url + '/v1', apiKey: secret });
  const result = await generateText({ model: openai('mock'), prompt: 'Say hello', maxRetries: 0 });
  assert.ok(result.text.length > 0, 'text came back');
  const b = await booked(allocation.id);
  assert.equal(b.count, 1);
  assert.match(b.providerIds[0], /^resp_/, 'the Responses API was called');
  assert.equal(b.input, result.usage.inputTokens);
  assert.equal(b.output, result.usage.outputTokens);
});

test('AI SDK: openai(model) streamText gets the whole text and books the stream usage', async () => {
  const { allocation, secret } = await openaiAgreement();
  const openai = createOpenAI({ baseURL: gw.url + '/v1', apiKey: secret });
  const errors = [];
  const result = streamText({ model: openai('mock'), prompt: 'Say hello', maxRetries: 0, onError: ({ error }) => errors.push(error) });
  let text = '';
  for await (const piece of result.textStream) text += piece;
  const usage = await result.usage;
  assert.deepEqual(errors, []);
  assert.ok(text.length > 0);
  const b = await booked(allocation.id);
  assert.match(b.providerIds[0], /^resp_/);
  assert.equal(b.input, usage.inputTokens);
  assert.equal(b.output, usage.outputTokens);
});

test('AI SDK: openai.chat(model) generateText and streamText (Chat Completions)', async () => {
  const { allocation, secret } = await openaiAgreement();
  const openai = createOpenAI({ baseURL: gw.url + '/v1', apiKey: secret });
  const plain = await generateText({ model: openai.chat('mock'), prompt: 'Say hello', maxRetries: 0 });
  const streamed = streamText({ model: openai.chat('mock'), prompt: 'Say hello', maxRetries: 0 });
  let text = '';
  for await (const piece of streamed.textStream) text += piece;
  const streamedUsage = await streamed.usage;
  assert.ok(plain.text.length > 0 && text.length > 0);
  const b = await booked(allocation.id);
  assert.equal(b.count, 2);
  assert.equal(b.input, plain.usage.inputTokens + streamedUsage.inputTokens);
  assert.equal(b.output, plain.usage.outputTokens + streamedUsage.outputTokens);
});

test('AI SDK: @ai-sdk/anthropic generateText and streamText (Messages), cache fields booked as input', async () => {
  const { allocation, secret } = await anthropicAgreement();
  const anthropic = createAnthropic({ baseURL: gw.url + '/v1', apiKey: secret });
  const plain = await generateText({ model: anthropic('mock'), prompt: 'Say hello', maxRetries: 0 });
  assert.ok(plain.text.length > 0);
  // The AI SDK's inputTokens is the whole input, cache reads and writes included, as booked.
  const expectedInput = plain.usage.inputTokens;
  const streamed = streamText({ model: anthropic('mock'), prompt: 'Say hello', maxRetries: 0 });
  let text = '';
  for await (const piece of streamed.textStream) text += piece;
  await streamed.usage;
  assert.ok(text.length > 0);
  const b = await booked(allocation.id);
  assert.equal(b.count, 2);
  assert.match(b.providerIds[0], /^msg_/);
  // The two calls are the same request to a deterministic provider: each books the same.
  assert.equal(b.input, 2 * expectedInput);
  assert.equal(b.output, 2 * plain.usage.outputTokens);
});

// ---------------------------------------------------------------- LangChain

test('LangChain: ChatOpenAI (Chat Completions) invoke and stream book the usage they report', async () => {
  const { allocation, secret } = await openaiAgreement();
  const model = new ChatOpenAI({ model: 'mock', apiKey: secret, configuration: { baseURL: gw.url + '/v1' }, maxRetries: 0 });
  const reply = await model.invoke('Say hello');
  assert.ok(String(reply.content).length > 0);
  let streamedUsage;
  let text = '';
  for await (const chunk of await model.stream('Say hello')) {
    text += chunk.content;
    if (chunk.usage_metadata) streamedUsage = chunk.usage_metadata;
  }
  assert.ok(text.length > 0);
  assert.ok(streamedUsage, 'the stream reported usage');
  const b = await booked(allocation.id);
  assert.equal(b.count, 2);
  assert.equal(b.input, reply.usage_metadata.input_tokens + streamedUsage.input_tokens);
  assert.equal(b.output, reply.usage_metadata.output_tokens + streamedUsage.output_tokens);
});

test('LangChain: ChatOpenAI with useResponsesApi invoke and stream', async () => {
  const { allocation, secret } = await openaiAgreement();
  const model = new ChatOpenAI({
    model: 'mock', apiKey: secret, configuration: { baseURL: gw.url + '/v1' }, maxRetries: 0, useResponsesApi: true,
  });
  const reply = await model.invoke('Say hello');
  assert.ok(reply.text.length > 0);
  let streamedUsage;
  let text = '';
  for await (const chunk of await model.stream('Say hello')) {
    text += chunk.text;
    if (chunk.usage_metadata) streamedUsage = chunk.usage_metadata;
  }
  assert.ok(text.length > 0);
  const b = await booked(allocation.id);
  assert.equal(b.count, 2);
  assert.ok(b.providerIds.every((id) => id.startsWith('resp_')), 'the Responses API was called');
  assert.equal(b.input, reply.usage_metadata.input_tokens + streamedUsage.input_tokens);
  assert.equal(b.output, reply.usage_metadata.output_tokens + streamedUsage.output_tokens);
});

test('LangChain: ChatAnthropic invoke and stream (Messages)', async () => {
  const { allocation, secret } = await anthropicAgreement();
  const model = new ChatAnthropic({
    model: 'mock', apiKey: secret, anthropicApiUrl: gw.url, maxRetries: 0, maxTokens: 256,
  });
  const reply = await model.invoke('Say hello');
  assert.ok(reply.text.length > 0);
  let text = '';
  for await (const chunk of await model.stream('Say hello')) text += chunk.text;
  assert.ok(text.length > 0);
  const b = await booked(allocation.id);
  assert.equal(b.count, 2);
  assert.ok(b.providerIds.every((id) => id.startsWith('msg_')));
  // LangChain's input_tokens sums the cache fields too, as the gateway books them.
  assert.equal(b.input, 2 * reply.usage_metadata.input_tokens);
  assert.equal(b.output, 2 * reply.usage_metadata.output_tokens);
});

// ---------------------------------------------------------------- OpenAI Agents SDK

test('OpenAI Agents SDK: one agent run on the default model provider (Responses API)', async () => {
  const { allocation, secret } = await openaiAgreement();
  setTracingDisabled(true);
  setDefaultOpenAIClient(new OpenAI({ apiKey: secret, baseURL: gw.url + '/v1', maxRetries: 0 }));
  const agent = new Agent({ name: 'Greeter', instructions: 'Greet the user.', model: 'mock' });
  const result = await run(agent, 'Hello');
  assert.ok(String(result.finalOutput).length > 0);
  const usage = result.rawResponses.reduce(
    (s, r) => ({ input: s.input + r.usage.inputTokens, output: s.output + r.usage.outputTokens }), { input: 0, output: 0 });
  const b = await booked(allocation.id);
  assert.equal(b.count, result.rawResponses.length);
  assert.ok(b.providerIds.every((id) => id.startsWith('resp_')));
  assert.equal(b.input, usage.input);
  assert.equal(b.output, usage.output);
});
