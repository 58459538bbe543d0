// Builds the least undici bridge (least-bridge.ts) the way the product is built, into .bench-tmp/least-bridge/.
//
// The bundle comes from scripts/build.js's own buildBundle (same esbuild options, same lazy-builtins
// plugin); bin/fenbs-mcp.js and bin/package.json are copied byte for byte next to it, so it starts
// through the product's loader (code cache, start-up built-ins, V8 flags) from a folder laid out as
// the package is: <root>/bin/fenbs-mcp.js loads <root>/dist/cli.js.
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildBundle } from '../scripts/build.js';

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
const ENTRY_POINT = fileURLToPath(new URL('./least-bridge.ts', import.meta.url));
export const LEAST_BRIDGE_ROOT = join(REPO_ROOT, '.bench-tmp', 'least-bridge');

/** Builds the least bridge and returns the path of its bin script (start it as fenbs-mcp's). */
export async function buildLeastBridge() {
  await buildBundle({ entryPoint: ENTRY_POINT, outdir: join(LEAST_BRIDGE_ROOT, 'dist') });
  const bin = join(LEAST_BRIDGE_ROOT, 'bin');
  mkdirSync(bin, { recursive: true });
  for (const name of ['fenbs-mcp.js', 'package.json']) copyFileSync(join(REPO_ROOT, 'bin', name), join(bin, name));
  return join(bin, 'fenbs-mcp.js');
}

// `node bench/least-bridge-build.js`: build it and print the bin path.
if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.stdout.write(`${await buildLeastBridge()}\n`);
}
