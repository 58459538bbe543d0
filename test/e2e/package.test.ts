// The published package, as a user meets it: packed, installed into an empty folder, run with npx.
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { packTarball, type PackedTarball } from '../helpers/packed-tarball.js';

const run = promisify(execFile);
const root = new URL('../../', import.meta.url).pathname;
const quietEnv = { ...process.env, FENBS_MCP_LOG_LEVEL: 'warn', npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };

describe('the npm package', () => {
  let app: string;
  let files: string[];
  let tarball: PackedTarball;

  beforeAll(async () => {
    // As a user packs it: the prepack script writes the published package.json (dist/ is current).
    tarball = await packTarball();
    files = tarball.files;
    app = mkdtempSync(join(tmpdir(), 'fenbs-app-'));
    await run('npm', ['init', '-y'], { cwd: app, env: quietEnv });
    await run('npm', ['install', '--offline', tarball.file], { cwd: app, env: quietEnv });
  }, 120_000);

  it('holds only what runs: the bin, the bundled dist, the examples and the docs', () => {
    for (const file of files)
      expect(file).toMatch(
        /^(bin\/|dist\/|examples\/|package\.json$|README\.md$|LICENSE|docs\/reference\.md$|(SECURITY|ARCHITECTURE|CONTRIBUTING|CHANGELOG)\.md$)/,
      );
    expect(files).toContain('bin/fenbs-mcp.js');
    // It makes the bin CommonJS; without it the bin is an ES module and fails on __dirname.
    expect(files).toContain('bin/package.json');
    expect(files).toContain('dist/cli.js');
  });

  it('holds every document the README links to, and names where to report a bug', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8').replace(/```[\s\S]*?```/g, '');
    const linked = [...readme.matchAll(/\]\(([^)\s#]+)(?:#[^)\s]*)?\)/g)].map((match) => match[1]!).filter((target) => !/^[a-z]+:/.test(target));
    expect(linked.length).toBeGreaterThan(0);
    for (const target of new Set(linked)) expect(files, target).toContain(target);
    const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { bugs: { url: string }; repository: { url: string }; homepage: string };
    expect(manifest.repository.url).toMatch(/^git\+https:\/\/github\.com\/[\w.-]+\/fenbs-mcp\.git$/);
    expect(readme).toContain(manifest.bugs.url);
  });

  it('installs with no dependencies at all, so nothing upstream can break it', () => {
    const manifest = JSON.parse(readFileSync(join(app, 'node_modules/fenbs-mcp/package.json'), 'utf8'));
    expect(manifest.dependencies ?? {}).toEqual({});
  });

  it("publishes a package.json without scripts or devDependencies, and leaves the clone's as it was", async () => {
    const { stdout } = await run('tar', ['-xzOf', tarball.file, 'package/package.json']);
    const published = JSON.parse(stdout) as Record<string, unknown>;
    expect(published).not.toHaveProperty('scripts');
    expect(published).not.toHaveProperty('devDependencies');
    expect(published).not.toHaveProperty('dependencies');
    expect(published).toMatchObject({ name: 'fenbs-mcp', type: 'module', bin: { 'fenbs-mcp': 'bin/fenbs-mcp.js' } });
    expect(readFileSync(join(tarball.stage, 'package.json'), 'utf8')).toBe(readFileSync(join(root, 'package.json'), 'utf8'));
    // The clone keeps the script that builds dist/ on `npm ci`.
    expect(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts.prepare).toBe('npm run build');
  });

  it('installs globally from the tarball with a fresh cache and no npm warning, and runs the demo example of --help as written', async () => {
    const prefix = mkdtempSync(join(tmpdir(), 'fenbs-prefix-'));
    const env = { ...quietEnv, npm_config_cache: mkdtempSync(join(tmpdir(), 'fenbs-cache-')) };
    const install = await run('npm', ['install', '-g', '--prefix', prefix, tarball.file], { env });
    expect(install.stderr).not.toMatch(/npm warn/i);
    expect(install.stderr).not.toMatch(/allowScripts|allow-scripts/);
    const bin = join(prefix, 'bin/fenbs-mcp');
    expect((await run(bin, ['--version'], { env })).stdout.trim()).toBe(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version);
    // The demo example of --help, as written there: the sample session ships in the package.
    const help = (await run(bin, ['--help'], { env })).stdout;
    const example = help
      .split('\n')
      .find((line) => line.includes('--demo <'))!
      .trim();
    expect(example).toBe('fenbs-mcp --demo < "$(npm root -g)/fenbs-mcp/examples/session.jsonl"');
    const { stdout } = await run('sh', ['-c', example], {
      env: { ...env, PATH: `${join(prefix, 'bin')}:${process.env.PATH ?? ''}`, npm_config_prefix: prefix },
    });
    expect(
      stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line))
        .find((m) => m.id === 1).result.serverInfo.name,
    ).toBe('fenbs-demo');
  }, 120_000);

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

describe('a clone before its first build', () => {
  it('says in one line that dist/cli.js is missing and how to build it, and exits 1', async () => {
    const clone = mkdtempSync(join(tmpdir(), 'fenbs-unbuilt-'));
    cpSync(join(root, 'bin'), join(clone, 'bin'), { recursive: true });
    cpSync(join(root, 'package.json'), join(clone, 'package.json'));
    const result = await run(process.execPath, [join(clone, 'bin/fenbs-mcp.js'), '--version']).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`fenbs-mcp: ${join(clone, 'dist/cli.js')} is missing: run npm run build (or npm ci) in ${clone}\n`);
  });
});
