// Shell commands in-process against real servers on loopback: the demo, the SDK v1 (2025-06-18) and v2 (2026-07-28) servers, scripted ones.

import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemoServer, type DemoServer } from '../../../src/demo/demo-server.js';
import { MAX_LIST_PAGES, SHELL_EXIT } from '../../../src/shell/commands.js';
import { MAX_MESSAGE_CHARS, toTerminalLine, toTerminalText } from '../../../src/core/terminal-text.js';
import { runShell } from '../../helpers/in-process-shell.js';
import { sendJson, startMcpServer } from '../../helpers/hardening-servers.js';
import { MAX_SHOWN_DEPTH } from '../../../src/shell/json-text.js';
import { startScriptedMcpServer } from '../../helpers/scripted-mcp-server.js';
import { startSdkV1Server, type SdkV1Server } from '../../helpers/sdk-v1-server.js';
import { startSdkV2Server, TASKS, type SdkV2Server } from '../../helpers/sdk-v2-server.js';
import { EXIT } from '../../../src/cli/exit-codes.js';

const token = `tok-${randomUUID()}`;
const env = { FENBS_TOKEN: token };

describe('shell commands against the demo server', () => {
  let demo: DemoServer;
  let args: string[];
  beforeAll(async () => {
    demo = await startDemoServer({ token });
    args = ['--url', demo.url.href];
  });
  afterAll(() => demo.close());

  it('lists the four tools, one per line with its title and its arguments', async () => {
    const run = await runShell({ kind: 'tools' }, args, { env });
    expect(run.code).toBe(SHELL_EXIT.OK);
    expect(run.stdout.trimEnd().split('\n')).toEqual([
      'tasks_list    List tasks (arguments: status)',
      'tasks_get     Get a task (arguments: ref*)',
      'tasks_create  Create a task (arguments: title*, assignee)',
      'tasks_import  Import tasks (arguments: count)',
    ]);
  });

  it('escapes C1 and bidi controls in --json output to a terminal, keeping the same JSON value', async () => {
    const server = await startScriptedMcpServer({
      'tools/list': () => ({
        result: { tools: [{ name: 'evil\u009b2J', description: 'desc \u009d0;pwned\u0007 \u202eexe.txt \u2066', inputSchema: { type: 'object' } }] },
      }),
    });
    const chunks: string[] = [];
    const terminal = Object.assign(
      new Writable({
        write(chunk: Buffer, _encoding, callback) {
          chunks.push(chunk.toString());
          callback();
        },
      }),
      { isTTY: true },
    );
    try {
      const run = await runShell({ kind: 'tools' }, ['--url', server.url], { env, json: true, stdout: terminal });
      expect(run.code).toBe(SHELL_EXIT.OK);
      const printed = chunks.join('');
      expect(printed).not.toMatch(/[\u0080-\u009f\u202a-\u202e\u2066-\u2069]/);
      expect(JSON.parse(printed)[0]).toMatchObject({ name: 'evil\u009b2J', description: 'desc \u009d0;pwned\u0007 \u202eexe.txt \u2066' });
    } finally {
      await server.close();
    }
  });

  it('prints a 100,000-level structuredContent cut to MAX_SHOWN_DEPTH with a note, and whole with --json, without overflowing the stack', async () => {
    const depth = 100_000;
    const deep = `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
    const server = await startMcpServer({
      route: ({ res, message }) => {
        if (message?.method === 'tools/list') {
          sendJson(res, 200, { jsonrpc: '2.0', id: message.id, result: { tools: [{ name: 'deep', inputSchema: { type: 'object' } }] } });
          return true;
        }
        if (message?.method !== 'tools/call') return false;
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(`{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":{"content":[],"structuredContent":${deep}}}`);
        return true;
      },
    });
    try {
      const shown = await runShell({ kind: 'call', name: 'deep', assignments: [] }, ['--url', server.url.href], { env });
      expect(shown.stderr).toBe('');
      expect(shown.code).toBe(SHELL_EXIT.OK);
      expect(shown.stdout).toContain(`(nested deeper than ${MAX_SHOWN_DEPTH} levels: the deeper parts are shown as …; --json prints all of it)`);
      expect(shown.stdout.split('\n').length).toBeLessThan(MAX_SHOWN_DEPTH * 2 + 10);
      const json = await runShell({ kind: 'call', name: 'deep', assignments: [] }, ['--url', server.url.href], { env, json: true });
      expect(json.code).toBe(SHELL_EXIT.OK);
      expect(json.stdout.trim()).toBe(`{"content":[],"structuredContent":${deep}}`);
    } finally {
      await server.close();
    }
  });

  it('lists the tools as one JSON array with --json', async () => {
    const run = await runShell({ kind: 'tools' }, args, { env, json: true });
    const tools = JSON.parse(run.stdout);
    expect(tools.map((tool: { name: string }) => tool.name)).toEqual(['tasks_list', 'tasks_get', 'tasks_create', 'tasks_import']);
  });

  it('calls a tool and prints its text', async () => {
    const run = await runShell({ kind: 'call', name: 'tasks_get', assignments: ['ref=T-1'] }, args, { env });
    expect(run).toMatchObject({ code: 0, stdout: 'T-1 [open] Draft the release notes (assignee: claude)\n' });
  });

  it('prints the whole result as one JSON object with --json, structuredContent included', async () => {
    const run = await runShell({ kind: 'call', name: 'tasks_get', assignments: ['ref=T-1'] }, args, { env, json: true });
    expect(run.stdout.trimEnd().split('\n')).toHaveLength(1);
    expect(JSON.parse(run.stdout).structuredContent).toEqual({ ref: 'T-1', title: 'Draft the release notes', status: 'open', assignee: 'claude' });
  });

  it('refuses a call without a required argument, naming it, with exit 2', async () => {
    const run = await runShell({ kind: 'call', name: 'tasks_get', assignments: [] }, args, { env });
    expect(run.code).toBe(SHELL_EXIT.USAGE);
    expect(run.stderr).toContain('missing required argument "ref"');
    expect(run.stderr).toContain('tasks_get takes: ref (string, required)');
    expect(run.stdout).toBe('');
  });

  it('refuses an argument of the wrong type, saying what it must be', async () => {
    const run = await runShell({ kind: 'call', name: 'tasks_import', assignments: ['count=many'] }, args, { env });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('argument "count" must be integer, got string "many"');
  });

  it('refuses an argument outside the schema’s minimum or maximum before sending, with exit 2', async () => {
    for (const [count, said] of [
      ['0', 'argument "count" must be at least 1, got 0'],
      ['51', 'argument "count" must be at most 50, got 51'],
    ] as const) {
      const run = await runShell({ kind: 'call', name: 'tasks_import', assignments: [`count=${count}`] }, args, { env });
      expect(run.code).toBe(SHELL_EXIT.USAGE);
      expect(run.stderr).toContain(`fenbs-mcp: tasks_import: ${said}\n`);
      expect(run.stderr).toContain('  nothing was sent\n');
    }
    const empty = await runShell({ kind: 'call', name: 'tasks_create', assignments: ['title='] }, args, { env });
    expect(empty.stderr).toContain('argument "title" must be at least 1 character long, got 0');
  });

  it('takes the arguments from --args, and from stdin with --args -', async () => {
    const fromOption = await runShell({ kind: 'call', name: 'tasks_get', assignments: [], args: '{"ref":"T-2"}' }, args, { env });
    expect(fromOption.stdout).toBe('T-2 [open] Review the bridge README\n');
    const fromStdin = await runShell({ kind: 'call', name: 'tasks_get', assignments: [], args: '-' }, args, { env, stdin: '{"ref": "T-3"}\n' });
    expect(fromStdin.stdout).toBe('T-3 [done] Ship fenbs-mcp 0.1\n');
  });

  it('refuses --args that are not a JSON object before connecting', async () => {
    const run = await runShell({ kind: 'call', name: 'tasks_get', assignments: [], args: '[1]' }, args, { env });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--args must be a JSON object of arguments, not an array');
  });

  it('exits 1 and prints the text on stderr when the tool reports isError', async () => {
    const run = await runShell({ kind: 'call', name: 'tasks_get', assignments: ['ref=T-99'] }, args, { env });
    expect(run.code).toBe(SHELL_EXIT.FAILED);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('No task T-99 on the board.');
  });

  it('names the tools there are when the tool does not exist, with exit 2', async () => {
    const run = await runShell({ kind: 'call', name: 'tasks_delete', assignments: [] }, args, { env });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('the server has no tool "tasks_delete"; it has: tasks_list, tasks_get, tasks_create, tasks_import');
  });

  it.each([
    ['--deny-tools', 'tasks_g*', 'Unknown tool: tasks_get (hidden by the bridge: it matches the --deny-tools pattern "tasks_g*")'],
    ['--allow-tools', 'tasks_list', 'Unknown tool: tasks_get (hidden by the bridge: it matches no --allow-tools pattern)'],
  ])('names the %s filter, as bridge mode does, when the tool called is hidden by it, with exit 2 and nothing sent', async (option, pattern, said) => {
    const run = await runShell({ kind: 'call', name: 'tasks_get', assignments: ['ref=T-1'] }, [...args, option, pattern], { env });
    expect(run.code).toBe(SHELL_EXIT.USAGE);
    expect(run.stderr).toContain(
      `fenbs-mcp: ${said}\n  hint: the bridge was started with ${option}; change that option to reach this tool\n  nothing was sent\n`,
    );
    expect(run.stderr).not.toContain('the server has no tool');
  });

  it('warns, once per list and naming the pattern and the number of tools, when an --allow-tools pattern matches none of them', async () => {
    const run = await runShell({ kind: 'tools' }, [...args, '--allow-tools', 'task_*,tasks_get'], { env });
    expect(run.code).toBe(SHELL_EXIT.OK);
    expect(run.stdout).toBe('tasks_get  Get a task (arguments: ref*)\n');
    expect(run.stderr).toBe(`fenbs-mcp: warning: --allow-tools pattern "task_*" matches none of the server's 4 tools\n`);
  });

  it('warns when --deny-tools hides every tool the server lists', async () => {
    const run = await runShell({ kind: 'tools' }, [...args, '--deny-tools', 'tasks_*'], { env });
    expect(run.code).toBe(SHELL_EXIT.OK);
    expect(run.stderr).toBe(`fenbs-mcp: warning: --deny-tools "tasks_*" hides every one of the server's 4 tools\n`);
  });

  it.each([
    ['tools', { kind: 'tools' } as const],
    ['call', { kind: 'call', name: 'tasks_get', assignments: ['ref=T-1'] } as const],
  ])('warns in %s, as bridge mode does, about a credential that is set but not used', async (_, command) => {
    const dir = mkdtempSync(join(tmpdir(), 'fenbs-shadow-'));
    const file = join(dir, 'token');
    writeFileSync(file, 'a-token-nobody-sends');
    const run = await runShell(command, [...args, '--token-file', file], { env });
    expect(run.code).toBe(SHELL_EXIT.OK);
    expect(run.stderr).toBe(`fenbs-mcp: warning: file ${file} is set but not used: env FENBS_TOKEN comes first\n`);
    expect(run.log).not.toContain('is set but not used');
  });

  it('logs progress as plain lines without a terminal, and draws no bar', async () => {
    const run = await runShell({ kind: 'call', name: 'tasks_import', assignments: ['count=3'] }, args, { env });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Imported 3 tasks: T-\d+, T-\d+, T-\d+\.\n$/);
    const lines = run.log
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line).msg);
    expect(lines).toEqual(['progress 1/3 33% imported 1 of 3', 'progress 2/3 66% imported 2 of 3', 'progress 3/3 100% imported 3 of 3']);
    expect(run.stderr).toBe('');
  });

  it('draws a bar on a terminal that reaches 5/5 and 100 %, then erases it', async () => {
    const run = await runShell({ kind: 'call', name: 'tasks_import', assignments: ['count=5'] }, args, { env, terminalColumns: 100 });
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('█'.repeat(24) + ' 5/5 100% imported 5 of 5');
    expect(run.stderr.endsWith('\r\x1b[2K')).toBe(true);
    expect(run.log).toBe('');
  });

  it('lists resources across pages, reads one, lists prompts and gets one', async () => {
    const resources = await runShell({ kind: 'resources' }, args, { env, json: true });
    expect(JSON.parse(resources.stdout).map((resource: { uri: string }) => resource.uri)).toEqual(['demo://board', 'demo://board/open', 'demo://board.json']);
    const text = await runShell({ kind: 'resources' }, args, { env });
    expect(text.stdout).toContain('demo://board.json  The task board as JSON (application/json)');
    const read = await runShell({ kind: 'read', uri: 'demo://board/open' }, args, { env });
    expect(read.stdout).toBe('T-1 [open] Draft the release notes (assignee: claude)\nT-2 [open] Review the bridge README\n');
    const readJson = await runShell({ kind: 'read', uri: 'demo://board' }, args, { env, json: true });
    expect(JSON.parse(readJson.stdout).contents[0].uri).toBe('demo://board');
    const prompts = await runShell({ kind: 'prompts' }, args, { env });
    expect(prompts.stdout).toBe('summarize_board  Summarize the board\nplan_task        Plan a task (arguments: ref*, style)\n');
    const prompt = await runShell({ kind: 'prompt', name: 'plan_task', assignments: ['ref=T-2', 'style=detailed'] }, args, { env });
    expect(prompt.stdout).toBe('user: Write a detailed step-by-step plan for this task:\nT-2 [open] Review the bridge README\n');
    const promptJson = await runShell({ kind: 'prompt', name: 'summarize_board', assignments: [], args: '{}' }, args, { env, json: true });
    expect(JSON.parse(promptJson.stdout).messages).toHaveLength(1);
  });

  it('refuses a prompt without its required argument, and an unknown prompt, with exit 2', async () => {
    const missing = await runShell({ kind: 'prompt', name: 'plan_task', assignments: [] }, args, { env });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('plan_task: missing required argument "ref"');
    const unknown = await runShell({ kind: 'prompt', name: 'nope', assignments: [] }, args, { env });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('the server has no prompt "nope"; it has: summarize_board, plan_task');
  });

  it('sends prompt arguments as strings, whatever JSON they were given as', async () => {
    const run = await runShell({ kind: 'prompt', name: 'plan_task', assignments: ['style:="short"'], args: '{"ref": 2}' }, args, { env });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('no task 2 on the board');
    const forced = await runShell({ kind: 'prompt', name: 'plan_task', assignments: ['ref=T-1', 'style:=7'] }, args, { env });
    expect(forced.stdout).toMatch(/^user: Write a 7 step-by-step plan/);
  });

  it('suggests the listed resource nearest to a mistyped URI the server refuses, as prompt suggests names', async () => {
    const run = await runShell({ kind: 'read', uri: 'demo://bord/opne' }, args, { env });
    expect(run.code).toBe(SHELL_EXIT.FAILED);
    expect(run.stderr).toContain('\n  did you mean demo://board/open?\n');
    const json = await runShell({ kind: 'read', uri: 'demo://bord/opne' }, args, { env, json: true });
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, error: { code: 'JSON_RPC_ERROR', rpcCode: -32002, hint: 'did you mean demo://board/open?' } });
  });

  it('exits 1 with the server message when the server answers with a JSON-RPC error', async () => {
    const run = await runShell({ kind: 'read', uri: 'demo://nowhere' }, args, { env });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'fenbs-mcp: reading the resource failed: Resource not found: "demo://nowhere" (JSON-RPC error -32002)\n  the server lists: demo://board, demo://board/open, demo://board.json\n',
    );
  });

  it('exits 3 and points at doctor when the credentials are refused', async () => {
    const run = await runShell({ kind: 'tools' }, args, { env: { FENBS_TOKEN: 'wrong-token-0123456789' } });
    expect(run.code).toBe(SHELL_EXIT.UNREACHABLE);
    expect(run.stderr).toContain('fenbs-mcp doctor');
  });

  it('waits for a slow reader of stdout before it finishes', async () => {
    const written: string[] = [];
    // Takes one chunk at a time, each a turn of the event loop later: every write past the first says "wait".
    const slow = new Writable({
      highWaterMark: 1,
      write(chunk: Buffer, _encoding, callback) {
        written.push(chunk.toString('utf8'));
        setImmediate(callback);
      },
    });
    const run = await runShell({ kind: 'tools' }, args, { env, stdout: slow });
    expect(run.code).toBe(0);
    expect(written.join('')).toMatch(/^tasks_list .*\ntasks_import +Import tasks \(arguments: count\)\n$/s);
  });

  it('finishes with exit 0 when the reader of stdout has gone away', async () => {
    const gone = new Writable({
      highWaterMark: 1,
      write(_chunk, _encoding, callback) {
        callback(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
      },
    });
    const run = await runShell({ kind: 'tools' }, args, { env, stdout: gone });
    expect(run.code).toBe(0);
  });

  it('uses the exit codes of the CLI table', () => {
    expect(SHELL_EXIT).toEqual({ OK: EXIT.OK, FAILED: EXIT.FAILURE, USAGE: EXIT.USAGE, UNREACHABLE: EXIT.UNREACHABLE, INTERRUPTED: EXIT.INTERRUPTED });
  });
});

