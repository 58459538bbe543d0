// Builds dist/: the CLI and everything it imports bundled into ESM files, so `npx fenbs-mcp`
// installs no dependency tree (nothing upstream can break it overnight) and starts fast.
import { build } from 'esbuild';
import { rmSync } from 'node:fs';

rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });
await build({
  entryPoints: ['src/cli.ts'],
  outdir: 'dist',
  bundle: true,
  // Rarely used code (doctor, the demo server) stays in its own chunk, loaded only when asked for.
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.18',
  minify: true,
  legalComments: 'external',
  chunkNames: 'chunks/[name]-[hash]',
  // The bundled CommonJS packages (pino, undici) call require(); give ESM one.
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  logLevel: 'warning',
});
