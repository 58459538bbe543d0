// The published package, as a user meets it: packed, installed into an empty folder, run with npx.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = new URL('../../', import.meta.url).pathname;
const quietEnv = { ...process.env, FENBS_MCP_LOG_LEVEL: 'warn', npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };

describe('the npm package', () => {
  let app: string;
  let files: string[];

  beforeAll(async () => {
    const packDir = mkdtempSync(join(tmpdir(), 'fenbs-pack-'));
    // dist/ is already built by `npm test`; scripts would only build it again.
    const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', packDir], { cwd: root, env: quietEnv });
    const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
    files = packed!.files.map((file) => file.path);
    app = mkdtempSync(join(tmpdir(), 'fenbs-app-'));
    await run('npm', ['init', '-y'], { cwd: app, env: quietEnv });
    await run('npm', ['install', '--offline', join(packDir, packed!.filename)], { cwd: app, env: quietEnv });
  }, 120_000);

  it('holds only what runs: the bin, the bundled dist, the examples and the docs', () => {
    for (const file of files) expect(file).toMatch(/^(bin\/|dist\/|examples\/|package\.json$|README\.md$|LICENSE)/);
    expect(files).toContain('bin/fenbs-mcp.js');
    // It makes the bin CommonJS; without it the bin is an ES module and fails on __dirname.
    expect(files).toContain('bin/package.json');
    expect(files).toContain('dist/cli.js');
  });

  it('installs with no dependencies at all, so nothing upstream can break it', () => {
    const manifest = JSON.parse(readFileSync(join(app, 'node_modules/fenbs-mcp/package.json'), 'utf8'));
    expect(manifest.dependencies ?? {}).toEqual({});
  });

  it('prints its version and help through npx', async () => {
    const version = await run('npx', ['fenbs-mcp', '--version'], { cwd: app, env: quietEnv });
    expect(version.stdout.trim()).toBe(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version);
    const help = await run('npx', ['fenbs-mcp', '--help'], { cwd: app, env: quietEnv });
    expect(help.stdout).toContain('FENBS_TOKEN');
    expect(help.stdout).toContain('doctor');
  });

  it('runs the demo session through npx', async () => {
    const { stdout } = await run('sh', ['-c', `npx fenbs-mcp --demo < ${join(root, 'examples/session.jsonl')}`], { cwd: app, env: quietEnv });
    const ids = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
      .filter((m) => !('method' in m))
      .map((m) => m.id);
    expect(ids.sort()).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('passes every doctor check against the demo through npx', async () => {
    const { stdout } = await run('npx', ['fenbs-mcp', 'doctor', '--demo'], { cwd: app, env: quietEnv });
    expect(stdout).not.toContain('✗');
    expect(stdout).toContain('✓ tools');
  });
});

describe('on an old Node', () => {
  it('says in one plain sentence which Node it found and which it needs, and exits 1', async () => {
    const { stdout: bin } = await run(join(root, 'scripts/fetch-node.sh'), ['18'], { cwd: root });
    const node18 = join(bin.trim(), 'node');
    const result = await run(node18, [join(root, 'bin/fenbs-mcp.js'), '--version'], { cwd: root }).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    );
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/needs Node\.js 20\.18\.1 or newer, but it was started with Node\.js 18\./);
  }, 120_000);
});
