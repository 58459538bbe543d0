// Every command in the README runs here, as a newcomer would paste it.
import { execFile } from 'node:child_process';
import { chmodSync, lstatSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { packTarball, type PackedTarball } from '../helpers/packed-tarball.js';
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

/**
 * A command and args that run today: the installed command, or npx with the tarball as `file:<absolute path>`
 * or `--package <absolute path> fenbs-mcp` (a bare path npx runs as a program: exit 126).
 */
function workingToday(command: string, args: readonly string[]): boolean {
  if (command === 'fenbs-mcp') return true;
  const npxArgs = command === 'cmd' && args[0] === '/c' && args[1] === 'npx' ? args.slice(2) : command === 'npx' ? args : undefined;
  if (npxArgs === undefined || npxArgs[0] !== '-y') return false;
  const tarball = /^(\/|[A-Z]:\/).*\/fenbs-mcp-\d+\.\d+\.\d+\.tgz$/;
  if (npxArgs[1] === '--package') return tarball.test(npxArgs[2] ?? '') && npxArgs[3] === 'fenbs-mcp';
  return npxArgs[1]?.startsWith('file:') === true && tarball.test(npxArgs[1].slice('file:'.length));
}

describe('the README', () => {
  const shell = blocks('sh');

  it('starts with the two newcomer commands: the demo, then the test command CI runs', () => {
    expect(shell[0]).toBe('npm ci && npm run demo');
    expect(shell[1]).toBe('npm test');
    const ci = readFileSync(join(root, '.ci/run'), 'utf8');
    // The npm commands CI runs are the README's; the lines between that only prepare the machine
    // (installing the Secret Service the keychain tests need) are not a newcomer's business.
    const commands = ci.split('\n').filter((line) => line.startsWith('npm '));
    expect(commands[0]).toBe('npm ci');
    expect(commands[1]).toBe(shell[1]);
    const between = ci.slice(ci.indexOf('npm ci\n') + 'npm ci\n'.length, ci.indexOf('npm test\n'));
    expect(between.split('\n').filter((line) => !line.trimStart().startsWith('#') && /\b(npm|npx|node)\b/.test(line))).toEqual([]);
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

  it.each(blocks('json').map((block) => [block]))('has a client config that parses, runs what exists today and keeps every secret out of args: %s', (block) => {
    const config = JSON.parse(block);
    const fenbs = (config.mcpServers === undefined && config.servers === undefined ? config : Object.values(config.mcpServers ?? config.servers)[0]) as {
      command: string;
      args: string[];
      env: Record<string, string>;
    };
    expect(workingToday(fenbs.command, fenbs.args)).toBe(true);
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
    expect(toml).toMatch(/^args = \["-y", "file:\/Users\/you\/fenbs-mcp-\d+\.\d+\.\d+\.tgz"\]$/m);
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
  let tarball: PackedTarball;

  beforeAll(async () => {
    tarball = await packTarball();
  }, 120_000);

  it('says the package is not on the registry yet, pins the version and marks every registry form "after publication"', () => {
    expect(readme).toMatch(/not yet published to the npm registry/);
    expect(readme).not.toMatch(/"-y", "fenbs-mcp"\]/);
    expect(readme).not.toMatch(/npx -y fenbs-mcp(?!@)/);
    const paragraphs = readme.split(/\n\s*\n/).filter((paragraph) => paragraph.includes('fenbs-mcp@'));
    expect(paragraphs.length).toBeGreaterThan(2);
    for (const paragraph of paragraphs) expect(paragraph).toMatch(/after publication/i);
  });

  it('names the tarball of the version in package.json everywhere', () => {
    for (const [, named] of readme.matchAll(/fenbs-mcp-(\d+\.\d+\.\d+)\.tgz/g)) expect(named).toBe(version);
  });

  it('says a global install from the clone is a symlink and what npm link is for', () => {
    expect(readme).toMatch(/`npm install -g \.`, which installs a \*\*symlink\*\* to the clone/);
    expect(readme).toMatch(/`npm link`, which does that on purpose, for working on fenbs-mcp itself/);
  });

  it('installs a real copy from the packed tarball: the command prints its version and runs the demo', async () => {
    expect(install[0]!.split('\n')).toEqual(['npm ci', 'npm pack', `npm install -g ./fenbs-mcp-${version}.tgz`, 'fenbs-mcp --version']);
    const prefix = emptyPrefix();
    const env = { ...quietEnv, npm_config_cache: mkdtempSync(join(tmpdir(), 'fenbs-npm-cache-')) };
    await run('npm', ['install', '-g', '--prefix', prefix, `./fenbs-mcp-${version}.tgz`], { cwd: dirname(tarball.file), env });
    const bin = join(prefix, 'bin/fenbs-mcp');
    expect(lstatSync(join(prefix, 'lib/node_modules/fenbs-mcp')).isSymbolicLink()).toBe(false);
    expect((await run(bin, ['--version'], { env: quietEnv })).stdout.trim()).toBe(version);
    await runsTheDemo(bin);
  }, 120_000);

  it('runs the tarball through npx with a file: path, as written', async () => {
    expect(install[1]).toBe(`npx -y "file:$PWD/fenbs-mcp-${version}.tgz" --version`);
    const { stdout } = await run('bash', ['-c', install[1]!], {
      cwd: dirname(tarball.file),
      env: { ...quietEnv, npm_config_cache: mkdtempSync(join(tmpdir(), 'fenbs-npx-cache-')) },
    });
    expect(stdout.trim()).toBe(version);
  }, 120_000);
});

describe('the README client snippet, started as a desktop host starts it', () => {
  let tarball: PackedTarball;
  const clients: Client[] = [];

  beforeAll(async () => {
    tarball = await packTarball();
  }, 120_000);

  afterEach(async () => {
    for (const client of clients.splice(0)) await client.close();
  });

  /** The first client config of the README (Claude Desktop's), its tarball path replaced by the packed one. */
  function snippet(): { command: string; args: string[] } {
    const [first] = blocks('json');
    const entry = (JSON.parse(first!) as { mcpServers: Record<string, { command: string; args: string[] }> }).mcpServers.fenbs!;
    return { command: entry.command, args: entry.args.map((arg) => arg.replace(/\/Users\/you\/fenbs-mcp-[\d.]+\.tgz$/, tarball.file)) };
  }

  it.each([
    ['the file: form', (args: string[]) => args],
    ['the --package form', (args: string[]) => ['-y', '--package', args[1]!.slice('file:'.length), 'fenbs-mcp']],
  ])(
    'initializes and lists tools through %s, from / with an empty npm cache',
    async (_, form) => {
      const { command, args } = snippet();
      expect(command).toBe('npx');
      expect(args[1]).toBe(`file:${tarball.file}`);
      const transport = new StdioClientTransport({
        command,
        args: [...form(args), '--demo'],
        cwd: '/',
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '',
          npm_config_cache: mkdtempSync(join(tmpdir(), 'fenbs-host-cache-')),
          FENBS_MCP_LOG_LEVEL: 'warn',
        },
        stderr: 'pipe',
      });
      const client = new Client({ name: 'readme-desktop-host', version: '1.0.0' });
      clients.push(client);
      await client.connect(transport);
      expect(client.getServerVersion()).toMatchObject({ name: 'fenbs-demo' });
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toContain('tasks_get');
    },
    120_000,
  );
});
