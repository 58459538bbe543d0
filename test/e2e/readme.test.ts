// Every command in the README runs here, as a newcomer would paste it.
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { BIN } from '../helpers/spawn-bridge.js';

const run = promisify(execFile);
const root = new URL('../../', import.meta.url).pathname;
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const quietEnv = { ...process.env, FENBS_MCP_LOG_LEVEL: 'warn', npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };

function blocks(language: string): string[] {
  const pattern = new RegExp('```' + language + '\\n([\\s\\S]*?)```', 'g');
  return [...readme.matchAll(pattern)].map((match) => match[1]!.trim());
}

/** A PATH entry where `fenbs-mcp` is the built bin, as after `npm install -g`. */
function shimPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'fenbs-readme-'));
  const shim = join(dir, 'fenbs-mcp');
  writeFileSync(shim, `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`);
  chmodSync(shim, 0o755);
  return `${dir}:${process.env.PATH ?? ''}`;
}

describe('the README', () => {
  const shell = blocks('sh');

  it('starts with the two newcomer commands: the demo, then the test command CI runs', () => {
    expect(shell[0]).toBe('npm ci && npm run demo');
    expect(shell[1]).toBe('npm test');
    const ci = readFileSync(join(root, '.ci/run'), 'utf8');
    const commands = ci.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('#') && !line.startsWith('set ') && !line.startsWith('cd '));
    expect(commands[0]).toBe('npm ci');
    expect(commands[1]).toBe(shell[1]);
  });

  it('shows a real exchange with `npm run demo`: initialize, tools/list, and a call with progress', async () => {
    const { stdout } = await run('npm', ['run', '--silent', 'demo'], { cwd: root, env: { ...process.env, FENBS_MCP_LOG_LEVEL: 'warn' } });
    const messages = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(messages.find((m) => m.id === 1).result.serverInfo.name).toBe('fenbs-demo');
    expect(messages.find((m) => m.id === 2).result.tools.map((t: { name: string }) => t.name)).toContain('tasks_import');
    const progress = messages.findIndex((m) => m.method === 'notifications/progress');
    const importResult = messages.findIndex((m) => m.id === 5);
    expect(progress).toBeGreaterThanOrEqual(0);
    expect(progress).toBeLessThan(importResult);
    expect(
      messages
        .filter((m) => 'id' in m && !('method' in m))
        .map((m) => m.id)
        .sort(),
    ).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it.each(shell.slice(2).map((command) => [command]))('runs `%s`', async (command) => {
    const { stdout } = await run('bash', ['-o', 'pipefail', '-c', command], {
      cwd: root,
      env: { ...process.env, PATH: shimPath(), FENBS_MCP_LOG_LEVEL: 'warn' },
    });
    expect(stdout.trim()).not.toBe('');
    if (command.includes('jq')) expect(stdout.trim()).toBe('T-1 [open] Draft the release notes (assignee: claude)');
    if (command.includes('doctor')) expect(stdout).toContain('fenbs-mcp can bridge to this server.');
  });

  it.each(blocks('json').map((block) => [block]))('has a client config that parses and keeps every secret out of args: %s', (block) => {
    const config = JSON.parse(block);
    const servers = config.mcpServers ?? config.servers;
    const fenbs = Object.values(servers)[0] as { args: string[]; env: Record<string, string> };
    expect(fenbs.args).toContain('fenbs-mcp@0.1');
    // Secrets sit in env; args only name them (${NAME}) or say where one comes from.
    const args = fenbs.args.map((arg) => arg.replace(/\$\{[A-Za-z_][A-Za-z0-9_]*\}/g, ''));
    expect(JSON.stringify(args)).not.toMatch(/Bearer \S|<your|--token[ =]/i);
    expect(Object.keys(fenbs.env).length).toBeGreaterThan(0);
    for (const [, name] of JSON.stringify(fenbs.args).matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)) expect(fenbs.env).toHaveProperty(name!);
  });

  it('has a section with a desktop config for each credential source, and a place for OAuth sign-in', () => {
    for (const heading of [
      '### Token from the environment',
      '### Token file',
      '### Token command',
      '### Header secrets from the environment',
      '### OAuth sign-in',
    ])
      expect(readme).toContain(`\n${heading}\n`);
    expect(readme).toMatch(/--token-file", "\/Users\/you/);
    expect(readme).toMatch(/"--token-command", "/);
    expect(readme).toMatch(/"-H", "X-Api-Key: \$\{EXAMPLE_API_KEY\}"/);
    expect(readme).toMatch(/"-H", "Authorization: token \$\{GH_TOKEN\}"/);
    expect(readme).toContain('fenbs-mcp login --url');
    expect(readme).toContain('fenbs-mcp logout --url');
  });

  it('has a Codex config with the token in env, not in args', () => {
    const [toml] = blocks('toml');
    expect(toml).toMatch(/^\[mcp_servers\.fenbs\]$/m);
    expect(toml).toMatch(/^args = \["-y", "fenbs-mcp@0.1"\]$/m);
    expect(toml).toMatch(/^env = \{ "FENBS_TOKEN" = /m);
  });

  it('gives Codex the time a first npx download and a long tool call need, and says why', () => {
    const [toml] = blocks('toml');
    expect(toml).toMatch(/^startup_timeout_sec = \d+$/m);
    expect(toml).toMatch(/^tool_timeout_sec = \d+$/m);
    expect(readme).toMatch(/a first `npx` download can take longer/);
    expect(readme).toMatch(/cuts a long call whatever the bridge's `--request-timeout` allows/);
  });

  it('explains "spawn npx ENOENT" from GUI apps with nvm on macOS, and both fixes', () => {
    expect(readme).toContain('`spawn npx ENOENT`');
    expect(readme).toMatch(/absolute path in the config/);
    expect(readme).toMatch(/ln -s "\$\(which npx\)" \/usr\/local\/bin\/npx/);
  });
});

/** An empty npm prefix, as a machine without fenbs-mcp installed: `<prefix>/bin` holds what `-g` installs. */
function emptyPrefix(): string {
  return mkdtempSync(join(tmpdir(), 'fenbs-prefix-'));
}

async function runsTheDemo(bin: string): Promise<void> {
  const { stdout } = await run('sh', ['-c', `"${bin}" --demo < "${join(root, 'examples/session.jsonl')}"`], { env: quietEnv });
  const ids = stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line))
    .filter((m) => !('method' in m))
    .map((m) => m.id);
  expect(ids.sort()).toEqual([1, 2, 3, 4, 5, 6]);
}

describe('the README install paths, run in a temporary npm prefix', () => {
  const install = blocks('bash');
  const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;

  it('says the package is not on the registry yet and pins the version in every registry snippet', () => {
    expect(readme).toMatch(/not on the npm registry yet/);
    expect(readme).not.toMatch(/"fenbs-mcp"\]/);
    expect(readme).toContain('npx -y fenbs-mcp@0.1');
  });

  it('installs from a clone with `npm install -g .` (or `npm link`): the command prints its version and runs the demo', async () => {
    expect(install[0]!.split('\n')).toEqual(['npm ci', 'npm install -g .', 'fenbs-mcp --version']);
    expect(readme).toContain('`npm link`');
    const prefix = emptyPrefix();
    await run('npm', ['install', '-g', '--prefix', prefix, '.'], { cwd: root, env: quietEnv });
    const bin = join(prefix, 'bin/fenbs-mcp');
    expect((await run(bin, ['--version'], { env: quietEnv })).stdout.trim()).toBe(version);
    await runsTheDemo(bin);
  }, 120_000);

  it('runs from a packed tarball with `npx -y ./fenbs-mcp-<version>.tgz`, and installs from it', async () => {
    expect(install[1]!.split('\n')).toEqual(['npm pack', `npx -y ./fenbs-mcp-${version}.tgz --version`]);
    const packDir = mkdtempSync(join(tmpdir(), 'fenbs-pack-'));
    // dist/ is already built; scripts would only build it again.
    await run('npm', ['pack', '--ignore-scripts', '--pack-destination', packDir], { cwd: root, env: quietEnv });
    const npx = await run('npx', ['-y', `./fenbs-mcp-${version}.tgz`, '--version'], {
      cwd: packDir,
      env: { ...quietEnv, npm_config_cache: mkdtempSync(join(tmpdir(), 'fenbs-npx-cache-')) },
    });
    expect(npx.stdout.trim()).toBe(version);
    const prefix = emptyPrefix();
    await run('npm', ['install', '-g', '--offline', '--prefix', prefix, join(packDir, `fenbs-mcp-${version}.tgz`)], { env: quietEnv });
    const bin = join(prefix, 'bin/fenbs-mcp');
    expect((await run(bin, ['--version'], { env: quietEnv })).stdout.trim()).toBe(version);
    await runsTheDemo(bin);
  }, 120_000);
});
