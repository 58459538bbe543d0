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
    const messages = stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(messages.find((m) => m.id === 1).result.serverInfo.name).toBe('fenbs-demo');
    expect(messages.find((m) => m.id === 2).result.tools.map((t: { name: string }) => t.name)).toContain('tasks_import');
    const progress = messages.findIndex((m) => m.method === 'notifications/progress');
    const importResult = messages.findIndex((m) => m.id === 5);
    expect(progress).toBeGreaterThanOrEqual(0);
    expect(progress).toBeLessThan(importResult);
    expect(messages.filter((m) => 'id' in m && !('method' in m)).map((m) => m.id).sort()).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it.each(shell.slice(2).map((command) => [command]))('runs `%s`', async (command) => {
    const { stdout } = await run('bash', ['-o', 'pipefail', '-c', command], { cwd: root, env: { ...process.env, PATH: shimPath(), FENBS_MCP_LOG_LEVEL: 'warn' } });
    expect(stdout.trim()).not.toBe('');
    if (command.includes('jq')) expect(stdout.trim()).toBe('T-1 [open] Draft the release notes (assignee: claude)');
    if (command.includes('doctor')) expect(stdout).toContain('fenbs-mcp can bridge to this server.');
  });

  it.each(blocks('json').map((block) => [block]))('has a client config that parses and keeps the token out of args: %s', (block) => {
    const config = JSON.parse(block);
    const servers = config.mcpServers ?? config.servers;
    const fenbs = servers.fenbs;
    expect(fenbs.args).toContain('fenbs-mcp');
    expect(JSON.stringify(fenbs.args)).not.toMatch(/token|Bearer/i);
    expect(Object.keys(fenbs.env)).toEqual(['FENBS_TOKEN']);
  });

  it('has a Codex config with the token in env, not in args', () => {
    const [toml] = blocks('toml');
    expect(toml).toMatch(/^\[mcp_servers\.fenbs\]$/m);
    expect(toml).toMatch(/^args = \["-y", "fenbs-mcp"\]$/m);
    expect(toml).toMatch(/^env = \{ "FENBS_TOKEN" = /m);
  });
});