describe('shell commands against a server that is not there', () => {
  it('exits 3 with the reason and a hint', async () => {
    const run = await runShell({ kind: 'tools' }, ['--url', 'http://127.0.0.1:1/mcp', '--connect-timeout', '2000'], { env });
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(/nothing is listening at 127\.0\.0\.1:1\n {2}hint: /);
  });

  it('says it cannot reach the server, not that server/discover failed', async () => {
    const run = await runShell({ kind: 'call', name: 'x', assignments: [] }, ['--url', 'http://127.0.0.1:1/mcp'], { env });
    expect(run.code).toBe(SHELL_EXIT.UNREACHABLE);
    expect(run.stderr.split('\n')[0]).toBe('fenbs-mcp: cannot reach http://127.0.0.1:1/mcp: nothing is listening at 127.0.0.1:1');
    expect(run.stderr).not.toContain('server/discover');
  });
});

describe('shell commands against a 2025 server that fails server/discover', () => {
  it('fall back to initialize when it answers the probe with a 500 page, and list the tools', async () => {
    const server = await startScriptedMcpServer(
      { 'tools/list': () => ({ result: { tools: [{ name: 'only_tool' }] } }) },
      { discover: { status: 500, contentType: 'text/html', body: '<h1>Internal Server Error</h1>' } },
    );
    try {
      const run = await runShell({ kind: 'tools' }, ['--url', server.url], { env });
      expect(run).toMatchObject({ code: SHELL_EXIT.OK, stdout: 'only_tool\n', stderr: '' });
      expect(server.received.map((m) => m.method)).toEqual(['server/discover', 'initialize', 'notifications/initialized', 'tools/list']);
    } finally {
      await server.close();
    }
  });

  it('say the credential failed without blaming the first request', async () => {
    const demo = await startDemoServer({ token });
    try {
      const run = await runShell({ kind: 'tools' }, ['--url', demo.url.href, '--token-command', 'echo vault locked >&2; exit 4'], { env: {} });
      expect(run.code).toBe(SHELL_EXIT.UNREACHABLE);
      expect(run.stderr.split('\n')[0]).toBe('fenbs-mcp: --token-command exited with code 4: vault locked');
    } finally {
      await demo.close();
    }
  });
});

