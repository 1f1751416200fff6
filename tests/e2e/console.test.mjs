// The web console (SPEC-CONSOLE §5) in a real browser: Debian's chromium driven by
// puppeteer-core, against real gateway and mock-provider processes, with traffic sent by the
// official openai client. Every wait is for a selector or a text, never for time.
// CAIRVA_CONSOLE_SCREENSHOTS=<folder> also writes each page at desktop and phone width
// (docs/console/ holds the committed ones); CAIRVA_CHROMIUM overrides /usr/bin/chromium;
// CAIRVA_CONSOLE_DEBUG=1 saves the page in /tmp when a text never appears.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, rmSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer from 'puppeteer-core';
import OpenAI from 'openai';
import { startMock, startGateway, createAgreement, ADMIN_TOKEN } from './harness.mjs';

const CHROMIUM = process.env.CAIRVA_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = process.env.CAIRVA_CONSOLE_SCREENSHOTS;
const desktop = { width: 1280, height: 800 };
// Not isMobile: changing it reloads the page, and each step builds on the page's state.
const phone = { width: 390, height: 844 };
const event_columns = 'id,allocation_id,request_id,provider_request_id,input_tokens,output_tokens,source,finality,evidence,booked_at,corrects';

let mock, gw, browser, page, downloads, cdp;
const problems = [];  // page errors and CSP violations: none may happen
const state = {};     // what one step leaves for the next

before(async () => {
  mock = await startMock();
  gw = await startGateway(mock);
  downloads = mkdtempSync(join(tmpdir(), 'cairva-console-dl-'));
  browser = await puppeteer.launch({
    executablePath: CHROMIUM, headless: true,
    args: [...(process.getuid?.() === 0 ? ['--no-sandbox'] : []), '--disable-dev-shm-usage', '--disable-gpu'],
  });
  cdp = await browser.target().createCDPSession();
  await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: downloads, eventsEnabled: true });
  page = await watched(await browser.newPage());
  await page.setViewport(desktop);
});

after(async () => {
  await browser?.close();
  mock?.child.kill();
  await state.running;
  await gw?.stop();
  gw?.cleanup();
  if (downloads) rmSync(downloads, { recursive: true, force: true });
});

async function watched(p) {
  p.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  p.on('console', (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) problems.push(`CSP: ${m.text()}`);
  });
  return p;
}

const client = (apiKey) => new OpenAI({ apiKey, baseURL: `${gw.url}/v1`, maxRetries: 0 });
const ask = (apiKey, model = 'gpt-4o-mini', extra = {}) => client(apiKey).chat.completions
  .create({ model, messages: [{ role: 'user', content: 'How much capacity is left?' }], max_tokens: 20, ...extra })
  .withResponse();
const num = (text) => Number(String(text).replace(/,/g, ''));

// Waits until the element's text matches `re`; returns the text.
async function textOf(sel, re, p = page) {
  try {
    await p.waitForFunction((s, src) => {
      const el = document.querySelector(s);
      return el && new RegExp(src).test(el.textContent);
    }, { timeout: 20_000 }, sel, re.source);
  } catch (e) {
    const seen = await p.$eval(sel, (el) => el.textContent).catch(() => '(no such element)');
    if (process.env.CAIRVA_CONSOLE_DEBUG) await p.screenshot({ path: '/tmp/cw-fail-' + Date.now() + '.png' });
    throw new Error(`${sel} never matched ${re}; it says: ${seen}`);
  }
  return p.$eval(sel, (el) => el.textContent);
}

async function fillField(sel, value, p = page) {
  await p.$eval(sel, (el) => { el.value = ''; });
  await p.type(sel, String(value));
}

async function confirm(p = page) {
  await p.waitForSelector('dialog.confirm[open]');
  await p.click('dialog.confirm button[value="yes"]');
  await p.waitForSelector('dialog.confirm', { hidden: true });
}

// Two animation frames: the layout after a viewport change has been painted.
const painted = (p) => p.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

async function shot(name, p = page, { fullPage = false } = {}) {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  for (const [label, viewport] of [['desktop', desktop], ['phone', phone]]) {
    await p.setViewport(viewport);
    await painted(p);
    await p.screenshot({ path: join(SHOTS, `${name}-${label}.png`), fullPage });
  }
  await p.setViewport(desktop);
  await painted(p);
}

async function go(hash) {
  await page.evaluate((h) => { location.hash = h; }, hash);
}

