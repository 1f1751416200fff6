// Builds the console into dist/: one folder per listener (admin/ for operators, buyer/ for
// buyers), each an index.html that names its content-hashed assets under console/. CMake
// compiles dist/ into the executable (cmake/console_assets.cmake).
import * as esbuild from 'esbuild';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, 'dist');
// The URL path the gateway serves assets under (src/console/assets.h).
const asset_prefix = '/console/';

function hashed(name, bytes) {
  const hash = createHash('sha256').update(bytes).digest('hex').slice(0, 10);
  const dot = name.lastIndexOf('.');
  return `${name.slice(0, dot)}-${hash}${name.slice(dot)}`;
}

async function buildApp(app) {
  const dir = join(out, app, 'console');
  mkdirSync(dir, { recursive: true });
  const result = await esbuild.build({
    entryPoints: { [app]: join(here, 'src', app, 'main.js') },
    bundle: true, minify: true, format: 'esm', target: ['chrome110', 'firefox115', 'safari16'],
    absWorkingDir: here, outdir: dir, entryNames: '[name]-[hash]', assetNames: '[name]-[hash]',
    legalComments: 'eof', metafile: true, logLevel: 'warning',
  });
  const outputs = Object.keys(result.metafile.outputs).map((p) => relative(dir, join(here, p)));
  const script = outputs.find((p) => p.endsWith('.js'));
  const style = outputs.find((p) => p.endsWith('.css'));
  const iconBytes = readFileSync(join(here, 'src', 'icon.svg'));
  const icon = hashed('icon.svg', iconBytes);
  writeFileSync(join(dir, icon), iconBytes);
  const html = readFileSync(join(here, 'src', app, 'index.html'), 'utf8')
    .replace('%SCRIPT%', asset_prefix + basename(script))
    .replace('%STYLE%', asset_prefix + basename(style))
    .replace('%ICON%', asset_prefix + icon);
  writeFileSync(join(out, app, 'index.html'), html);
  return [script, style, icon];
}

rmSync(out, { recursive: true, force: true });
for (const app of ['admin', 'buyer']) {
  const files = await buildApp(app);
  console.log(`console: dist/${app}/index.html, ${files.map((f) => 'console/' + f).join(', ')}`);
}
