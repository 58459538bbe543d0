// What a person sees in a terminal: readable log lines on a TTY, JSON through a pipe, stdout always JSON-RPC; a server's text shown, never obeyed.

import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ONE_LINE_HINT } from '../../src/core/json-rpc.js';
import { MAX_MESSAGE_CHARS } from '../../src/core/terminal-text.js';
import { CLEAR_LINE } from '../../src/shell/progress.js';
import { MAX_NAME_CHARS } from '../../src/shell/render.js';
import { toTerminalLine } from '../../src/core/terminal-text.js';
import { BIN } from '../helpers/spawn-bridge.js';
import { startScriptedMcpServer, type ScriptedMcpServer } from '../helpers/scripted-mcp-server.js';

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
const HAS_SCRIPT = spawnSync('script', ['--version'], { stdio: 'ignore' }).error === undefined;
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

/**
 * Runs the bridge with stdin, stdout and stderr on the pseudo-terminal `script` gives it, `typed`
 * typed into that terminal (script's own stdin); stdout goes to a file. Resolves when it exits.
 */
async function typedInTerminal(args: string[], typed: string): Promise<string[]> {
  const out = join(mkdtempSync(join(tmpdir(), 'fenbs-tty-')), 'stdout.jsonl');
  const command = `${quote(process.execPath)} ${quote(BIN)} ${args.map(quote).join(' ')} > ${quote(out)}`;
  const child = spawn('script', ['-qec', command, '/dev/null'], { stdio: ['pipe', 'ignore', 'ignore'], env: { PATH: process.env.PATH ?? '', TERM: 'xterm' } });
  child.stdin.end(typed);
  await once(child, 'close');
  return readFileSync(out, 'utf8').trimEnd().split('\n');
}

describe.runIf(HAS_SCRIPT)('a message pasted over several lines into a terminal', () => {
  it('is read as one message when stdin is the terminal: one answer, no parse error', async () => {
    const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'tasks_get', arguments: { ref: 'T-1' } } };
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'tty', version: '1' } },
    };
    const typed = `${JSON.stringify(initialize, null, 2)}\n{"jsonrpc":"2.0","method":"notifications/initialized"}\n${JSON.stringify(call, null, 2)}\n`;
    const replies = (await typedInTerminal(['--demo'], typed)).map((line) => JSON.parse(line));
    expect(replies.map((reply) => reply.id)).toEqual([1, 2]);
    expect(replies[1].result.content[0].text).toContain('T-1');
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

/**
 * Everything a server could make a terminal do (CWE-150): set the window title (OSC 0), write the
 * clipboard (OSC 52), plant a hyperlink (OSC 8), clear the screen (CSI), ring the bell, start a CSI
 * with the one-byte C1 control, overwrite the line with a lone CR, reverse the text with a bidi
 * override, and start a line of its own.
 */
const HOSTILE = '\x1b]0;PWNED\x07\x1b]52;c;cHduZWQ=\x07\x1b]8;;https://evil/\x1b\\link\x1b]8;;\x1b\\\x1b[2J\x07\x9b6n\rOVERWRITTEN\u202Egnp.exe\nforged';
/** How a line shows it: every control as a visible escape. */
const SHOWN = toTerminalLine(HOSTILE);
/** The part every command's screen must show, as text: the window-title sequence, escaped. */
const SHOWN_TITLE = '\\x1b]0;PWNED\\x07';