describe('shell commands against the SDK v1 server (2025-06-18)', () => {
  let server: SdkV1Server;
  beforeAll(async () => {
    server = await startSdkV1Server({ mode: 'sse', token });
  });
  afterAll(() => server.close());

  it('fall back from server/discover to initialize, then list and call', async () => {
    const tools = await runShell({ kind: 'tools' }, ['--url', server.url], { env });
    expect(tools.stdout).toMatch(/^echo +Returns its text \(arguments: text\*\)$/m);
    const methods = server.requests.filter((request) => request.method === 'POST').map((request) => request.body.method);
    expect(methods.slice(0, 4)).toEqual(['server/discover', 'initialize', 'notifications/initialized', 'tools/list']);
    const call = await runShell({ kind: 'call', name: 'echo', assignments: ['text=hello über'] }, ['--url', server.url], { env });
    expect(call).toMatchObject({ code: 0, stdout: 'hello über\n' });
  });

  it('send notifications/cancelled for the call when interrupted, and exit 130', async () => {
    const interrupt = new AbortController();
    const run = await runShell({ kind: 'call', name: 'slow', assignments: ['ms=60000', 'steps=1'] }, ['--url', server.url], {
      env,
      interrupt,
      // The first progress line says the call is running on the server.
      onLog: (log) => log.includes('progress 1/1') && interrupt.abort(),
    });
    expect(run.code).toBe(SHELL_EXIT.INTERRUPTED);
    expect(run.stderr).toContain('interrupted while calling the tool\n');
    const posts = server.requests.filter((request) => request.method === 'POST').map((request) => request.body);
    const call = posts.findLast((body) => body.method === 'tools/call');
    // 2025-06-18 basic/utilities/cancellation: the notification names the request being cancelled.
    expect(posts).toContainEqual(expect.objectContaining({ method: 'notifications/cancelled', params: expect.objectContaining({ requestId: call.id }) }));
  });
});

