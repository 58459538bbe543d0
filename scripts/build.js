// Builds dist/: the CLI and everything it imports bundled into ESM files, so `npx fenbs-mcp`
// installs no dependency tree (nothing upstream can break it overnight) and starts fast.
import { build } from 'esbuild';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { lazyBuiltins } from './lazy-builtins.js';
import { requireBuiltins } from './require-builtins.js';

// `node scripts/build.js [outdir]`: dist/ unless told otherwise (the bundle script builds into its
// own staging folder, so packing never empties the dist/ that running tests start).
const outdir = process.argv[2] ?? 'dist';
rmSync(outdir, { recursive: true, force: true });
const result = await build({
  entryPoints: ['src/cli.ts'],
  outdir,
  bundle: true,
  // Rarely used code (doctor, the demo server) stays in its own chunk, loaded only when asked for.
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.18',
  minify: true,
  legalComments: 'none',
  metafile: true,
  chunkNames: 'chunks/[name]-[hash]',
  // The bundled CommonJS packages (pino, undici) call require(); give ESM one.
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  logLevel: 'warning',
  // Built-ins that bundled packages load at start-up but the bridge needs later or never.
  plugins: [lazyBuiltins, requireBuiltins],
});

// Bundled code keeps its licences: one file with the name, version and licence text of each package.
const packages = new Map();
for (const input of Object.keys(result.metafile.inputs)) {
  const match = /^(node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
  if (match !== null) packages.set(match[1], true);
}
const sections = [...packages.keys()].sort().map((dir) => {
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const licenceFile = ['LICENSE', 'LICENSE.md', 'LICENSE.txt', 'license'].map((name) => join(dir, name)).find((path) => existsSync(path));
  const text = licenceFile === undefined ? `License: ${manifest.license}` : readFileSync(licenceFile, 'utf8').trim();
  return `${manifest.name}@${manifest.version} (${manifest.license})\n\n${text}\n`;
});
writeFileSync(join(outdir, 'THIRD-PARTY-LICENSES.txt'), `fenbs-mcp bundles these packages:\n\n${sections.join('\n---\n\n')}`);
