// Writes fenbs-mcp-<version>.mcpb, the Claude Desktop bundle: the bin, a fresh build and the
// manifest in a staging folder, checked by `mcpb validate` and zipped by `mcpb pack`.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const output = join(root, `fenbs-mcp-${pkg.version}.mcpb`);
// Anthropic's own packer, the one Claude Desktop's loader is written against.
const mcpb = join(root, 'node_modules/.bin/mcpb');
const stage = mkdtempSync(join(tmpdir(), 'fenbs-mcpb-'));

try {
  // Built straight into the stage, so packing never empties the dist/ that running tests start.
  // dist/ is self-contained (dependencies bundled), so the bundle needs no node_modules.
  execFileSync(process.execPath, [join(root, 'scripts/build.js'), join(stage, 'dist')], { cwd: root, stdio: 'inherit' });
  mkdirSync(join(stage, 'bin'));
  copyFileSync(join(root, 'bin/fenbs-mcp.js'), join(stage, 'bin/fenbs-mcp.js'));
  // Marks the bin CommonJS inside a package whose `"type"` is module.
  copyFileSync(join(root, 'bin/package.json'), join(stage, 'bin/package.json'));
  copyFileSync(join(root, 'LICENSE'), join(stage, 'LICENSE'));
  // The CLI reads its version from package.json, and `"type": "module"` makes Node load dist/ as ESM;
  // nothing else of the package file belongs in the bundle.
  const { name, version, description, type, license, engines } = pkg;
  writeFileSync(join(stage, 'package.json'), `${JSON.stringify({ name, version, description, type, license, engines }, null, 2)}\n`);
  const manifest = JSON.parse(readFileSync(join(root, 'mcpb/manifest.json'), 'utf8'));
  writeFileSync(join(stage, 'manifest.json'), `${JSON.stringify({ ...manifest, version }, null, 2)}\n`);

  execFileSync(mcpb, ['validate', join(stage, 'manifest.json')], { stdio: 'inherit' });
  rmSync(output, { force: true });
  // Run from the stage so pack's file list shows paths inside the bundle.
  execFileSync(mcpb, ['pack', '.', output], { cwd: stage, stdio: 'inherit' });
} finally {
  rmSync(stage, { recursive: true, force: true });
}