test('console files carry a strict CSP, DENY framing and per-file caching; API routes are untouched', async () => {
  for (const base of [gw.adminUrl, gw.url]) {
    const index = await fetch(base + '/');
    assert.equal(index.status, 200);
    assert.match(index.headers.get('content-type'), /^text\/html/);
    assert.equal(index.headers.get('cache-control'), 'no-cache');
    assert.equal(index.headers.get('x-frame-options'), 'DENY');
    const csp = index.headers.get('content-security-policy');
    assert.match(csp, /script-src 'self'/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(csp, /unsafe/);
    const html = await index.text();
    const script = html.match(/<script type="module" src="([^"]+)"/)[1];
    const js = await fetch(base + script);
    assert.equal(js.status, 200);
    assert.match(js.headers.get('content-type'), /^text\/javascript/);
    assert.equal(js.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    const head = await fetch(base + script, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(Number(head.headers.get('content-length')), (await js.arrayBuffer()).byteLength);
    assert.equal((await fetch(base + '/console/missing-0000.js')).status, 404);
    assert.equal((await fetch(base + '/', { method: 'POST' })).status, 405);
  }
  const adminHtml = await (await fetch(gw.adminUrl + '/')).text();
  const adminScript = adminHtml.match(/src="([^"]+\.js)"/)[1];
  assert.equal((await fetch(gw.url + adminScript)).status, 404, 'the operators\' code is not on the public listener');
  assert.equal((await fetch(gw.adminUrl + '/admin/v1/allocations')).status, 401);
  assert.equal((await fetch(gw.url + '/v1/allocations/current')).status, 401);
  assert.equal((await fetch(gw.url + '/healthz')).status, 200);
});

test('an operator signs in with the admin token, by keyboard', async () => {
  await page.goto(gw.adminUrl + '/');
  await page.waitForSelector('#token');
  await shot('sign-in');
  await page.type('#token', 'not-the-token');
  await page.keyboard.press('Enter');
  await textOf('.sign-in .status.error', /401/);
  await fillField('#token', ADMIN_TOKEN);
  await page.keyboard.press('Enter');
  await page.waitForSelector('table.allocations');
  assert.equal(await page.evaluate(() => document.cookie), '', 'no cookies');
  assert.equal(await page.evaluate(() => sessionStorage.getItem('cairva.admin_token')), ADMIN_TOKEN);
  // The navigation is reachable by Tab and followed by Enter.
  for (let i = 0; i < 12; i++) {
    if (await page.evaluate(() => document.activeElement?.dataset.nav === 'agreements')) break;
    await page.keyboard.press('Tab');
  }
  await page.keyboard.press('Enter');
  await page.waitForSelector('#agr-supplier');
});

test('an agreement is created through the form, which refuses what the API refuses', async () => {
  await fillField('#agr-supplier', 'acme-supply');
  await fillField('#agr-buyer', 'bob-buys');
  await fillField('#agr-provider', 'mock');
  await fillField('#agr-input_tokens', 2000);
  await fillField('#agr-output_tokens', 1000);
  await fillField('#agr-requests_per_minute', 0);
  await fillField('#agr-tokens_per_minute', 1000000);
  await fillField('#agr-max_concurrency', 8);
  await page.click('.agreement-form button[type=submit]');
  await textOf('.agreement-form .status.error', /requests_per_minute: must be an integer between 1/);
  assert.equal(await page.$eval('#agr-requests_per_minute', (el) => el.getAttribute('aria-invalid')), 'true');
  // What only the gateway knows (its providers) comes back from the API, word for word.
  await fillField('#agr-requests_per_minute', 600);
  await fillField('#agr-provider', 'no-such-provider');
  await page.click('.agreement-form button[type=submit]');
  await textOf('.agreement-form .status.error', /invalid_request/);
  assert.equal((await gw.admin('GET', '/admin/v1/allocations')).body.data.length, 0, 'nothing was created');

  await fillField('#agr-provider', 'mock');
  await page.click('.agreement-form button[type=submit]');
  state.secret = await textOf('[data-field=new-secret]', /^cv_/);
  state.keyId = await page.$eval('[data-field=new-secret]', (el) => el.dataset.keyId);
  state.allocation = await page.$eval('[data-field=new-allocation]', (el) => el.textContent);
  assert.match(state.allocation, /^alloc_/);
  await textOf('.page table tbody', /acme-supply/);
  await shot('agreements');
});

test('traffic through the openai client moves the numbers and the chart', async () => {
  await page.click('[data-field=new-allocation]');
  await textOf('[data-field=allocation-id]', new RegExp(state.allocation));
  await textOf('[data-field=used-input]', /^0$/);
  await textOf('[data-field=parties]', /acme-supply → bob-buys/);
  await page.waitForSelector('[data-field=chart-summary][data-requests="0"]');

  const sent = 12;
  for (let i = 0; i < sent; i++) {
    const { data } = await ask(state.secret);
    assert.ok(data.usage.completion_tokens > 0);
  }
  const a = (await gw.admin('GET', `/admin/v1/allocations/${state.allocation}`)).body;
  assert.ok(a.used.input_tokens > 0);
  await page.waitForFunction((want) => {
    const el = document.querySelector('[data-field=used-input]');
    return el && Number(el.textContent.replace(/,/g, '')) === want;
  }, { timeout: 20_000 }, a.used.input_tokens);
  assert.equal(num(await page.$eval('[data-field=used-output]', (el) => el.textContent)), a.used.output_tokens);
  const lastMinute = num(await page.$eval('[data-field=requests-last-minute]', (el) => el.textContent));
  assert.ok(lastMinute > 0 && lastMinute <= sent, `${lastMinute} requests in the last minute`);
  await page.waitForSelector(`[data-field=chart-summary][data-requests="${sent}"]`, { timeout: 20_000 });
  assert.equal(num(await page.$eval('[data-field=chart-summary]', (el) => el.dataset.inputTokens)), a.used.input_tokens);
  await page.click('button[data-bucket=minute]');
  await textOf('[data-field=chart-summary]', /^Last 60 minutes: 12 requests/);
  assert.ok(await page.$('.usage-chart canvas'), 'uPlot drew the chart');
});

test('a usage_pending request is reconciled from its form', async () => {
  const { data, response } = await ask(state.secret, 'mock?no-usage');
  assert.equal(data.usage, null);
  const id = response.headers.get('x-cairva-request-id');
  const row = `li.pending[data-key="${id}"]`;
  await page.waitForSelector(row, { timeout: 20_000 });
  await textOf('[data-field=usage-pending]', /^1$/);
  await shot('allocation', page, { fullPage: true });
  await page.type(`${row} input[name=input_tokens]`, '120');
  await page.type(`${row} input[name=output_tokens]`, '34');
  await page.type(`${row} textarea[name=evidence]`, 'provider dashboard, request log line 7');
  await page.click(`${row} button[type=submit]`);
  const said = await textOf(`${row} .status`, /Booked as evt_/);
  const r = (await gw.admin('GET', `/admin/v1/requests/${id}`)).body;
  assert.equal(r.state, 'booked');
  const events = (await gw.admin('GET', `/admin/v1/events?allocation_id=${state.allocation}&limit=1000`)).body.data;
  const ev = events.find((e) => e.request_id === id);
  assert.equal(ev.source, 'reconciliation');
  assert.equal(ev.input_tokens, 120);
  assert.equal(ev.evidence, 'provider dashboard, request log line 7');
  assert.ok(said.includes(ev.id));
  await textOf('[data-field=usage-pending]', /^0$/);
});

test('usage_pending requests are reconciled in bulk from a CSV: dry run first, then apply', async () => {
  const ids = [];
  for (let i = 0; i < 2; i++) ids.push((await ask(state.secret, 'mock?no-usage')).response.headers.get('x-cairva-request-id'));
  const csv = `request_id,input_tokens,output_tokens\n${ids[0]},50,10\n${ids[1]},60,12\nreq_unknown00000000000000000,1,1\n`;
  await page.click('a[data-nav=reconcile]');
  await page.waitForSelector('#bulk-csv');
  await page.type('#bulk-evidence', 'December metering export, rows 1-3');
  await page.type('#bulk-csv', csv);
  assert.equal(await page.$eval('button[data-action=apply]', (b) => b.disabled), true, 'apply comes after a dry run');
  await page.click('button[data-action=dry-run]');
  const dry = await textOf('[data-field=bulk-summary][data-mode=dry-run]', /booked/);
  assert.match(dry, /2 booked/);
  assert.match(dry, /1 not_found/);
  for (const id of ids) assert.equal((await gw.admin('GET', `/admin/v1/requests/${id}`)).body.state, 'usage_pending');
  await shot('reconcile');
  await page.click('button[data-action=apply]');
  await confirm();
  const applied = await textOf('[data-field=bulk-summary][data-mode=applied]', /booked/);
  assert.match(applied, /2 booked/);
  for (const id of ids) assert.equal((await gw.admin('GET', `/admin/v1/requests/${id}`)).body.state, 'booked');

  // The same file uploaded again books nothing new.
  const file = join(downloads, 'metering.csv');
  writeFileSync(file, csv);
  const input = await page.$('#bulk-file');
  await input.uploadFile(file);
  await textOf('.page .card .status', /Loaded metering\.csv/);
  await page.click('button[data-action=dry-run]');
  await textOf('[data-field=bulk-summary][data-mode=dry-run]', /2 already_booked/);
});

test('keys: one is created (secret shown once), one revoked, and its next request refused', async () => {
  await page.goto(`${gw.adminUrl}/#/allocations/${state.allocation}`);
  await page.waitForSelector(`tr[data-key="${state.keyId}"]`);
  await page.click('.page button:not([data-action])::-p-text(Create key)');
  state.secret2 = await textOf('.secret-box [data-field=new-secret]', /^cv_/);
  const newKey = await page.$eval('.secret-box [data-field=new-secret]', (el) => el.dataset.keyId);
  await page.waitForSelector(`tr[data-key="${newKey}"]`);
  await page.click(`tr[data-key="${state.keyId}"] button.danger`);
  await confirm();
  await textOf(`tr[data-key="${state.keyId}"] [data-field=key-state]`, /revoked/);
  await assert.rejects(ask(state.secret), (e) => e.status === 401);
  assert.equal((await ask(state.secret2)).response.status, 200);
});

test('suspend and resume ask for a confirmation, which Escape declines', async () => {
  await page.click('button[data-action=suspend]');
  await page.waitForSelector('dialog.confirm[open]');
  await page.keyboard.press('Escape');
  await page.waitForSelector('dialog.confirm', { hidden: true });
  assert.equal((await gw.admin('GET', `/admin/v1/allocations/${state.allocation}`)).body.state, 'active');
  await page.click('button[data-action=suspend]');
  await confirm();
  await textOf('[data-field=state]', /^suspended$/);
  await assert.rejects(ask(state.secret2), (e) => e.status === 403);
  await page.click('button[data-action=resume]');
  await confirm();
  await textOf('[data-field=state]', /^active$/);
  assert.equal((await ask(state.secret2)).response.status, 200);
});

test('events page in pages and as a CSV download; conflicts are listed', async () => {
  // A provider that repeats an id with other counts: the second is a conflict.
  await ask(state.secret2, 'mock?id=chatcmpl-dup-1&usage=10,5');
  await ask(state.secret2, 'mock?id=chatcmpl-dup-1&usage=11,5');
  const events = (await gw.admin('GET', `/admin/v1/events?allocation_id=${state.allocation}&limit=1000`)).body.data;
  assert.ok(events.length > 10, `${events.length} events`);

  await go(`/events?allocation_id=${state.allocation}`);
  await page.waitForSelector('#f-limit');
  await page.select('#f-limit', '10');
  await page.waitForFunction((first) => document.querySelector('tbody tr')?.dataset.key === first &&
    document.querySelectorAll('tbody tr').length === 10, {}, events[0].id);
  await page.click('nav.pager button::-p-text(Next)');
  await page.waitForFunction((first) => document.querySelector('tbody tr')?.dataset.key === first, {}, events[10].id);
  await textOf('.page-label', /Page 2/);
  await shot('events');

  const done = new Promise((resolve) => cdp.on('Browser.downloadProgress', (e) => {
    if (e.state === 'completed') resolve();
  }));
  await page.click('button.download');
  await done;
  const text = readFileSync(join(downloads, `usage-events-${state.allocation}.csv`), 'utf8');
  const lines = text.trim().split('\r\n');
  assert.equal(lines[0], event_columns);
  assert.equal(lines.length - 1, events.length);
  assert.ok(lines.some((l) => l.includes('December metering export')));

  await page.click('a[data-nav=conflicts]');
  await page.waitForSelector('#f-allocation_id');
  await textOf('table tbody', /chatcmpl-dup-1/);
  await shot('conflicts');
});

test('the allocations table filters by state, supplier and buyer', async () => {
  const other = await createAgreement(gw, { supplier: 'other-supplier', buyer: 'carol' });
  state.other = other;
  await page.click('a[data-nav=allocations]');
  await page.waitForSelector(`table.allocations tr[data-key="${other.allocation.id}"]`);
  await page.waitForSelector(`table.allocations tr[data-key="${state.allocation}"]`);
  // The listing filters on the server: each filter is a query parameter of the one listing.
  const listed = (name, value) => page.waitForRequest((r) => {
    const u = new URL(r.url());
    return u.pathname === '/admin/v1/allocations' && u.searchParams.get(name) === value;
  });
  const setFilter = async (sel, value) => {
    await page.click(sel, { clickCount: 3 });
    await page.keyboard.press('Backspace');
    if (value) await page.type(sel, value);
    await page.keyboard.press('Enter');
  };
  let asked = listed('buyer', 'carol');
  await setFilter('#f-buyer', 'carol');
  await asked;
  await page.waitForSelector(`table.allocations tr[data-key="${state.allocation}"]`, { hidden: true });
  await page.waitForSelector(`table.allocations tr[data-key="${other.allocation.id}"]`);
  await setFilter('#f-buyer', '');
  asked = listed('supplier', 'acme-supply');
  await setFilter('#f-supplier', 'acme-supply');
  await asked;
  await page.waitForSelector(`table.allocations tr[data-key="${other.allocation.id}"]`, { hidden: true });
  await page.waitForSelector(`table.allocations tr[data-key="${state.allocation}"]`);
  await setFilter('#f-supplier', '');
  asked = listed('state', 'suspended');
  await page.select('#f-state', 'suspended');
  await asked;
  await textOf('.page .status', /No allocation matches/);
  await page.select('#f-state', '');
  await page.waitForSelector(`table.allocations tr[data-key="${other.allocation.id}"]`);
  // At a phone's width nothing makes the page scroll sideways; wide tables scroll in place.
  await page.setViewport(phone);
  await painted(page);
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth));
  await page.setViewport(desktop);
  await shot('allocations');
});