/** A character a terminal acts on (C0 but LF, DEL, C1, line separators, bidi controls). */
// eslint-disable-next-line no-control-regex -- finding control characters is the point of the check
const ACTS_ON = /[\x00-\x09\x0B-\x1F\x7F-\x9F\u2028\u2029\u202A-\u202E\u2066-\u2069]/;
/** The only sequences the bridge itself writes: the bar's erase (EL 2) and pino-pretty's colours (SGR). */
// eslint-disable-next-line no-control-regex -- as above
const OWN_SEQUENCE = /^\x1b\[(2K|\d{1,2}m)$/;

/**
 * Every control on the screen that is not the bridge's own: what is left once the terminal's CRLF
 * line ends, the bar's CLEAR_LINE and the colours are taken out. Empty when nothing the server sent
 * could act on the terminal.
 */
function foreignControls(screen: string): string[] {
  // eslint-disable-next-line no-control-regex -- as above
  const sequences = screen.match(/\x1b\[[0-9;?]*[ -/]*[@-~]/g) ?? [];
  const foreign = sequences.filter((sequence) => !OWN_SEQUENCE.test(sequence));
  const rest = screen
    .replace(/\r\n/g, '\n')
    .replaceAll(CLEAR_LINE, '')
    // eslint-disable-next-line no-control-regex -- as above
    .replace(/\x1b\[\d{1,2}m/g, '');
  const characters = [...rest].filter((char) => ACTS_ON.test(char)).map((char) => `U+${char.codePointAt(0)!.toString(16).padStart(4, '0')}`);
  return [...foreign.map((sequence) => JSON.stringify(sequence)), ...characters];
}

describe.skipIf(!HAS_SCRIPT)('a server whose every string carries terminal controls, on a pseudo-terminal', () => {
  const tools = [
    { name: `listed${HOSTILE}`, title: HOSTILE, description: HOSTILE, inputSchema: { type: 'object' } },
    {
      name: 'show',
      description: `Shows.${HOSTILE}`,
      inputSchema: { type: 'object', properties: { [`text${HOSTILE}`]: { type: 'string', description: HOSTILE } } },
    },
    { name: 'fails', title: `a lone CR\roverwrites`, inputSchema: { type: 'object' } },
    { name: 'broken', inputSchema: { type: 'object' } },
    { name: 'spoof', inputSchema: { type: 'object' } },
    { name: 'typed', inputSchema: { type: 'object', properties: { [`p${HOSTILE}`]: { type: 'string' } }, required: [`p${HOSTILE}`] } },
    // A megabyte name, and a million combining characters on one letter.
    { name: 'n'.repeat(1024 * 1024), description: 'long' },
    { name: `e${'\u0301'.repeat(1_000_000)}`, description: 'combining' },
  ];
  const shown = {
    isError: false,
    content: [
      { type: 'text', text: `result${HOSTILE}` },
      { type: 'resource_link', uri: `file:///${HOSTILE}`, name: HOSTILE },
    ],
  };
  const failed = { isError: true, content: [{ type: 'text', text: `isError${HOSTILE}` }] };
  const resources = [{ uri: `demo://${HOSTILE}`, name: HOSTILE, title: HOSTILE, mimeType: `text/${HOSTILE}` }];
  const read = { contents: [{ uri: 'demo://r', text: `resource${HOSTILE}` }] };
  const prompts = [{ name: 'plan', title: HOSTILE, arguments: [{ name: `arg${HOSTILE}` }] }];
  const prompt = { description: HOSTILE, messages: [{ role: `user${HOSTILE}`, content: { type: 'text', text: `prompt${HOSTILE}` } }] };
  let server: ScriptedMcpServer;
  let refusing: { url: string; close: () => Promise<void> };

  beforeAll(async () => {
    server = await startScriptedMcpServer(
      {
        'tools/list': () => ({ result: { tools } }),
        'tools/call': (params) => {
          switch (params.name) {
            case 'show':
              return {
                stream: (id) => [
                  {
                    jsonrpc: '2.0',
                    method: 'notifications/progress',
                    params: { progressToken: params._meta.progressToken, progress: 1, total: 2, message: `bar${HOSTILE}` },
                  },
                  {
                    jsonrpc: '2.0',
                    method: 'notifications/progress',
                    params: { progressToken: params._meta.progressToken, progress: 1, message: `spinner${HOSTILE}` },
                  },
                  { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: { [`key${HOSTILE}`]: `log${HOSTILE}` } } },
                  { jsonrpc: '2.0', id, result: shown },
                ],
              };
            case 'fails':
              return { result: failed };
            case 'spoof':
              // A server can claim to be the bridge: its hint is printed like the bridge's own.
              return { error: { code: -32000, message: `spoof${HOSTILE}`, data: { bridgeCode: 'REMOTE_UNREACHABLE', hint: `hint${HOSTILE}` } } };
            default:
              return { error: { code: -32000, message: `error${HOSTILE}` } };
          }
        },
        'resources/list': () => ({ result: { resources } }),
        'resources/read': () => ({ result: read }),
        'prompts/list': () => ({ result: { prompts } }),
        'prompts/get': () => ({ result: prompt }),
      },
      { serverInfo: { name: `server${HOSTILE}`, version: `1${HOSTILE}` }, capabilities: { tools: {}, [`cap${HOSTILE}`]: {} } },
    );
    // A 401 whose WWW-Authenticate carries C1 controls: bytes 0x80-0x9f are allowed in a field value.
    const http = createServer((_req, res) => res.writeHead(401, { 'www-authenticate': 'Bearer error="\x9b2J\x9d0;PWNED\x9c"' }).end());
    http.listen(0, '127.0.0.1');
    await once(http, 'listening');
    refusing = { url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`, close: () => new Promise((resolve) => http.close(() => resolve())) };
  });
  afterAll(async () => {
    await server.close();
    await refusing.close();
  });

  const fenbs = (args: string[]) => `${quote(process.execPath)} ${quote(BIN)} ${args.map(quote).join(' ')}`;
  /** The screen a command draws: stdout and stderr both on the pseudo-terminal `script` gives it, stdin at EOF. */
  const screenOf = async (args: string[], redirect = '') => (await run('script', ['-qfec', `${fenbs(args)}${redirect}`, '/dev/null'])).stdout;
  const scratch = (name: string) => join(mkdtempSync(join(tmpdir(), 'fenbs-hostile-')), name);

  it.each([
    ['tools', ['tools'], [`listed${SHOWN}`, `${SHOWN_TITLE}`]],
    [
      'call, with a progress bar, a spinner and a server log line',
      ['call', 'show'],
      [`result${SHOWN_TITLE}`, `bar${SHOWN_TITLE}`, `spinner${SHOWN_TITLE}`, `log${SHOWN}`],
    ],
    ['call of a tool that reports isError', ['call', 'fails'], [`isError${SHOWN_TITLE}`]],
    ['call answered with a JSON-RPC error', ['call', 'broken'], [`error${SHOWN}`]],
    ['call answered with an error that names a bridge code and a hint', ['call', 'spoof'], [`spoof${SHOWN}`, `hint: hint${SHOWN}`]],
    ['call of a tool the server does not have', ['call', 'missing'], [`it has: listed${SHOWN}`]],
    ['call that misses a required argument whose name the server chose', ['call', 'typed'], [`missing required argument "p${SHOWN}"`]],
    ['resources', ['resources'], [`demo://${SHOWN}`]],
    ['read', ['read', 'demo://r'], [`resource${SHOWN_TITLE}`]],
    ['prompts', ['prompts'], [`arg${SHOWN}`]],
    ['prompt', ['prompt', 'plan'], [`user${SHOWN}: prompt${SHOWN_TITLE}`]],
    ['doctor', ['doctor'], [`server server${SHOWN} 1${SHOWN}; capabilities tools, cap${SHOWN}`]],
  ])('%s: prints every server string with its controls shown; every escape on the screen is the bridge’s own', async (_, args, expected) => {
    const screen = await screenOf([...args, '--url', server.url]);
    expect(foreignControls(screen)).toEqual([]);
    for (const text of expected) expect(screen.replace(/\r\n/g, '\n')).toContain(text);
  });

  it('doctor: shows a 401 challenge whose WWW-Authenticate carries C1 controls as escapes', async () => {
    const screen = await screenOf(['doctor', '--url', refusing.url]);
    expect(foreignControls(screen)).toEqual([]);
    expect(screen).toContain('WWW-Authenticate: Bearer error="\\x9b2J\\x9d0;PWNED\\x9c"');
  });

  it('draws the bar with its own erase only, and erases it before the result', async () => {
    const screen = await screenOf(['call', 'show', '--url', server.url]);
    expect(screen).toContain(`${CLEAR_LINE}${'█'.repeat(12)}${'░'.repeat(12)} 1/2 50% bar${SHOWN_TITLE}`);
    expect(screen).toContain(`${CLEAR_LINE}⠙ spinner${SHOWN_TITLE}`);
    expect(screen.indexOf(`result${SHOWN_TITLE}`)).toBeGreaterThan(screen.lastIndexOf(CLEAR_LINE));
  });

  it('bounds a megabyte name and a million combining characters in the list, and in the message naming the tools', async () => {
    const list = await screenOf(['tools', '--url', server.url]);
    expect(list).toContain(`${'n'.repeat(MAX_NAME_CHARS - 1)}…`);
    expect(list).toContain(`e${'\u0301'.repeat(MAX_NAME_CHARS - 2)}…`);
    expect(list.length).toBeLessThan(16 * 1024);
    const missing = await screenOf(['call', 'missing', '--url', server.url]);
    for (const line of missing.split('\r\n')) expect([...line].length).toBeLessThanOrEqual(6 * MAX_MESSAGE_CHARS);
  });

  it.each([
    ['tools', ['tools'], () => JSON.stringify(tools)],
    ['call', ['call', 'show'], () => JSON.stringify(shown)],
    ['call of a tool that reports isError', ['call', 'fails'], () => JSON.stringify(failed)],
    ['resources', ['resources'], () => JSON.stringify(resources)],
    ['read', ['read', 'demo://r'], () => JSON.stringify(read)],
    ['prompts', ['prompts'], () => JSON.stringify(prompts)],
    ['prompt', ['prompt', 'plan'], () => JSON.stringify(prompt)],
  ])('%s --json: prints exactly the JSON serialisation of what the server sent, as before', async (_, args, expected) => {
    const out = scratch('stdout.json');
    const screen = await screenOf([...args, '--url', server.url, '--json'], ` > ${quote(out)}`);
    // Buffer.equals: a deep comparison of megabytes byte by byte takes vitest many seconds.
    expect(readFileSync(out).equals(Buffer.from(`${expected()}\n`, 'utf8'))).toBe(true);
    expect(foreignControls(screen)).toEqual([]);
  });

  it('doctor --json: prints the report as plain JSON, the server’s strings as JSON escapes them', async () => {
    const out = scratch('doctor.json');
    await screenOf(['doctor', '--url', server.url, '--json'], ` > ${quote(out)}`);
    const text = readFileSync(out, 'utf8');
    expect(text).toBe(`${JSON.stringify(JSON.parse(text))}\n`);
    expect(text).toContain(JSON.stringify(`server${HOSTILE} 1${HOSTILE}`).slice(1, -1));
  });

  it('writes no escape at all into a file stdout goes to, and draws the bar on the terminal stderr still is', async () => {
    const out = scratch('stdout.txt');
    const screen = await screenOf(['call', 'show', '--url', server.url], ` > ${quote(out)}`);
    const text = readFileSync(out, 'utf8');
    expect(text).toContain(`result${SHOWN_TITLE}`);
    expect(text).not.toMatch(ACTS_ON);
    expect(screen).toContain(CLEAR_LINE);
    expect(foreignControls(screen)).toEqual([]);
  });

  it('logs progress as plain escaped lines, no bar and no colour, into a file stderr goes to while stdout is the terminal', async () => {
    const err = scratch('stderr.txt');
    const screen = await screenOf(['call', 'show', '--url', server.url], ` 2> ${quote(err)}`);
    const text = readFileSync(err, 'utf8');
    expect(text).toContain(`progress 1/2 50% bar${SHOWN}`);
    expect(text).toContain(`log${SHOWN}`);
    expect(text).not.toMatch(ACTS_ON);
    expect(screen).toContain(`result${SHOWN_TITLE}`);
    expect(foreignControls(screen)).toEqual([]);
  });

  it('prints escaped text through pipes too, where no terminal is in sight: the output may be shown on one later', async () => {
    const { stdout, stderr } = await run(process.execPath, [BIN, 'call', 'show', '--url', server.url]);
    expect(stdout).toContain(`result${SHOWN_TITLE}`);
    expect(stderr).toContain(`progress 1/2 50% bar${SHOWN}`);
    expect(stdout).not.toMatch(ACTS_ON);
    expect(stderr).not.toMatch(ACTS_ON);
  });
});