describe('shell commands against the SDK v2 server (2026-07-28)', () => {
  let server: SdkV2Server;
  beforeAll(async () => {
    server = await startSdkV2Server({ token });
  });
  afterAll(() => server.close());

  it('speak 2026-07-28 after server/discover: _meta on every request, no initialize', async () => {
    const run = await runShell({ kind: 'call', name: 'tasks_get', assignments: ['ref=T-1'] }, ['--url', server.url], { env });
    expect(run).toMatchObject({ code: 0, stdout: `${TASKS['T-1']}\n` });
    const bodies = server.requests.filter((request) => request.method === 'POST').map((request) => request.body);
    expect(bodies.map((body) => body.method)).toEqual(['server/discover', 'tools/list', 'tools/call']);
    for (const body of bodies) {
      expect(body.params._meta).toMatchObject({
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': {},
        'io.modelcontextprotocol/clientInfo': { name: 'fenbs-mcp-tests', version: '1.0.0' },
      });
    }
  });

  it('send typed arguments that the server mirrors into headers', async () => {
    const run = await runShell({ kind: 'call', name: 'tasks_find', assignments: ['assignee=ada', 'limit=3', 'open=true'] }, ['--url', server.url], { env });
    expect(JSON.parse(run.stdout)).toEqual({ assignee: 'ada', limit: 3, open: true, label: null });
  });

  it('close the stream when interrupted, and exit 130', async () => {
    const interrupt = new AbortController();
    const run = await runShell({ kind: 'call', name: 'slow_task', assignments: ['ms=60000'] }, ['--url', server.url], {
      env,
      interrupt,
      onLog: (log) => log.includes('progress 0/1') && interrupt.abort(),
    });
    expect(run.code).toBe(130);
    const call = server.requests.findLast((request) => request.body?.method === 'tools/call')!;
    // 2026-07-28 transports §Cancellation: closing the response stream is the cancellation.
    await call.closed;
    expect(call.completed).toBe(false);
    expect(server.requests.some((request) => request.body?.method === 'notifications/cancelled')).toBe(false);
  });
});

