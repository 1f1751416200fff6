// The SIGKILL loop of issue 7 (driven by scripts/kill-loop.sh): the embedded store under
// load, killed at random moments — including between the provider's answer and the
// booking (the provider delays its answers and drips its streams so that many requests
// are always at that point) — restarted after each kill, audited after each kill.
// Prints one JSON line of figures: kills, acknowledged bookings, lost (must be 0), double
// bookings (must be 0), restart-to-first-200 times.
import { execFileSync } from 'node:child_process';
import { startMock, startGateway, createAgreement, chat, sleep, BIN } from './harness.mjs';

const KILLS = Number(process.env.KILLS ?? 200);
const SEED = Number(process.env.SEED ?? 20261130);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 24);
let seed = SEED;
const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;

function audit(store) {
  try {
    return { code: 0, out: execFileSync(BIN, ['audit', '--store', store], { encoding: 'utf8' }) };
  } catch (e) {
    return { code: e.status, out: String(e.stdout) + String(e.stderr) };
  }
}

async function streamed(gw, secret, model) {
  const res = await fetch(gw.url + '/v1/chat/completions', {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'kill loop' }] }),
  });
  if (res.status !== 200) return null;
  const text = await res.text();  // throws when the gateway dies mid-stream
  const events = text.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));
  if (events.at(-1) !== '[DONE]') return null;
  const usage = JSON.parse(events.at(-2));
  return usage.usage_source === 'provider' ? { id: usage.id, usage: usage.usage } : null;
}

// One client: requests back to back until `stop()`; acknowledged bookings go to `acked`.
function client(gwRef, secret, acked, stopFlag) {
  return (async () => {
    while (!stopFlag.stop) {
      const delay = Math.floor(rand() * 30);
      const p = Math.floor(rand() * 50) + 1;
      const c = Math.floor(rand() * 20) + 1;
      try {
        if (rand() < 0.5) {
          const r = await chat(gwRef.gw, secret, { model: `mock?delay-ms=${delay}&usage=${p},${c}`, messages: [{ role: 'user', content: 'kill loop' }] });
          if (r.status === 200 && r.body?.usage_source === 'provider') acked.set(r.body.id, [p, c]);
        } else {
          const r = await streamed(gwRef.gw, secret, `mock?delay-ms=${delay}&chunk-delay-ms=2&usage=${p},${c}`);
          if (r) acked.set(r.id, [r.usage.prompt_tokens, r.usage.completion_tokens]);
        }
      } catch { /* the gateway died under this request: not acknowledged */ }
    }
  })();
}

async function allEvents(gw, allocationId) {
  const events = [];
  let after = '';
  for (;;) {
    const page = await gw.admin('GET', `/admin/v1/events?allocation_id=${allocationId}&limit=1000${after ? `&after=${after}` : ''}`);
    if (page.status !== 200) throw new Error(`events: ${page.status} ${page.text}`);
    if (page.body.data.length === 0) break;
    events.push(...page.body.data);
    after = page.body.data.at(-1).id;
  }
  return events;
}

async function firstOk(gw, secret) {
  for (;;) {
    try {
      const r = await chat(gw, secret, { model: 'mock', messages: [{ role: 'user', content: 'probe' }] });
      if (r.status === 200) return;
    } catch { /* not yet */ }
    await sleep(1);
  }
}

const mock = await startMock(['--threads', '2']);
const gwRef = { gw: await startGateway(mock) };
const { dir, port, adminPort, store } = gwRef.gw;
const { allocation, secret } = await createAgreement(gwRef.gw, { input_tokens: 1e12, output_tokens: 1e12, requests_per_minute: 1_000_000, max_concurrency: 10_000 });
const acked = new Map();  // provider id -> [input, output] the client saw acknowledged
const recovery = [];
let auditsFailed = 0;
const started = Date.now();
try {
  for (let k = 0; k < KILLS; k++) {
    const flag = { stop: false };
    const clients = Array.from({ length: CONCURRENCY }, () => client(gwRef, secret, acked, flag));
    await sleep(20 + Math.floor(rand() * 80));
    await gwRef.gw.stop('SIGKILL');
    flag.stop = true;
    await Promise.all(clients);
    const a = audit(store);
    if (a.code !== 0) {
      auditsFailed++;
      console.error(`audit after kill ${k + 1} failed:\n${a.out}`);
    }
    const t0 = performance.now();
    gwRef.gw = await startGateway(mock, { dir, port, adminPort });
    await firstOk(gwRef.gw, secret);
    recovery.push(performance.now() - t0);
    if ((k + 1) % 20 === 0) console.error(`kill ${k + 1}/${KILLS}: acknowledged ${acked.size}`);
  }
  const events = await allEvents(gwRef.gw, allocation.id);
  const byProvider = new Map();
  const byRequest = new Map();
  for (const e of events) {
    byProvider.set(e.provider_request_id, (byProvider.get(e.provider_request_id) ?? 0) + 1);
    byRequest.set(e.request_id, (byRequest.get(e.request_id) ?? 0) + 1);
  }
  const doubles = [...byProvider.values(), ...byRequest.values()].filter((n) => n > 1).length;
  const booked = new Map(events.map((e) => [e.provider_request_id, [e.input_tokens, e.output_tokens]]));
  let lost = 0;
  let wrong = 0;
  for (const [id, counts] of acked) {
    const b = booked.get(id);
    if (!b) lost++;
    else if (b[0] !== counts[0] || b[1] !== counts[1]) wrong++;
  }
  const status = await gwRef.gw.admin('GET', `/admin/v1/allocations/${allocation.id}`);
  await gwRef.gw.stop();
  const final = audit(store);
  if (final.code !== 0) auditsFailed++;
  recovery.sort((x, y) => x - y);
  const q = (p) => Math.round(recovery[Math.min(recovery.length - 1, Math.floor(p * recovery.length))]);
  const figures = {
    kills: KILLS, seed: SEED, concurrency: CONCURRENCY, seconds: Math.round((Date.now() - started) / 1000),
    acknowledged: acked.size, events: events.length, lost, wrong_counts: wrong, double_bookings: doubles,
    usage_pending: status.body.current.usage_pending, audits_failed: auditsFailed,
    recovery_ms: { p50: q(0.5), p99: q(0.99), max: Math.round(recovery.at(-1)) },
  };
  console.log(JSON.stringify(figures));
  process.exitCode = lost === 0 && wrong === 0 && doubles === 0 && auditsFailed === 0 ? 0 : 1;
} finally {
  await gwRef.gw.stop();
  mock.child.kill();
  gwRef.gw.cleanup();
}
