// The bridge in-process against the official v1 SDK's SSEServerTransport (2024-11-05 HTTP+SSE), reached by the automatic fallback and by --transport sse.

import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { startInProcessBridge, type InProcessBridge } from '../../helpers/in-process-bridge.js';
import { initializedNotification } from '../../helpers/spawn-bridge.js';
import { startSdkV1SseServer, type SdkV1SseServer } from '../../helpers/sdk-v1-sse-server.js';

const token = `tok-${randomUUID()}`;
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serverIn(layout: 'sse' | 'base'): Promise<SdkV1SseServer> {
  const server = await startSdkV1SseServer({ layout, token });
  cleanups.push(() => server.close());
  return server;
}

function bridgeFor(url: string, ...args: string[]): InProcessBridge {
  const bridge = startInProcessBridge(['--url', url, ...args], { FENBS_TOKEN: token });
  cleanups.push(() => bridge.kill());
  return bridge;
}

/** Resolves once `done()` holds, checked every few milliseconds (the server's record is not an event). */
function until(done: () => boolean): Promise<void> {
  return new Promise<void>((resolve) => {
    const check = () => (done() ? resolve() : setTimeout(check, 5));
    check();
  });
}

/** A 2024-11-05 client's initialize, which offers roots. */
const initialize = (id: number) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion: '2024-11-05', capabilities: { roots: { listChanged: true } }, clientInfo: { name: 'fenbs-mcp-tests', version: '1.0.0' } },
});
const call = (id: number, name: string, args: Record<string, unknown> = {}, meta?: Record<string, unknown>) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args, ...(meta === undefined ? {} : { _meta: meta }) },
});

