// The V8 code cache bin/fenbs-mcp.js keeps next to the bundle: made after a run, refused when damaged, never shared between builds.
import { chmodSync, cpSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeEach, describe, expect, it } from 'vitest';
import { initializeRequest, spawnLineProcess } from '../helpers/spawn-bridge.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const CACHE_FILE = /^cli-[0-9a-f]+-v\d+\.\d+\.\d+-[a-z0-9]+\.v8cache$/;

/** A copy of the built package (bin, dist, package.json) without caches, so the ones it makes touch no other test's dist/. */
function copyPackage(): string {
  const dir = mkdtempSync(join(tmpdir(), 'fenbs-code-cache-'));
  for (const part of ['bin', 'dist', 'package.json'])
    cpSync(join(root, part), join(dir, part), { recursive: true, filter: (source) => !source.endsWith('.v8cache') });
  return dir;
}

const cachesIn = (dir: string) => readdirSync(join(dir, 'dist')).filter((name) => name.endsWith('.v8cache'));

/** One run of the copied bin with the embedded demo server: initialize answered, then stdin ends and the process exits. */
async function runOnce(dir: string): Promise<{ code: number | null; reply: any; stderr: string }> {
  const bridge = spawnLineProcess(process.execPath, [join(dir, 'bin/fenbs-mcp.js'), '--demo'], {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    FENBS_MCP_LOG_LEVEL: 'warn',
  });
  bridge.send(initializeRequest(1));
  const reply = await bridge.reply(1);
  bridge.end();
  const { code } = await bridge.exited;
  return { code, reply, stderr: bridge.stderr() };
}

describe('the code cache next to the bundle', () => {
  let dir: string;

  beforeEach(() => {
    dir = copyPackage();
  });

  it('is written when a run ends, named after the bundle it was made from and the Node that made it', async () => {
    expect(cachesIn(dir)).toEqual([]);
    const run = await runOnce(dir);
    expect(run.code).toBe(0);
    expect(run.reply.result.serverInfo).toBeDefined();
    const caches = cachesIn(dir);
    expect(caches).toHaveLength(1);
    expect(caches[0]).toMatch(CACHE_FILE);
    // scripts/build.js puts the bundle's content hash on its first line.
    const build = /^\/\/ fenbs-mcp bundle ([0-9a-f]+)\n/.exec(readFileSync(join(dir, 'dist/cli.js'), 'utf8'))![1]!;
    expect(caches[0]).toBe(`cli-${build}-${process.version}-${process.arch}.v8cache`);
  });

  it('is used by the next start, which answers as before and leaves the accepted cache as it was', async () => {
    await runOnce(dir);
    const [cache] = cachesIn(dir);
    const first = readFileSync(join(dir, 'dist', cache!));
    const run = await runOnce(dir);
    expect(run.code).toBe(0);
    expect(run.reply.result.serverInfo).toBeDefined();
    expect(run.stderr).toBe('');
    expect(cachesIn(dir)).toEqual([cache]);
    expect(readFileSync(join(dir, 'dist', cache!)).equals(first)).toBe(true);
  });

  it('is refused when damaged: the start answers as usual and a good cache replaces it', async () => {
    await runOnce(dir);
    const [cache] = cachesIn(dir);
    const path = join(dir, 'dist', cache!);
    const size = statSync(path).size;
    writeFileSync(path, Buffer.alloc(size, 0x5a));
    const run = await runOnce(dir);
    expect(run.code).toBe(0);
    expect(run.reply.result.serverInfo).toBeDefined();
    expect(run.stderr).toBe('');
    expect(readFileSync(path).equals(Buffer.alloc(size, 0x5a))).toBe(false);
  });

  // Root writes through file modes, so the read-only case can only be seen by another user.
  it.skipIf(process.getuid?.() === 0)('is skipped where dist/ cannot be written: the start answers as usual and leaves nothing', async () => {
    chmodSync(join(dir, 'dist'), 0o555);
    try {
      const run = await runOnce(dir);
      expect(run.code).toBe(0);
      expect(run.reply.result.serverInfo).toBeDefined();
      expect(run.stderr).toBe('');
      expect(readdirSync(join(dir, 'dist')).filter((name) => !['cli.js', 'THIRD-PARTY-LICENSES.txt'].includes(name))).toEqual([]);
    } finally {
      chmodSync(join(dir, 'dist'), 0o755);
    }
  });
});
