// In-process: how runBridge ends: the stop signal, stdin EOF, a failed stdin, a closed stdout; each answers the work in flight.

import { describe, expect, it } from 'vitest';
import { openSession, serversForFile, stdoutProblems, type McpServer } from './helpers/hardening-servers.js';
import { startInProcessBridge, waitForLog, type InProcessBridge } from './helpers/in-process-bridge.js';

/** The CLI exits within a second of a signal; runBridge must return well before that. */
const SIGNAL_RETURN_MS = 1000;

const { serve, track: stopAfterAll } = serversForFile();
const track = (bridge: InProcessBridge) => (stopAfterAll(() => bridge.kill()), bridge);

/** A bridge with an open session (initialize + initialized accepted). */
const startSession = (server: McpServer, args: string[] = []) => openSession(track(startInProcessBridge(['--url', server.url.href, ...args])), server);

describe('the stop signal', () => {
  it('aborts the call in flight, answers it SHUTTING_DOWN, sends DELETE and returns "signal" within 1 s', async () => {
    const server = await serve({ sessions: true, route: ({ message }) => message?.params?.name === 'stall' });
    const bridge = await startSession(server);
    bridge.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'stall', arguments: {} } });
    const stalled = await server.waitForRequest((r) => r.message?.id === 2);
    const sessionId = server.requests.find((r) => r.message?.method === 'notifications/initialized')!.headers['mcp-session-id'];

    const sentAt = performance.now();
    bridge.signal();
    expect((await bridge.exited).exit).toBe('signal');
    expect(performance.now() - sentAt).toBeLessThan(SIGNAL_RETURN_MS);
    expect(await stalled.closedByClient).toBe(true);
    expect(server.requests.filter((r) => r.method === 'DELETE').map((r) => r.headers['mcp-session-id'])).toEqual([sessionId]);
    const reply = JSON.parse(bridge.lines.find((line) => line.includes('"id":2'))!);
    expect(reply.error.data.bridgeCode).toBe('SHUTTING_DOWN');
    expect(stdoutProblems(bridge.lines, [1, 2])).toEqual([]);
  });

  it('returns within 1 s even when the DELETE never gets an answer', async () => {
    const server = await serve({ sessions: true, route: ({ req }) => req.method === 'DELETE' });
    const bridge = await startSession(server);
    const sentAt = performance.now();
    bridge.signal();
    expect((await bridge.exited).exit).toBe('signal');
    expect(performance.now() - sentAt).toBeLessThan(SIGNAL_RETURN_MS);
    expect(server.requests.some((r) => r.method === 'DELETE')).toBe(true);
  });
});

describe('the end of stdin', () => {
  it('returns "input-ended" once the request in flight is answered and the session deleted', async () => {
    const server = await serve({ sessions: true });
    const bridge = await startSession(server);
    bridge.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'last', arguments: {} } });
    bridge.end();
    expect((await bridge.exited).exit).toBe('input-ended');
    expect(JSON.parse(bridge.lines.at(-1)!)).toMatchObject({ id: 2, result: { content: [{ text: 'ok last' }] } });
    expect(server.requests.at(-1)!.method).toBe('DELETE');
  });

  it('returns "input-ended" at once for an empty stdin, having contacted nobody', async () => {
    const server = await serve();
    const bridge = track(startInProcessBridge(['--url', server.url.href]));
    bridge.end();
    expect((await bridge.exited).exit).toBe('input-ended');
    expect(bridge.lines).toEqual([]);
    expect(server.requests).toEqual([]);
  });
});

describe('a stream that fails', () => {
  it('returns "input-failed" when reading stdin fails, and logs why', async () => {
    const server = await serve();
    const bridge = track(startInProcessBridge(['--url', server.url.href]));
    bridge.input.destroy(Object.assign(new Error('read EIO'), { code: 'EIO' }));
    expect((await bridge.exited).exit).toBe('input-failed');
    expect(bridge.stderr()).toMatch(/stdin/);
    expect(bridge.lines).toEqual([]);
  });

  it('returns "output-closed" on its own when the client closes its end of stdout', async () => {
    const server = await serve();
    const bridge = track(startInProcessBridge(['--url', server.url.href, '--log-level', 'debug']));
    bridge.output.destroy();
    bridge.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'unread', arguments: {} } });
    await waitForLog(bridge, /stdout closed by the reader/);
    expect((await bridge.exited).exit).toBe('output-closed');
  });
});