/** Runs a whole session: every kind of message each way, in the order a desktop host sends them. */
async function fullSession(bridge: InProcessBridge, server: SdkV1SseServer): Promise<void> {
  bridge.send(initialize(1));
  const init = await bridge.reply(1);
  expect(init.result.serverInfo).toMatchObject({ name: 'fenbs-mcp-test-v1-sse' });
  bridge.send(initializedNotification);

  bridge.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
  const list = await bridge.reply(2);
  expect(list.result.tools.map((tool: { name: string }) => tool.name).sort()).toEqual(['echo', 'notify', 'roots', 'slow']);

  bridge.send(call(3, 'slow', { ms: 150, steps: 3 }, { progressToken: 'p3' }));
  const progress = await bridge.waitFor((m) => m.method === 'notifications/progress' && m.params.progress === 3);
  expect(progress.params.progressToken).toBe('p3');
  expect((await bridge.reply(3)).result.content).toEqual([{ type: 'text', text: 'waited 150 ms' }]);

  // A server→client request on the stream, answered by the client through the message endpoint.
  bridge.send(call(4, 'roots'));
  const ask = await bridge.waitFor((m) => m.method === 'roots/list');
  bridge.send({ jsonrpc: '2.0', id: ask.id, result: { roots: [{ uri: 'file:///work', name: 'work' }] } });
  expect((await bridge.reply(4)).result.content).toEqual([{ type: 'text', text: 'file:///work' }]);

  bridge.send(call(5, 'notify'));
  const log = await bridge.waitFor((m) => m.method === 'notifications/message');
  expect(log.params.data).toBe('hello from the server');
  expect((await bridge.reply(5)).result.content).toEqual([{ type: 'text', text: 'notified' }]);

  bridge.send({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' });
  bridge.send(call(6, 'echo', { text: 'last' }));
  expect((await bridge.reply(6)).result.content).toEqual([{ type: 'text', text: 'last' }]);
  expect(server.received.map((m) => m.method ?? '(response)')).toEqual([
    'initialize',
    'notifications/initialized',
    'tools/list',
    'tools/call',
    'tools/call',
    '(response)',
    'tools/call',
    'notifications/roots/list_changed',
    'tools/call',
  ]);
}

describe('the 2024-11-05 HTTP+SSE transport of the SDK v1 server', () => {
  it('is reached from an /sse URL whose POST is a plain 404, and carries every kind of message both ways', async () => {
    const server = await serverIn('sse');
    const bridge = bridgeFor(server.url);
    await fullSession(bridge, server);
    // The first POST went to the URL given, then the stream was opened there.
    expect(server.requests.slice(0, 2).map((r) => `${r.method} ${r.path}`)).toEqual(['POST /sse', 'GET /sse']);
  });

  it('is reached from a base URL whose POST is a plain 404, and carries every kind of message both ways', async () => {
    const server = await serverIn('base');
    const bridge = bridgeFor(server.url);
    await fullSession(bridge, server);
    expect(server.requests.slice(0, 2).map((r) => `${r.method} ${r.path}`)).toEqual(['POST /', 'GET /']);
  });

  it('with --transport sse opens the event stream without a POST first', async () => {
    const server = await serverIn('sse');
    const bridge = bridgeFor(server.url, '--transport', 'sse');
    await fullSession(bridge, server);
    expect(server.requests[0]).toMatchObject({ method: 'GET', path: '/sse' });
    expect(server.requests.some((r) => r.method === 'POST' && r.path === '/sse')).toBe(false);
  });

  it('sends the credential on the GET and on every POST to the message endpoint', async () => {
    const server = await serverIn('sse');
    const bridge = bridgeFor(server.url, '--transport', 'sse');
    bridge.send(initialize(1));
    await bridge.reply(1);
    bridge.send(initializedNotification);
    bridge.send(call(2, 'echo', { text: 'x' }));
    await bridge.reply(2);
    const seen = server.requests.map((r) => `${r.method} ${r.path.replace(/\?.*/, '')}`);
    expect(seen).toEqual(['GET /sse', 'POST /messages', 'POST /messages', 'POST /messages']);
    for (const request of server.requests) expect(request.headers.authorization).toBe(`Bearer ${token}`);
    expect(bridge.stderr()).not.toContain(token);
  });

  it('answers a request waiting on the stream once with an error when the stream drops, and later ones at once', async () => {
    const server = await serverIn('sse');
    const bridge = bridgeFor(server.url);
    bridge.send(initialize(1));
    await bridge.reply(1);
    bridge.send(initializedNotification);
    bridge.send(call(2, 'slow', { ms: 60_000, steps: 1 }));
    await until(() => server.received.some((m) => m.id === 2));
    server.dropStreams();
    const reply = await bridge.reply(2);
    expect(reply.error.data.bridgeCode).toBe('REMOTE_STREAM_ENDED');
    bridge.send(call(3, 'echo', { text: 'after' }));
    expect((await bridge.reply(3)).error.data.bridgeCode).toBe('REMOTE_STREAM_ENDED');
    bridge.end();
    expect(await bridge.exited).toEqual({ exit: 'input-ended' });
    expect(bridge.lines.filter((line) => JSON.parse(line).id === 2)).toHaveLength(1);
  });

  it('filters tools/list with --deny-tools and refuses a call to a hidden tool without posting it', async () => {
    const server = await serverIn('sse');
    const bridge = bridgeFor(server.url, '--deny-tools', 'slow,roots');
    bridge.send(initialize(1));
    await bridge.reply(1);
    bridge.send(initializedNotification);
    bridge.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    expect((await bridge.reply(2)).result.tools.map((tool: { name: string }) => tool.name).sort()).toEqual(['echo', 'notify']);
    bridge.send(call(3, 'slow', { ms: 1 }));
    expect((await bridge.reply(3)).error.data.bridgeCode).toBe('TOOL_FILTERED');
    expect(server.received.filter((m) => m.id === 3)).toEqual([]);
  });

  it('posts a cancellation to the endpoint and writes nothing more for the cancelled request', async () => {
    const server = await serverIn('sse');
    const bridge = bridgeFor(server.url);
    bridge.send(initialize(1));
    await bridge.reply(1);
    bridge.send(initializedNotification);
    bridge.send(call(7, 'slow', { ms: 300, steps: 1 }));
    await until(() => server.received.some((m) => m.id === 7));
    bridge.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'user' } });
    await until(() => server.received.some((m) => m.method === 'notifications/cancelled'));
    // Started after the cancel and longer than the cancelled call: its answer comes after any answer to 7 would have.
    bridge.send(call(8, 'slow', { ms: 400, steps: 1 }));
    expect((await bridge.reply(8)).result.content).toEqual([{ type: 'text', text: 'waited 400 ms' }]);
    expect(bridge.lines.filter((line) => JSON.parse(line).id === 7)).toEqual([]);
  });

  it('finishes what is in flight when stdin ends, then closes the stream', async () => {
    const server = await serverIn('sse');
    const bridge = bridgeFor(server.url);
    bridge.send(initialize(1));
    await bridge.reply(1);
    bridge.send(initializedNotification);
    bridge.send(call(2, 'slow', { ms: 200, steps: 2 }));
    bridge.end();
    expect((await bridge.reply(2)).result.content).toEqual([{ type: 'text', text: 'waited 200 ms' }]);
    expect(await bridge.exited).toEqual({ exit: 'input-ended' });
  });
});
