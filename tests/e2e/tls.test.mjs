// Providers over HTTPS: certificates are verified by default (SPEC §9 security, issue 7).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import { execFileSync, execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, startMock, stopProcess, createAgreement, chat, BIN, ADMIN_TOKEN } from './harness.mjs';

let dir;
const servers = [];

function openssl(...args) { execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' }); }

// A CA, and a server certificate signed by it for `san`.
function makeCerts(name, san) {
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', '/CN=provider');
  writeFileSync(join(dir, `${name}.ext`), `subjectAltName=${san}\n`);
  openssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial',
    '-out', `${name}.pem`, '-days', '1', '-extfile', `${name}.ext`);
  return { key: readFileSync(join(dir, `${name}.key`)), cert: readFileSync(join(dir, `${name}.pem`)) };
}

async function startTlsProvider(creds) {
  const server = https.createServer(creds, (req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({
        id: `chatcmpl-tls-${Math.random().toString(36).slice(2)}`, object: 'chat.completion', model: 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: 'over TLS' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
      }));
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  servers.push(server);
  return { url: `https://127.0.0.1:${server.address().port}` };
}

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'cairva-tls-'));
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=cairva-test-ca');
});
after(() => {
  for (const s of servers) s.close();
  rmSync(dir, { recursive: true, force: true });
});

async function oneRequest(provider, extraToml) {
  const gw = await startGateway(provider, { extraToml });
  try {
    const { allocation, secret } = await createAgreement(gw);
    const r = await chat(gw, secret, { model: 'm', messages: [{ role: 'user', content: 'x' }] });
    const s = await gw.admin('GET', `/admin/v1/allocations/${allocation.id}`);
    return { r, s: s.body };
  } finally {
    await gw.stop();
    gw.cleanup();
  }
}

test('a provider whose certificate the system does not trust is refused: 502, nothing booked', async () => {
  const provider = await startTlsProvider(makeCerts('good', 'IP:127.0.0.1'));
  const { r, s } = await oneRequest(provider, '');
  assert.equal(r.status, 502);
  assert.equal(r.body.error.code, 'provider_unavailable');
  assert.match(r.body.error.message, /TLS|certificate/i);
  assert.deepEqual(s.used, { input_tokens: 0, output_tokens: 0 });
  assert.deepEqual(s.held, { input_tokens: 0, output_tokens: 0 });
});

test('with the provider CA in ca_file the request goes through and is booked', async () => {
  const provider = await startTlsProvider(makeCerts('good2', 'IP:127.0.0.1'));
  const { r, s } = await oneRequest(provider, `ca_file = "${join(dir, 'ca.pem')}"`);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.choices[0].message.content, 'over TLS');
  assert.deepEqual(s.used, { input_tokens: 3, output_tokens: 4 });
});

test('a trusted certificate for another host name is refused', async () => {
  const provider = await startTlsProvider(makeCerts('other', 'DNS:other.example'));
  const { r } = await oneRequest(provider, `ca_file = "${join(dir, 'ca.pem')}"`);
  assert.equal(r.status, 502);
  assert.equal(r.body.error.code, 'provider_unavailable');
});

// The admin CLI against an admin API behind a TLS proxy (an operator's setup when the admin
// port leaves the machine): https:// URLs, the certificate verified for the URL's host.
async function startTlsAdminProxy(creds, adminUrl) {
  const seen = [];
  const server = https.createServer(creds, (req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      seen.push(req.url);
      const body = Buffer.concat(chunks);
      const r = await fetch(adminUrl + req.url, {
        method: req.method, headers: { authorization: req.headers.authorization ?? '' },
        body: body.length ? body : undefined,
      });
      res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' });
      res.end(Buffer.from(await r.arrayBuffer()));
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  servers.push(server);
  return { url: `https://127.0.0.1:${server.address().port}`, seen };
}

async function cli(args, env) {
  // Without SSL_CERT_FILE from the caller's environment: each case sets what it trusts.
  const { SSL_CERT_FILE, SSL_CERT_DIR, ...base } = process.env;
  try {
    const r = await promisify(execFile)(BIN, args, { env: { ...base, CAIRVA_ADMIN_TOKEN: ADMIN_TOKEN, ...env } });
    return { code: 0, out: r.stdout, err: r.stderr };
  } catch (e) {
    return { code: e.code, out: e.stdout, err: e.stderr };
  }
}

test('admin CLI over https: works with the CA trusted, refused (token never sent) without it or for another host', async () => {
  const mock = await startMock();
  const gw = await startGateway(mock);
  try {
    const { allocation } = await createAgreement(gw);
    const good = await startTlsAdminProxy(makeCerts('admin', 'IP:127.0.0.1'), gw.adminUrl);
    const trusted = { SSL_CERT_FILE: join(dir, 'ca.pem') };

    const ok = await cli(['allocation', 'list', '--json', '--admin-url', good.url], trusted);
    assert.equal(ok.code, 0, ok.err);
    assert.ok(JSON.parse(ok.out).data.some((a) => a.id === allocation.id));
    assert.equal(good.seen.length, 1);

    const untrusted = await cli(['allocation', 'list', '--admin-url', good.url], {});
    assert.notEqual(untrusted.code, 0);
    assert.match(untrusted.err, /TLS handshake failed/);
    assert.equal(good.seen.length, 1, 'no request reached an untrusted server');

    const other = await startTlsAdminProxy(makeCerts('admin-other', 'DNS:other.example'), gw.adminUrl);
    const wrongHost = await cli(['allocation', 'list', '--admin-url', other.url], trusted);
    assert.notEqual(wrongHost.code, 0);
    assert.match(wrongHost.err, /TLS handshake failed/);
    assert.equal(other.seen.length, 0, 'no request reached a server certified for another host');
  } finally {
    await gw.stop();
    gw.cleanup();
    await stopProcess(mock.child);
  }
});