describe('shell commands against scripted servers', () => {
  it('follow nextCursor for at most MAX_LIST_PAGES pages and say they stopped', async () => {
    let page = 0;
    const server = await startScriptedMcpServer({ 'tools/list': () => ({ result: { tools: [{ name: `t${++page}` }], nextCursor: 'more' } }) });
    try {
      const run = await runShell({ kind: 'tools' }, ['--url', server.url], { env });
      expect(run.code).toBe(0);
      expect(run.stdout.trimEnd().split('\n')).toHaveLength(MAX_LIST_PAGES);
      expect(run.stderr).toContain(`listing the tools: stopped after ${MAX_LIST_PAGES} pages`);
    } finally {
      await server.close();
    }
  });

  it('summarize content that is not text, answer a ping, and show a spinner for progress without a total', async () => {
    const server = await startScriptedMcpServer({
      'tools/list': () => ({
        result: {
          tools: [
            {
              name: 'shot',
              description: 'Takes a screenshot. Slowly.',
              inputSchema: { type: 'object', additionalProperties: false, properties: { size: { type: 'array', items: { type: 'integer' } } } },
            },
          ],
        },
      }),
      'tools/call': (params) => ({
        stream: (id) => [
          { jsonrpc: '2.0', id: 'srv-1', method: 'ping' },
          { jsonrpc: '2.0', id: 'srv-2', method: 'roots/list' },
          { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: params._meta.progressToken, progress: 1, message: 'focusing' } },
          { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'hello' } },
          {
            jsonrpc: '2.0',
            id,
            result: {
              content: [
                { type: 'image', mimeType: 'image/png', data: Buffer.alloc(2048).toString('base64') },
                { type: 'audio', mimeType: 'audio/wav', data: Buffer.alloc(10).toString('base64') },
                { type: 'resource_link', uri: 'file:///a.png', name: 'a.png' },
                { type: 'resource', resource: { uri: 'file:///b.txt', text: 'embedded text' } },
                { type: 'resource', resource: { uri: 'file:///c.bin', blob: 'AAAA' } },
                { type: 'hologram' },
              ],
            },
          },
        ],
      }),
    });
    try {
      const schema = await runShell({ kind: 'call', name: 'shot', assignments: ['size:=[1,"x"]', 'zoom=2'] }, ['--url', server.url], { env });
      expect(schema.code).toBe(2);
      expect(schema.stderr).toContain('argument "size[1]" must be integer, got string "x"');
      expect(schema.stderr).toContain('unknown argument "zoom" (known: size)');
      const serverLogs: unknown[] = [];
      const run = await runShell({ kind: 'call', name: 'shot', assignments: ['size:=[1,2]'] }, ['--url', server.url], {
        env,
        terminalColumns: 40,
        onServerLog: (level, data) => serverLogs.push([level, data]),
      });
      expect(serverLogs).toEqual([['info', 'hello']]);
      expect(run.code).toBe(0);
      expect(run.stdout).toBe(
        '[image image/png, 2.0 KiB]\n[audio audio/wav, 10 bytes]\n[link file:///a.png (a.png)]\nembedded text\n[binary file:///c.bin, 3 bytes; --json shows the data]\n[hologram content]\n',
      );
      expect(run.stderr).toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] focusing \(1\)/);
      expect(server.received).toContainEqual({ jsonrpc: '2.0', id: 'srv-1', result: {} });
      // A shell command offers the server nothing but ping: anything else is Method not found.
      expect(server.received).toContainEqual(expect.objectContaining({ id: 'srv-2', error: expect.objectContaining({ code: -32601 }) }));
    } finally {
      await server.close();
    }
  });

  it('print structuredContent when a result has no content, and exit 1 when the server asks for input', async () => {
    const server = await startScriptedMcpServer({
      'tools/list': () => ({ result: { tools: [{ name: 'data' }, { name: 'ask' }] } }),
      'tools/call': (params) =>
        params.name === 'data'
          ? { result: { content: [], structuredContent: { n: 1 } } }
          : { result: { resultType: 'input_required', inputRequests: { confirm: { method: 'elicitation/create' } } } },
    });
    try {
      const data = await runShell({ kind: 'call', name: 'data', assignments: [] }, ['--url', server.url], { env });
      expect(data.stdout).toBe('{\n  "n": 1\n}\n');
      const ask = await runShell({ kind: 'call', name: 'ask', assignments: [] }, ['--url', server.url], { env, json: true });
      expect(ask.code).toBe(1);
      expect(ask.stderr).toContain('ask asks for input (confirm), which shell commands cannot answer');
      expect(JSON.parse(ask.stdout).resultType).toBe('input_required');
    } finally {
      await server.close();
    }
  });

  it('describe what a tool takes when the arguments do not fit, and say when a server has no tools or prompts', async () => {
    const server = await startScriptedMcpServer({
      'tools/list': (params) =>
        params.cursor === undefined
          ? {
              result: {
                tools: [{ name: 'typed', inputSchema: { type: 'object', properties: { a: { type: ['string', 'null'] }, b: {} }, required: ['c'] } }],
                nextCursor: 'p2',
              },
            }
          : {
              result: {
                tools: [
                  { name: 'bare', inputSchema: { required: ['x'] } },
                  { name: 'quiet', inputSchema: { type: 'object' } },
                ],
              },
            },
      'tools/call': () => ({ result: { content: [] } }),
    });
    try {
      const typed = await runShell({ kind: 'call', name: 'typed', assignments: [] }, ['--url', server.url], { env });
      expect(typed.stderr).toContain('typed takes: a (string|null), b (any), nothing was sent'.replace(', nothing', '\n  nothing'));
      const bare = await runShell({ kind: 'call', name: 'bare', assignments: [] }, ['--url', server.url], { env });
      expect(bare.stderr).toContain('bare takes: no arguments');
      const quiet = await runShell({ kind: 'call', name: 'quiet', assignments: [] }, ['--url', server.url], { env });
      expect(quiet).toMatchObject({ code: 0, stdout: '' });
      const prompts = await runShell({ kind: 'prompt', name: 'any', assignments: [] }, ['--url', server.url], { env });
      expect(prompts.code).toBe(1);
      expect(prompts.stderr).toContain('listing the prompts failed: Method not found: prompts/list (JSON-RPC error -32601)');
    } finally {
      await server.close();
    }
    const empty = await startScriptedMcpServer({ 'tools/list': () => ({ result: { tools: [] } }), 'prompts/list': () => ({ result: { prompts: [] } }) });
    try {
      expect((await runShell({ kind: 'call', name: 'x', assignments: [] }, ['--url', empty.url], { env })).stderr).toContain('the server has no tool "x"\n');
      expect((await runShell({ kind: 'prompt', name: 'y', assignments: [] }, ['--url', empty.url], { env })).stderr).toContain(
        'the server has no prompt "y"\n',
      );
    } finally {
      await empty.close();
    }
  });
});

