// docs/operations.md is followed as written (issue 28, item 8):
//  - every `sh` block runs, in order, in one bash shell (set -euo pipefail) from a
//    directory laid out as a checkout's root (build/ and packaging/ linked), against the
//    gateway, mock provider and PostgreSQL gateways the blocks themselves start; a block
//    that fails fails the test, naming it. Blocks marked `sh norun` are skipped: each needs
//    root and systemd or changes /etc (scripts/package-test.sh checks those parts). No
//    other block may hold a `$ ` command line: every command shown is a command run.
//  - every metric a live gateway's /metrics emits is in the guide, and every metric the
//    alerting rules (packaging/prometheus/cairva-rules.yml) name is on /metrics;
//  - every config key the parser accepts (src/config/config.cpp) is in the guide's
//    configuration reference.
// Needs CAIRVA_TEST_PG_URL (section 8 runs three gateways on PostgreSQL) and the fixed
// ports the guide uses (8080, 8081, 9090, 8091-8093, 8191-8193) free.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { BIN, startMock, startGateway, createAgreement, chat, adminCall, psql } from './harness.mjs';

const ROOT = resolve(import.meta.dirname, '../..');
const GUIDE = join(ROOT, 'docs/operations.md');
const RULES = join(ROOT, 'packaging/prometheus/cairva-rules.yml');
const PG_URL = process.env.CAIRVA_TEST_PG_URL;
const GUIDE_PORTS = [8080, 8081, 9090, 8091, 8092, 8093, 8191, 8192, 8193];
// The whole guide, PostgreSQL section and its waits included, takes about 40 s.
const GUIDE_TIMEOUT_MS = 300_000;

// The fenced blocks of a Markdown file: { info, text, line } (line: the opening fence's).
function fencedBlocks(markdown) {
  const blocks = [];
  let open = null;
  markdown.split('\n').forEach((l, i) => {
    if (open === null) {
      const m = /^```(.*)$/.exec(l);
      if (m) open = { info: m[1].trim(), lines: [], line: i + 1 };
    } else if (l === '```') {
      blocks.push({ info: open.info, text: open.lines.join('\n'), line: open.line });
      open = null;
    } else {
      open.lines.push(l);
    }
  });
  assert.equal(open, null, `unclosed block at docs/operations.md:${open?.line}`);
  return blocks;
}

function portTaken(port) {
  return new Promise((res) => {
    const s = net.connect(port, '127.0.0.1');
    s.on('connect', () => { s.destroy(); res(true); });
    s.on('error', () => res(false));
  });
}

test('the blocks of docs/operations.md are tagged: sh, sh norun, or no command line', () => {
  const blocks = fencedBlocks(readFileSync(GUIDE, 'utf8'));
  const norun = blocks.filter((b) => b.info === 'sh norun');
  for (const b of blocks) {
    assert.ok(!['bash', 'shell', 'console', 'shell-session'].includes(b.info),
      `docs/operations.md:${b.line}: tag shell blocks \`sh\` (run) or \`sh norun\``);
    if (b.info.startsWith('sh')) {
      assert.ok(b.info === 'sh' || b.info === 'sh norun', `docs/operations.md:${b.line}: unknown tag "${b.info}"`);
      continue;
    }
    const prompt = b.text.split('\n').find((l) => /^\s*\$ /.test(l));
    assert.equal(prompt, undefined, `docs/operations.md:${b.line}: a command in an output block: ${prompt}`);
  }
  // The skipped set stays small: each needs root, systemd or a server's /etc.
  for (const b of norun) {
    assert.match(b.text, /sudo|systemctl|timedatectl|dpkg|ALTER DATABASE/, `docs/operations.md:${b.line}: sh norun without root, systemd or a server`);
  }
  assert.ok(norun.length <= 10, `${norun.length} sh norun blocks`);
});

