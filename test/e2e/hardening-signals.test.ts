// Signals and exit codes: in-flight work is aborted and answered, the session ends, the process is gone within 1 s.

import { once } from 'node:events';
import { closeSync, mkdtempSync, openSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openSession, serversForFile, stdoutProblems, waitForStderr, type McpServer } from '../helpers/hardening-servers.js';
import { BIN, spawnBridge, type BridgeProcess } from '../helpers/spawn-bridge.js';

/** SIGTERM/SIGINT/SIGHUP end the process within a second: a host that stops a server waits no longer. */
const SIGNAL_EXIT_MS = 1000;

const { serve, track: stopAfterAll } = serversForFile();
const track = (bridge: BridgeProcess) => (stopAfterAll(() => bridge.kill()), bridge);

/** A 2025 server with sessions whose `stall` tool never answers. */
const stallingServer = () => serve({ sessions: true, route: ({ message }) => message?.params?.name === 'stall' });

/** A bridge with an open session (initialize + initialized accepted). */
const startSession = (server: McpServer, args: string[] = []) => openSession(track(spawnBridge(['--url', server.url.href, ...args])), server);

describe('signals', () => {
  it.each(['SIGTERM', 'SIGINT', 'SIGHUP'] as const)('on %s aborts the call in flight, answers it, sends DELETE and exits 0 within 1 s', async (signal) => {
    const server = await stallingServer();
    const bridge = await startSession(server);
    bridge.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'stall', arguments: {} } });
    const stalled = await server.waitForRequest((r) => r.message?.id === 2);
    const sessionId = server.requests.find((r) => r.message?.method === 'notifications/initialized')!.headers['mcp-session-id'];

    const sentAt = performance.now();
    bridge.child.kill(signal);
    const { code } = await bridge.exited;
    const elapsed = performance.now() - sentAt;

    expect(code).toBe(0);
    expect(elapsed).toBeLessThan(SIGNAL_EXIT_MS);
    expect(await stalled.closedByClient).toBe(true);
    expect(server.requests.filter((r) => r.method === 'DELETE').map((r) => r.headers['mcp-session-id'])).toEqual([sessionId]);
    const reply = JSON.parse(bridge.lines.find((line) => line.includes('"id":2'))!);
    expect(reply.error.data.bridgeCode).toBe('SHUTTING_DOWN');
    expect(stdoutProblems(bridge.lines, [1, 2])).toEqual([]);
  });

  it('exits within 1 s on SIGTERM even when the DELETE never gets an answer', async () => {
    const server = await serve({ sessions: true, route: ({ req }) => req.method === 'DELETE' });
    const bridge = await startSession(server);
    const sentAt = performance.now();
    bridge.child.kill('SIGTERM');
    const { code } = await bridge.exited;
    expect(performance.now() - sentAt).toBeLessThan(SIGNAL_EXIT_MS);
    expect(code).toBe(0);
    expect(server.requests.some((r) => r.method === 'DELETE')).toBe(true);
  });
});

describe('exit codes', () => {
  it('exits 0 after stdin ends, once the request in flight is answered and the session deleted', async () => {
    const server = await serve({ sessions: true });
    const bridge = await startSession(server);
    bridge.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'last', arguments: {} } });
    bridge.end();
    expect(await bridge.exited).toEqual({ code: 0, signal: null });
    expect(JSON.parse(bridge.lines.at(-1)!)).toMatchObject({ id: 2, result: { content: [{ text: 'ok last' }] } });
    expect(server.requests.at(-1)!.method).toBe('DELETE');
  });

  it.each([
    ['an unknown option', ['--no-such-option']],
    ['a request timeout that is not a number', ['--request-timeout', 'soon']],
    ['a connect timeout of zero', ['--connect-timeout', '0']],
    ['a URL that is not http(s)', ['--url', 'ftp://127.0.0.1/mcp']],
    ['a URL with credentials in it', ['--url', 'https://user:pw@127.0.0.1/mcp']],
    ['an unknown log level', ['--log-level', 'loud']],
    ['a malformed -H', ['-H', 'no colon here']],
    ['a header the bridge owns', ['-H', 'Mcp-Session-Id: abc']],
    ['a --token-file that does not exist', ['--token-file', '/nonexistent/fenbs-token']],
    ['a --ca-file that does not exist', ['--ca-file', '/nonexistent/fenbs-ca.pem']],
    ['--demo with --url', ['--demo', '--url', 'https://127.0.0.1/mcp']],
  ])('exits 2 with one message on stderr for %s, before reading stdin', async (_, args) => {
    const bridge = track(spawnBridge(args));
    expect((await bridge.exited).code).toBe(2);
    expect(bridge.stderr()).toMatch(/^fenbs-mcp: /);
    expect(bridge.stderr()).not.toMatch(/\n\s+at /); // a message, not a stack trace
    expect(bridge.lines).toEqual([]);
  });

  it.each([['--help'], ['--version']])('exits 0 for %s', async (flag) => {
    const bridge = track(spawnBridge([flag]));
    expect((await bridge.exited).code).toBe(0);
  });

  it('exits 1 when stdin cannot be read (a fatal failure)', async () => {
    // fd 0 opened for writing only: every read fails with EBADF.
    const fd = openSync(join(mkdtempSync(join(tmpdir(), 'fenbs-stdin-')), 'write-only'), 'w');
    const child = spawn(process.execPath, [BIN, '--url', 'http://127.0.0.1:9/mcp'], { stdio: [fd, 'pipe', 'pipe'], env: { PATH: process.env.PATH } });
    closeSync(fd);
    stopAfterAll(() => child.kill('SIGKILL'));
    let [stdout, stderr] = ['', ''];
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = await once(child, 'exit');
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/reading stdin failed/);
  });

  it('exits 0 on its own when the client closes its end of stdout', async () => {
    const server = await serve();
    const bridge = track(spawnBridge(['--url', server.url.href, '--log-level', 'debug']));
    bridge.child.stdout.destroy();
    bridge.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'unread', arguments: {} } });
    await waitForStderr(bridge, /stdout closed by the reader/);
    expect((await bridge.exited).code).toBe(0);
  });
});