describe('shell commands interrupted before they start', () => {
  it('send nothing and exit 130', async () => {
    const interrupt = new AbortController();
    interrupt.abort();
    const run = await runShell({ kind: 'tools' }, ['--url', 'http://127.0.0.1:1/mcp'], { env, interrupt });
    expect(run.code).toBe(130);
  });
});

describe('shell commands against a server whose every string carries terminal controls', () => {
  const HOSTILE = '\x1b]0;PWNED\x07\x1b]52;c;cHduZWQ=\x07\x1b]8;;https://evil.example/\x1b\\\x1b[2J\x07\x9b2J\u202Eok\rhidden\nforged line';
  /** A character a terminal would act on; line feeds are checked apart, by counting lines. */
  // eslint-disable-next-line no-control-regex -- finding control characters is the point of the check
  const ACTS_ON = /[\x00-\x09\x0B-\x1F\x7F-\x9F\u2028\u2029\u202A-\u202E\u2066-\u2069]/;
  const tool = {
    name: `run${HOSTILE}`,
    title: HOSTILE,
    inputSchema: { type: 'object', properties: { [`p${HOSTILE}`]: { type: 'string', enum: [HOSTILE] } }, required: [`p${HOSTILE}`] },
  };
  const failing = { name: 'fails', inputSchema: { type: 'object' } };
  const broken = { name: 'broken', inputSchema: { type: 'object' } };
  const spoofing = { name: 'spoofing', inputSchema: { type: 'object' } };
  let server: Awaited<ReturnType<typeof startScriptedMcpServer>>;
  let args: string[];
  beforeAll(async () => {
    server = await startScriptedMcpServer({
      'tools/list': () => ({ result: { tools: [tool, failing, broken, spoofing] } }),
      'tools/call': (params) => {
        if (params.name === 'fails') return { result: { isError: true, content: [{ type: 'text', text: `failed${HOSTILE}` }] } };
        if (params.name === 'broken') return { error: { code: -32000, message: `boom${HOSTILE}` } };
        // A server can claim to be the bridge: its hint is printed like the bridge's own.
        if (params.name === 'spoofing')
          return { error: { code: -32000, message: `spoof${HOSTILE}`, data: { bridgeCode: 'REMOTE_UNREACHABLE', hint: `hint${HOSTILE}` } } };
        return { result: { content: [{ type: 'text', text: `ok${HOSTILE}` }] } };
      },
    });
    args = ['--url', server.url];
  });
  afterAll(() => server.close());

  it('prints the result, an isError text, a JSON-RPC error, a hint, schema messages and tool names with every control shown, one line each', async () => {
    const ok = await runShell({ kind: 'call', name: tool.name, assignments: [], args: JSON.stringify({ [`p${HOSTILE}`]: HOSTILE }) }, args, { env });
    expect(ok.code).toBe(0);
    expect(ok.stdout).toBe(`ok${toTerminalText(HOSTILE)}\n`);
    const runs = [
      await runShell({ kind: 'call', name: 'fails', assignments: [] }, args, { env }),
      await runShell({ kind: 'call', name: 'broken', assignments: [] }, args, { env }),
      await runShell({ kind: 'call', name: 'spoofing', assignments: [] }, args, { env }),
      await runShell({ kind: 'call', name: tool.name, assignments: ['x=1'] }, args, { env }),
      await runShell({ kind: 'call', name: tool.name, assignments: [], args: JSON.stringify({ [`p${HOSTILE}`]: 'other' }) }, args, { env }),
      await runShell({ kind: 'call', name: 'missing', assignments: [] }, args, { env }),
    ];
    expect(runs.map((run) => run.code)).toEqual([
      SHELL_EXIT.FAILED,
      SHELL_EXIT.FAILED,
      SHELL_EXIT.UNREACHABLE,
      SHELL_EXIT.USAGE,
      SHELL_EXIT.USAGE,
      SHELL_EXIT.USAGE,
    ]);
    const [fails, broken, spoofed, missingArgument, wrongValue, noTool] = runs.map((run) => run.stderr);
    expect(fails).toBe(`fenbs-mcp: fails reported an error:\nfailed${toTerminalText(HOSTILE)}\n`);
    expect(broken).toBe(`fenbs-mcp: calling the tool failed: boom${toTerminalLine(HOSTILE)} (JSON-RPC error -32000)\n`);
    expect(spoofed).toContain(`  hint: hint${toTerminalLine(HOSTILE)}\n`);
    expect(missingArgument).toContain(`missing required argument "p${toTerminalLine(HOSTILE)}"`);
    expect(missingArgument).toContain(`unknown argument "x" (known: p${toTerminalLine(HOSTILE)})`);
    expect(wrongValue).toContain(`must be one of ${toTerminalLine(JSON.stringify(HOSTILE))}`);
    expect(noTool).toContain(`it has: run${toTerminalLine(HOSTILE)}, fails, broken, spoofing`);
    for (const text of [ok.stderr, ...runs.map((run) => run.stderr + run.stdout)]) expect(text).not.toMatch(ACTS_ON);
    // Only the bridge's own line breaks: every message is one line, an isError text keeps its own.
    expect(missingArgument!.split('\n')).toHaveLength(5);
  });

  it('prints with --json exactly the serialisation of what the server sent, controls escaped only as JSON escapes them', async () => {
    const list = await runShell({ kind: 'tools' }, args, { env, json: true });
    expect(list.stdout).toBe(`${JSON.stringify([tool, failing, broken, spoofing])}\n`);
    const call = await runShell({ kind: 'call', name: 'fails', assignments: [] }, args, { env, json: true });
    expect(call.stdout).toBe(`${JSON.stringify({ isError: true, content: [{ type: 'text', text: `failed${HOSTILE}` }] })}\n`);
  });

  it('bounds a line about the server at MAX_MESSAGE_CHARS: a megabyte error message is cut', async () => {
    const huge = await startScriptedMcpServer({ 'resources/read': () => ({ error: { code: -32000, message: 'e'.repeat(1024 * 1024) } }) });
    try {
      const run = await runShell({ kind: 'read', uri: 'a://b' }, ['--url', huge.url], { env });
      expect(run.code).toBe(SHELL_EXIT.FAILED);
      expect(run.stderr.split('\n')[0]).toBe(
        `fenbs-mcp: reading the resource failed: ${'e'.repeat(MAX_MESSAGE_CHARS - 'reading the resource failed: '.length - 1)}…`,
      );
    } finally {
      await huge.close();
    }
  });
});
