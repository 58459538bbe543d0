// In-process: how runBridge ends: the stop signal, stdin EOF, a failed stdin, a closed stdout; each answers the work in flight.

import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { runBridge } from '../src/bridge.js';
import { createConfig } from '../src/config.js';
import { createRedactor } from '../src/secrets.js';
import { startMcpServer, stdoutProblems, type McpServer } from './helpers/hardening-servers.js';
import { startInProcessBridge, waitForLog, type InProcessBridge } from './helpers/in-process-bridge.js';
import { initializedNotification, initializeRequest } from './helpers/spawn-bridge.js';

/** The CLI exits within a second of a signal; runBridge must return well before that. */
const SIGNAL_RETURN_MS = 1000;

const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});
const track = (bridge: InProcessBridge) => (cleanups.push(() => bridge.kill()), bridge);
const serve = async (options: Parameters<typeof startMcpServer>[0] = {}) => {
  const server = await startMcpServer(options);
  cleanups.push(() => server.close());
  return server;
};

/** A bridge with an open session (initialize + initialized accepted). */
async function startSession(server: McpServer, args: string[] = []): Promise<InProcessBridge> {
  const bridge = track(startInProcessBridge(['--url', server.url.href, ...args]));
  bridge.send(initializeRequest(1));
  await bridge.reply(1);
  bridge.send(initializedNotification);
  await server.waitForRequest((r) => r.message?.method === 'notifications/initialized');
  return bridge;
}

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

  it('returns "signal" at once, reading nothing and contacting nobody, when the signal aborted before the start', async () => {
    const server = await serve();
    const input = new PassThrough();
    input.write(`${JSON.stringify(initializeRequest(1))}\n`);
    const output = new PassThrough();
    const config = createConfig({ options: { url: server.url.href }, env: {}, readTextFile: () => '' });
    const exit = await runBridge({ input, output, config, logger: pino({ level: 'silent' }), redact: createRedactor([]), env: {}, signal: AbortSignal.abort() });
    expect(exit).toBe('signal');
    expect(server.requests).toEqual([]);
  });

  it('returns "signal" when the signal arrives while stdin has ended and a call is still in flight, answering it SHUTTING_DOWN', async () => {
    const server = await serve({ sessions: true, route: ({ message }) => message?.params?.name === 'stall' });
    const bridge = await startSession(server);
    bridge.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'stall', arguments: {} } });
    await server.waitForRequest((r) => r.message?.id === 2);
    const ended = once(bridge.input, 'end');
    bridge.end();
    await ended; // the bridge has read stdin to its end and now waits for the call in flight
    await new Promise((resolve) => setImmediate(resolve));
    bridge.signal();
    expect((await bridge.exited).exit).toBe('signal');
    expect(JSON.parse(bridge.lines.find((line) => line.includes('"id":2'))!)).toMatchObject({ id: 2, error: { data: { bridgeCode: 'SHUTTING_DOWN' } } });
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
