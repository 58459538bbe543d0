// Shell mode through the built bin: the demo, the SDK v1 (2025-06-18) and v2 (2026-07-28) servers, a terminal, Ctrl-C.

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from '../helpers/spawn-bridge.js';
import { startSdkV1Server, type SdkV1Server } from '../helpers/sdk-v1-server.js';
import { startSdkV2Server, TASKS, type SdkV2Server } from '../helpers/sdk-v2-server.js';

interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the bin with pipes for stdin, stdout and stderr (no terminal anywhere). */
function fenbs(
  args: string[],
  options: { env?: Record<string, string>; stdin?: string; onStderr?: (stderr: string, child: ReturnType<typeof spawn>) => void } = {},
): Promise<Finished> {
  const child = spawn(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH ?? '', ...options.env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    options.onStderr?.(stderr, child);
  });
  child.stdin.on('error', () => undefined);
  child.stdin.end(options.stdin ?? '');
  return once(child, 'close').then(([code]) => ({ code: code as number | null, stdout, stderr }));
}

/** Sends one SIGINT, the first time `ready` holds (a second Ctrl-C ends the process without waiting, as designed). */
function interruptOnce(ready: (stderr: string) => boolean) {
  let sent = false;
  return (stderr: string, child: ReturnType<typeof spawn>) => {
    if (sent || !ready(stderr)) return;
    sent = true;
    child.kill('SIGINT');
  };
}

const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/** Runs the bin under `script`, which gives it a pseudo-terminal; stdout goes to a file, the screen is what stderr drew. */
async function inTerminal(args: string[]): Promise<{ screen: string; stdout: string }> {
  const out = join(mkdtempSync(join(tmpdir(), 'fenbs-shell-tty-')), 'stdout.txt');
  const command = `${quote(process.execPath)} ${quote(BIN)} ${args.map(quote).join(' ')} > ${quote(out)}`;
  const child = spawn('script', ['-qfec', command, '/dev/null'], { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '', TERM: 'xterm' } });
  let screen = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (screen += chunk));
  await once(child, 'close');
  return { screen, stdout: readFileSync(out, 'utf8') };
}

/** What only a progress bar or spinner writes: block characters, braille frames, carriage returns, escape sequences. */
// eslint-disable-next-line no-control-regex -- the escape and carriage return are exactly what a bar writes
const BAR_CHARACTERS = /[█░⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏\r\x1b]/;

describe('shell mode with --demo', () => {
  it('lists the four demo tools', async () => {
    const { code, stdout } = await fenbs(['tools', '--demo']);
    expect(code).toBe(0);
    expect(
      stdout
        .trimEnd()
        .split('\n')
        .map((line) => line.split(/\s+/)[0]),
    ).toEqual(['tasks_list', 'tasks_get', 'tasks_create', 'tasks_import']);
  });

  it('calls tasks_get and prints the task', async () => {
    const { code, stdout } = await fenbs(['call', 'tasks_get', 'ref=T-1', '--demo']);
    expect(code).toBe(0);
    expect(stdout).toBe('T-1 [open] Draft the release notes (assignee: claude)\n');
  });

  it('prints one JSON object holding structuredContent with --json', async () => {
    const { code, stdout } = await fenbs(['call', 'tasks_get', 'ref=T-1', '--demo', '--json']);
    expect(code).toBe(0);
    expect(JSON.parse(stdout).structuredContent).toMatchObject({ ref: 'T-1', status: 'open' });
  });

  it('refuses a missing required argument with exit 2, naming it', async () => {
    const { code, stdout, stderr } = await fenbs(['call', 'tasks_get', '--demo']);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain('missing required argument "ref"');
  });

  it('reads the arguments from stdin with --args -', async () => {
    const { stdout } = await fenbs(['call', 'tasks_get', '--args', '-', '--demo'], { stdin: '{"ref":"T-2"}' });
    expect(stdout).toBe('T-2 [open] Review the bridge README\n');
  });

  it('lists resources and prompts, reads a resource and gets a prompt', async () => {
    expect((await fenbs(['resources', '--demo'])).stdout).toContain('demo://board.json');
    expect((await fenbs(['read', 'demo://board/open', '--demo'])).stdout).toContain('T-2 [open]');
    expect((await fenbs(['prompts', '--demo', '--json'])).stdout).toContain('"plan_task"');
    expect((await fenbs(['prompt', 'plan_task', 'ref=T-1', '--demo'])).stdout).toMatch(/^user: Write a brief step-by-step plan/);
  });

  it('logs progress as plain lines without a terminal and writes no bar characters', async () => {
    const { code, stdout, stderr } = await fenbs(['call', 'tasks_import', 'count=5', '--demo']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^Imported 5 tasks/);
    expect(stderr).toContain('progress 5/5 100% imported 5 of 5');
    expect(stderr).not.toMatch(BAR_CHARACTERS);
  });

  it('draws a progress bar on a terminal that reaches 5/5 and 100 %, and erases it before the result', async () => {
    const { screen, stdout } = await inTerminal(['call', 'tasks_import', 'count=5', '--demo']);
    expect(screen).toMatch(/█+ 5\/5 100% imported 5 of 5/);
    // The last thing on the screen is the erase: no bar is left behind.
    expect(screen.endsWith('\r\x1b[2K')).toBe(true);
    expect(stdout).toMatch(/^Imported 5 tasks/);
  });
});

