// What a person sees in a terminal: readable log lines on a TTY, JSON through a pipe, stdout always JSON-RPC.

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ONE_LINE_HINT } from '../../src/json-rpc.js';
import { BIN } from '../helpers/spawn-bridge.js';

/** Runs a command with stdin at EOF (/dev/null) and collects what it printed. */
async function run(command: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '', TERM: 'xterm' } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  await once(child, 'close');
  return { stdout, stderr };
}
const SESSION = new URL('../../examples/session.jsonl', import.meta.url).pathname;
// An optional colour code (ESC [ n m) may come before the level name.
// eslint-disable-next-line no-control-regex -- the escape character is exactly what a coloured level starts with
const READABLE_LINE = /^\[\d\d:\d\d:\d\d\.\d{3}\] (\x1b\[\d+m)?(INFO|WARN|ERROR|DEBUG)/;
const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/**
 * Runs the bridge under `script`, which gives it a pseudo-terminal: what `script` prints is what
 * the terminal shows (stderr, and stdin's echo); stdout goes to a file so it can be checked apart.
 */
async function inTerminal(args: string[], stdin: string): Promise<{ screen: string; stdout: string[] }> {
  const out = join(mkdtempSync(join(tmpdir(), 'fenbs-tty-')), 'stdout.jsonl');
  const command = `${quote(process.execPath)} ${quote(BIN)} ${args.map(quote).join(' ')} ${stdin} > ${quote(out)}`;
  const { stdout: screen } = await run('script', ['-qec', command, '/dev/null']);
  const stdout = readFileSync(out, 'utf8').trimEnd().split('\n');
  return { screen: screen.replace(/\r/g, ''), stdout };
}

const logLines = (screen: string) => screen.split('\n').filter((line) => line.trim() !== '');

describe('logs on a terminal', () => {
  it('are readable lines (time, level, message) while stdout still carries only JSON-RPC', async () => {
    const { screen, stdout } = await inTerminal(['--demo'], `< ${quote(SESSION)}`);
    const lines = logLines(screen);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(line).toMatch(READABLE_LINE);
    expect(screen).toContain('fenbs-mcp started');
    expect(screen).not.toContain('"level":');
    for (const line of stdout) expect(JSON.parse(line)).toMatchObject({ jsonrpc: '2.0' });
    expect(stdout.length).toBeGreaterThanOrEqual(5);
  });

  it('say once, when stdin is the terminal too, that messages go one per line and Ctrl-D ends', async () => {
    // No redirection: stdin is the terminal, which `script` closes when its own stdin ends.
    const { screen } = await inTerminal(['--demo'], '');
    expect(screen.match(/one message per line, Ctrl-D to end/g)).toHaveLength(1);
  });

  it('stay JSON on a terminal with --log-format json', async () => {
    const { screen } = await inTerminal(['--demo', '--log-format', 'json'], `< ${quote(SESSION)}`);
    for (const line of logLines(screen)) expect(JSON.parse(line)).toHaveProperty('level');
  });
});

describe('logs through a pipe', () => {
  it('are JSON lines, for desktop hosts and files', async () => {
    const { stderr } = await run(process.execPath, [BIN, '--demo']);
    const lines = stderr.trimEnd().split('\n');
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(JSON.parse(line)).toMatchObject({ name: 'fenbs-mcp' });
  });

  it('are readable lines with --log-format pretty', async () => {
    const { stderr } = await run(process.execPath, [BIN, '--demo', '--log-format', 'pretty']);
    for (const line of stderr.trimEnd().split('\n')) expect(line).toMatch(READABLE_LINE);
  });
});

describe('a message pasted over several lines', () => {
  it('gets a parse error per line whose hint says each message must be on one line', async () => {
    const { stdout } = await inTerminal(['--demo'], `< ${quote(writeTemp('{\n  "jsonrpc": "2.0",\n  "id": 1,\n  "method": "ping"\n}\n'))}`);
    const replies = stdout.map((line) => JSON.parse(line));
    expect(replies.length).toBeGreaterThanOrEqual(3);
    for (const reply of replies) expect(reply.error).toMatchObject({ code: -32700, data: { bridgeCode: 'PARSE_ERROR', hint: ONE_LINE_HINT } });
  });
});

function writeTemp(text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'fenbs-paste-')), 'paste.txt');
  writeFileSync(path, text);
  return path;
}

describe('a reader of stdout that goes away early', () => {
  it.each([['--help'], ['--version'], ['help', 'doctor']])('does not crash `fenbs-mcp %s | head -1`: exit 0, no stack trace', async (...args) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    // Closed before the child writes anything: its first write fails with EPIPE.
    child.stdout.destroy();
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });
});
