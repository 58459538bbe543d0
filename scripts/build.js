// Builds dist/: the CLI and everything it imports bundled into one file, so `npx fenbs-mcp`
// installs no dependency tree (nothing upstream can break it overnight) and starts fast.
import { createHash } from 'node:crypto';
import { build } from 'esbuild';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { lazyBuiltins } from './lazy-builtins.js';

// One CommonJS-format file: bin/fenbs-mcp.js compiles it with node:vm, so V8 can keep a code cache of
// it (bin/fenbs-mcp.js says why); rarely used code (doctor, the demo server, pino-pretty, OAuth) is
// in it too, but compiled only when first called. `entryPoint` exports run(), which bin/ calls; the
// bench builds its least undici bridge with this too, so the two bundles differ only in their code.
// Returns esbuild's metafile (what went in).
export async function buildBundle({ entryPoint, outdir, minify = true }) {
  rmSync(outdir, { recursive: true, force: true });
  const result = await build({
    entryPoints: [entryPoint],
    outfile: join(outdir, 'cli.js'),
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20.18',
    minify,
    legalComments: 'none',
    metafile: true,
    write: false,
    // import() of a bundled module or a built-in becomes require(): the script has no module loader.
    supported: { 'dynamic-import': false },
    // The sources are ES modules; `import.meta.url` is the bundle's own file URL, as it was.
    define: { 'import.meta.url': '__fenbsModuleUrl' },
    banner: { js: "const __fenbsModuleUrl = require('node:url').pathToFileURL(__filename).href;" },
    logLevel: 'warning',
    // Built-ins and modules that bundled packages load at start-up but the bridge needs later or never.
    plugins: [lazyBuiltins],
  });
  // The first line names the bundle's content, so a code cache made from one build is never used with another.
  const [output] = result.outputFiles;
  // bin/ reads the bundle as Latin-1 (faster than decoding UTF-8), the same text only for ASCII. esbuild
  // escapes every other character in code (its default charset); what is left is in the comments of an
  // unminified build, escaped here the same way.
  const code = output.text.replace(/[\u0080-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
  const digest = createHash('sha256').update(code).digest('hex').slice(0, 16);
  mkdirSync(outdir, { recursive: true });
  writeFileSync(output.path, `// fenbs-mcp bundle ${digest}\n${code}`);
  return result.metafile;
}

// Run as a script (not imported): the product's bundle and its licence file.
if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  // `node scripts/build.js [outdir]`: dist/ unless told otherwise (the bundle script builds into its
  // own staging folder, so packing never empties the dist/ that running tests start).
  // FENBS_BUILD_UNMINIFIED=1 keeps names and lines, for CPU profiles one can read (bench/profile/).
  const outdir = process.argv[2] ?? 'dist';
  const metafile = await buildBundle({ entryPoint: 'src/cli/main.ts', outdir, minify: process.env.FENBS_BUILD_UNMINIFIED !== '1' });
  writeLicences(metafile, outdir);
}

// Bundled code keeps its licences: one file with the name, version and licence text of each package.
function writeLicences(metafile, outdir) {
  const packages = new Map();
  for (const input of Object.keys(metafile.inputs)) {
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
}
