// /metrics names the build it serves, as `cairva --version` does (SPEC §9).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { BIN, ADMIN_TOKEN, startMock, startGateway } from './harness.mjs';

test('cairva_build_info on /metrics carries the version, commit and schema of cairva --version', async () => {
  const mock = await startMock();
  const gw = await startGateway(mock);
  try {
    const version = execFileSync(BIN, ['--version'], { encoding: 'utf8' });
    const [, number, commit] = version.match(/^cairva (\S+) \(commit (\S+)\)/);
    const [, sqlite] = version.match(/schema: sqlite (\d+)/);
    const res = await fetch(gw.adminUrl + '/metrics', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const text = await res.text();
    assert.ok(text.includes('# TYPE cairva_build_info gauge\n'), text);
    assert.ok(text.includes(`\ncairva_build_info{version="${number}",commit="${commit}",schema="sqlite ${sqlite}"} 1\n`), text);
  } finally {
    await gw.stop();
    mock.child.kill();
    gw.cleanup();
  }
});