test('every sh block of docs/operations.md runs, in order, against a live gateway', { timeout: GUIDE_TIMEOUT_MS + 30_000 }, async () => {
  assert.ok(PG_URL, 'CAIRVA_TEST_PG_URL is not set: section 8 needs a PostgreSQL server (scripts/test.sh sets it)');
  for (const port of GUIDE_PORTS) {
    assert.equal(await portTaken(port), false, `port ${port} is in use: the guide's commands need it free`);
  }
  const blocks = fencedBlocks(readFileSync(GUIDE, 'utf8')).filter((b) => b.info === 'sh');
  assert.ok(blocks.length >= 30, `${blocks.length} sh blocks`);

  const dir = mkdtempSync(join(tmpdir(), 'cairva-docs-'));
  symlinkSync(dirname(BIN), join(dir, 'build'));
  symlinkSync(join(ROOT, 'packaging'), join(dir, 'packaging'));
  const dbName = `cairva_docs_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  psql(PG_URL, `CREATE DATABASE ${dbName}`);
  const u = new URL(PG_URL);
  u.pathname = '/' + dbName;
  const databaseUrl = u.toString();

  // One script: each block announces itself on stderr, so a failure names the last one.
  let script = 'set -euo pipefail\n';
  blocks.forEach((b, i) => {
    script += `echo "### block ${i + 1}/${blocks.length} (docs/operations.md:${b.line})" >&2\n${b.text}\n`;
  });
  script += 'echo "### all blocks ran" >&2\n';
  writeFileSync(join(dir, 'guide.sh'), script);

  const env = { ...process.env, DATABASE_URL: databaseUrl };
  delete env.CAIRVA_ADMIN_TOKEN;
  delete env.CAIRVA_ADMIN_URL;
  const child = spawn('bash', ['guide.sh'], { cwd: dir, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { out += d; });
  const timer = setTimeout(() => { try { process.kill(-child.pid, 'SIGKILL'); } catch {} }, GUIDE_TIMEOUT_MS);
  const code = await new Promise((res) => child.on('exit', (c, s) => res(c ?? s)));
  clearTimeout(timer);
  try { process.kill(-child.pid, 'SIGKILL'); } catch {}  // whatever a failed run left running
  try {
    const last = [...out.matchAll(/^### (block .*)$/gm)].at(-1)?.[1];
    assert.equal(code, 0, `failed at ${last}, exit ${code}:\n${out.split('\n').slice(-60).join('\n')}`);
    assert.match(out, /### all blocks ran/);
  } finally {
    psql(PG_URL, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    psql(PG_URL, `DROP DATABASE IF EXISTS ${dbName}_restored WITH (FORCE)`);
    if (process.env.CAIRVA_DOCS_KEEP) {
      writeFileSync(join(dir, 'guide.out'), out);
      console.log(`kept ${dir}`);
    } else {
      rmSync(dir, { recursive: true, force: true });
    }
  }
});

// Metric names of an exposition: histograms by their base name.
function metricNames(text) {
  const names = new Set();
  for (const m of text.matchAll(/^# TYPE (\S+) /gm)) names.add(m[1]);
  return names;
}

test('every metric on /metrics is in the guide, and every metric the alerting rules name is on /metrics', async () => {
  const mock = await startMock();
  const gw = await startGateway(mock);
  try {
    const { secret } = await createAgreement(gw);
    assert.equal((await chat(gw, secret, { model: 'm', messages: [{ role: 'user', content: 'x' }] })).status, 200);
    const metrics = await adminCall(gw.adminUrl, 'GET', '/metrics');
    assert.equal(metrics.status, 200);
    const emitted = metricNames(metrics.text);
    assert.ok(emitted.size >= 15, [...emitted].join(' '));
    const guide = readFileSync(GUIDE, 'utf8');
    for (const name of emitted) assert.ok(guide.includes('`' + name + '`'), `${name} is not in docs/operations.md`);
    const rules = readFileSync(RULES, 'utf8');
    const named = new Set([...rules.matchAll(/\bcairva_[a-z_]+/g)].map((m) => m[0].replace(/_(bucket|sum|count)$/, '')));
    assert.ok(named.size >= 8, [...named].join(' '));
    for (const name of named) assert.ok(emitted.has(name), `${name} (packaging/prometheus/cairva-rules.yml) is not on /metrics`);
  } finally {
    await gw.stop();
    mock.child.kill();
    gw.cleanup();
  }
});

test('every config key the parser accepts is in the guide\'s configuration reference', () => {
  const source = readFileSync(join(ROOT, 'src/config/config.cpp'), 'utf8');
  const keys = [];
  for (const m of source.matchAll(/reject_unknown\(\s*c,\s*[^,]+,\s*("[a-z]*"|prefix),\s*\{([^}]*)\}/g)) {
    const table = m[1] === 'prefix' ? 'providers[]' : JSON.parse(m[1]);
    if (table === '') continue;  // the top level: the tables themselves
    for (const k of m[2].matchAll(/"([a-z_]+)"/g)) keys.push(`${table}.${k[1]}`);
  }
  assert.ok(keys.length >= 24, keys.join(' '));
  const guide = readFileSync(GUIDE, 'utf8');
  const reference = guide.slice(guide.indexOf('## 20. Configuration reference'));
  for (const key of keys) assert.ok(reference.includes('| `' + key + '` |'), `${key} is not in docs/operations.md section 20`);
});