describe('shell mode against the SDK v1 server (2025-06-18)', () => {
  const token = `tok-${randomUUID()}`;
  let server: SdkV1Server;
  beforeAll(async () => {
    server = await startSdkV1Server({ mode: 'sse', token });
  });
  afterAll(() => server.close());
  const run = (args: string[], options: Parameters<typeof fenbs>[1] = {}) => fenbs([...args, '--url', server.url], { ...options, env: { FENBS_TOKEN: token } });

  it('lists the tools, calls one, prints --json and refuses a missing argument', async () => {
    expect((await run(['tools'])).stdout).toMatch(/^echo +Returns its text \(arguments: text\*\)$/m);
    expect(await run(['call', 'echo', 'text=hello'])).toMatchObject({ code: 0, stdout: 'hello\n' });
    expect(JSON.parse((await run(['call', 'echo', 'text=hello', '--json'])).stdout).content).toEqual([{ type: 'text', text: 'hello' }]);
    const missing = await run(['call', 'echo']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('missing required argument "text"');
  });

  it('says a failed --token-command once: the sentence is not logged and then printed again', async () => {
    const { code, stderr } = await fenbs(['tools', '--url', server.url, '--token-command', 'echo vault locked >&2; exit 4']);
    expect(code).toBe(3);
    expect(stderr.match(/--token-command exited with code 4: vault locked/g)).toHaveLength(1);
    expect(stderr.split('\n')[0]).toBe('fenbs-mcp: --token-command exited with code 4: vault locked');
  });

  it('says it cannot reach a server where nothing is listening, naming no request', async () => {
    const { code, stderr } = await fenbs(['tools', '--url', 'http://127.0.0.1:1/mcp'], { env: { FENBS_TOKEN: token } });
    expect(code).toBe(3);
    expect(stderr.split('\n')[0]).toBe('fenbs-mcp: cannot reach http://127.0.0.1:1/mcp: nothing is listening at 127.0.0.1:1');
    expect(stderr).not.toContain('server/discover');
  });

  it('sends notifications/cancelled on Ctrl-C during a long call and exits 130', async () => {
    const { code, stderr } = await run(['call', 'slow', 'ms=60000', 'steps=1'], {
      // The first progress line says the call is running on the server.
      onStderr: interruptOnce((text) => text.includes('progress 1/1')),
    });
    expect(code).toBe(130);
    expect(stderr).toContain('interrupted');
    const posts = server.requests.filter((request) => request.method === 'POST').map((request) => request.body);
    const call = posts.findLast((body) => body.method === 'tools/call');
    expect(posts).toContainEqual(expect.objectContaining({ method: 'notifications/cancelled', params: expect.objectContaining({ requestId: call.id }) }));
  });
});

describe('shell mode against the SDK v2 server (2026-07-28)', () => {
  const token = `tok-${randomUUID()}`;
  let server: SdkV2Server;
  beforeAll(async () => {
    server = await startSdkV2Server({ token });
  });
  afterAll(() => server.close());
  const run = (args: string[], options: Parameters<typeof fenbs>[1] = {}) => fenbs([...args, '--url', server.url], { ...options, env: { FENBS_TOKEN: token } });

  it('lists the tools, calls one, prints --json and refuses a missing argument', async () => {
    expect((await run(['tools'])).stdout).toMatch(/^tasks_get +Reads one task by its reference \(arguments: [^)]*\bref\*[^)]*\)$/m);
    expect(await run(['call', 'tasks_get', 'ref=T-1'])).toMatchObject({ code: 0, stdout: `${TASKS['T-1']}\n` });
    expect(JSON.parse((await run(['call', 'tasks_get', 'ref=T-1', '--json'])).stdout).content).toEqual([{ type: 'text', text: TASKS['T-1'] }]);
    const missing = await run(['call', 'tasks_get']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('missing required argument "ref"');
    expect(server.requests.some((request) => request.body?.method === 'initialize')).toBe(false);
  });

  it('closes the stream on Ctrl-C during a long call and exits 130', async () => {
    const { code } = await run(['call', 'slow_task', 'ms=60000'], { onStderr: interruptOnce((text) => text.includes('progress 0/1')) });
    expect(code).toBe(130);
    const call = server.requests.findLast((request) => request.body?.method === 'tools/call')!;
    await call.closed;
    expect(call.completed).toBe(false);
  });
});