test('a buyer signs in with its key and sees its own allocation only', async () => {
  const context = await browser.createBrowserContext();
  const buyer = await watched(await context.newPage());
  await buyer.setViewport(desktop);
  await buyer.goto(gw.url + '/');
  await buyer.waitForSelector('#api-key');
  await buyer.type('#api-key', state.secret2);
  await buyer.keyboard.press('Enter');
  await textOf('[data-field=allocation-id]', new RegExp(`^${state.allocation}$`), buyer);
  const a = (await gw.admin('GET', `/admin/v1/allocations/${state.allocation}`)).body;
  await buyer.waitForFunction((want) => {
    const el = document.querySelector('[data-field=used-input]');
    return el && Number(el.textContent.replace(/,/g, '')) === want;
  }, {}, a.used.input_tokens);
  await buyer.waitForFunction(() => Number(document.querySelector('[data-field=chart-summary]')?.dataset.requests) > 0);
  const text = await buyer.evaluate(() => document.body.textContent);
  assert.ok(!text.includes(state.other.allocation.id), 'another allocation is never shown');
  assert.equal(await buyer.evaluate(() => document.cookie), '');
  await shot('buyer', buyer, { fullPage: true });
  // The same page with another buyer's key shows that buyer's allocation.
  await buyer.click('#sign-out');
  await buyer.waitForSelector('#api-key');
  await buyer.type('#api-key', state.other.secret);
  await buyer.keyboard.press('Enter');
  await textOf('[data-field=allocation-id]', new RegExp(`^${state.other.allocation.id}$`), buyer);
  assert.ok(!(await buyer.evaluate(() => document.body.textContent)).includes(state.allocation));
  await context.close();
});

test('a request in flight is listed on its allocation\'s page while it runs', async () => {
  await page.goto(`${gw.adminUrl}/#/allocations/${state.allocation}`);
  await page.waitForSelector('[data-field=allocation-id]');
  // Still running when the file ends: stopping the mock first fails it at once.
  const running = ask(state.secret2, 'mock?delay-ms=20000').catch(() => 'failed');
  await textOf('table.stack tbody', /mock\?delay-ms=20000/);
  await textOf('[data-field=in-flight]', /^1$/);
  state.running = running;
});

test('no page error and no CSP violation happened', () => {
  assert.deepEqual(problems, []);
});
