import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { startSdkV1Server, type SdkV1Server, type SdkV1ServerOptions } from '../../helpers/sdk-v1-server.js';
import { startSdkV2Server } from '../../helpers/sdk-v2-server.js';
import { PING_STREAM_SESSION, startPingStreamServer, type PingStreamServer, type PingStreamServerOptions } from '../../helpers/ping-stream-server.js';
import { startInProcessBridge, waitForLog, type InProcessBridge } from '../../helpers/in-process-bridge.js';
import { initializedNotification } from '../../helpers/spawn-bridge.js';
import { MODERN_VERSION, MODERN_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY } from '../../../src/core/protocol.js';

// The server reaps a session no POST reached for REAP_MS; the bridge pings one idle for
// KEEP_ALIVE_MS. Both are scaled down from minutes (the CLI's floor is 1000 ms, which the
// end-to-end test uses) so the idle times pass quickly; the assertions are about which session
// answered, never about how long anything took.
const REAP_MS = 600;
const KEEP_ALIVE_MS = 100;
const TOKEN = 'keep-alive-test-token';

const CLIENT_PARAMS = { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'keep-alive-client', version: '1' } };
const whoami = (id: string | number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'whoami', arguments: {} } });
const pingsAt = (server: SdkV1Server) => server.requests.filter((r) => r.method === 'POST' && r.body?.method === 'ping');

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function v1(options: Partial<SdkV1ServerOptions> = {}): Promise<SdkV1Server> {
  const server = await startSdkV1Server({ mode: 'json', token: TOKEN, whoami: true, ...options });
  cleanups.push(() => server.close());
  return server;
}

function bridgeTo(url: string, keepAliveMs: number): InProcessBridge {
  const bridge = startInProcessBridge(['--url', url], { FENBS_TOKEN: TOKEN }, { keepAliveMs });
  cleanups.push(() => bridge.kill());
  return bridge;
}

async function openSession(bridge: InProcessBridge): Promise<string> {
  bridge.send({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: CLIENT_PARAMS });
  expect((await bridge.reply('init')).result).toBeDefined();
  bridge.send(initializedNotification);
  bridge.send(whoami('first'));
  return (await bridge.reply('first')).result.content[0].text as string;
}

const replyIds = (bridge: InProcessBridge) =>
  bridge.lines
    .map((line) => JSON.parse(line))
    .filter((m) => !('method' in m))
    .map((m) => m.id);

describe('--keep-alive against the SDK v1 server that reaps idle sessions', () => {
  it('keeps the same session through three reaping periods of client silence, its pings never reaching stdout', async () => {
    const server = await v1({ reapIdleMs: REAP_MS });
    const bridge = bridgeTo(server.url, KEEP_ALIVE_MS);
    const session = await openSession(bridge);
    await sleep(3 * REAP_MS);
    bridge.send(whoami('after'));
    expect((await bridge.reply('after')).result.content[0].text).toBe(session);
    expect(server.reaped).toEqual([]);
    expect(server.sessionIds).toEqual([session]);
    // transports §Session Management: each ping carried the session and the negotiated version.
    const pings = pingsAt(server);
    expect(pings.length).toBeGreaterThan(0);
    for (const ping of pings) {
      expect(ping.headers['mcp-session-id']).toBe(session);
      expect(ping.headers['mcp-protocol-version']).toBe('2025-06-18');
      expect(ping.body.id).toMatch(/^fenbs-mcp-keep-alive-[0-9a-f-]{36}-\d+$/);
    }
    expect(new Set(pings.map((p) => p.body.id)).size).toBe(pings.length);
    expect(replyIds(bridge)).toEqual(['init', 'first', 'after']);
  });

  it('without --keep-alive lets the server reap the idle session, and the next call still succeeds on a healed one', async () => {
    const server = await v1({ reapIdleMs: REAP_MS });
    const bridge = bridgeTo(server.url, 0);
    const session = await openSession(bridge);
    await expect.poll(() => server.reaped, { timeout: 10 * REAP_MS }).toEqual([session]);
    bridge.send(whoami('after'));
    const healed = (await bridge.reply('after')).result.content[0].text as string;
    expect(healed).not.toBe(session);
    expect(server.sessionIds).toEqual([session, healed]);
    expect(pingsAt(server)).toEqual([]);
    expect(replyIds(bridge)).toEqual(['init', 'first', 'after']);
  });

  it('leaves stdout order, progress and each request’s one reply as they are while pings go out between them', async () => {
    // Event-stream replies: progress arrives on the call's own stream, pings' answers on theirs.
    const server = await v1({ reapIdleMs: REAP_MS, mode: 'sse' });
    const bridge = bridgeTo(server.url, KEEP_ALIVE_MS);
    await openSession(bridge);
    // Idle long enough for pings, then a call with progress whose steps leave room for more.
    await expect.poll(() => pingsAt(server).length, { timeout: 10 * REAP_MS }).toBeGreaterThan(1);
    // An id spelled like the bridge's own pings: still the client's, answered once.
    const lookalike = 'fenbs-mcp-keep-alive-1';
    bridge.send({
      jsonrpc: '2.0',
      id: 'slow',
      method: 'tools/call',
      params: { name: 'slow', arguments: { ms: 4 * KEEP_ALIVE_MS, steps: 3 }, _meta: { progressToken: 'p' } },
    });
    bridge.send(whoami(lookalike));
    const slow = await bridge.reply('slow');
    expect(slow.result.content[0].text).toBe(`waited ${4 * KEEP_ALIVE_MS} ms`);
    await bridge.reply(lookalike);
    await sleep(3 * KEEP_ALIVE_MS);
    const messages = bridge.lines.map((line) => JSON.parse(line));
    const progress = messages.filter((m) => m.method === 'notifications/progress').map((m) => m.params.progress);
    expect(progress).toEqual([1, 2, 3]);
    // Every progress notification comes before its request's response.
    const slowAt = messages.findIndex((m) => m.id === 'slow');
    expect(messages.findLastIndex((m) => m.method === 'notifications/progress')).toBeLessThan(slowAt);
    expect(replyIds(bridge).sort()).toEqual(['first', 'init', lookalike, 'slow'].sort());
  });

  it('stops pinging for the run, with one warning, when the server answers ping with -32601', async () => {
    const server = await v1({ refusePing: true });
    const bridge = bridgeTo(server.url, KEEP_ALIVE_MS);
    await openSession(bridge);
    await waitForLog(bridge, /does not offer ping \(-32601\); no more pings/);
    await sleep(10 * KEEP_ALIVE_MS);
    expect(pingsAt(server)).toHaveLength(1);
    expect(bridge.stderr().match(/does not offer ping/g)).toHaveLength(1);
    bridge.send(whoami('still'));
    expect((await bridge.reply('still')).result).toBeDefined();
  });

  it('sends no ping before the session is initialized', async () => {
    const server = await v1();
    const bridge = bridgeTo(server.url, KEEP_ALIVE_MS);
    bridge.send({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: CLIENT_PARAMS });
    await bridge.reply('init');
    await sleep(5 * KEEP_ALIVE_MS);
    expect(pingsAt(server)).toEqual([]);
    bridge.send(initializedNotification);
    await expect.poll(() => pingsAt(server).length, { timeout: 10 * REAP_MS }).toBeGreaterThan(0);
  });

  it('exits at stdin EOF without waiting on the keep-alive, and pings no more once shutdown has begun', async () => {
    const server = await v1();
    const bridge = bridgeTo(server.url, KEEP_ALIVE_MS);
    const session = await openSession(bridge);
    await expect.poll(() => pingsAt(server).length, { timeout: 10 * REAP_MS }).toBeGreaterThan(0);
    bridge.end();
    expect((await bridge.exited).exit).toBe('input-ended');
    const pings = pingsAt(server).length;
    await sleep(5 * KEEP_ALIVE_MS);
    expect(pingsAt(server)).toHaveLength(pings);
    // The session got its goodbye after the last ping (transports §Session Management 5).
    const last = server.requests.at(-1)!;
    expect([last.method, last.headers['mcp-session-id']]).toEqual(['DELETE', session]);
  });

  it('sends nothing to a 2026-07-28 server, which has no sessions', async () => {
    const server = await startSdkV2Server({ token: TOKEN });
    cleanups.push(() => server.close());
    const bridge = bridgeTo(server.url, KEEP_ALIVE_MS);
    const meta = { [MODERN_VERSION_META_KEY]: MODERN_VERSION, [CLIENT_CAPABILITIES_META_KEY]: {}, [CLIENT_INFO_META_KEY]: { name: 'modern', version: '1' } };
    bridge.send({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta } });
    expect((await bridge.reply(1)).result.tools.length).toBeGreaterThan(0);
    await sleep(5 * KEEP_ALIVE_MS);
    expect(server.requests.filter((r) => r.body?.method === 'ping')).toEqual([]);
    expect(server.requests).toHaveLength(1);
  });
});

// transports §Sending Messages to the Server 6: the server MAY send JSON-RPC requests and
// notifications before the response on a POST's event stream, and a ping's POST is no exception.
describe('--keep-alive when the server sends its own messages on a ping’s event stream', () => {
  const isPing = (m: any) => m.method === 'ping';

  async function pingStreamServer(options: PingStreamServerOptions): Promise<PingStreamServer> {
    const server = await startPingStreamServer(options);
    cleanups.push(() => server.close());
    return server;
  }

  async function initialized(bridge: InProcessBridge): Promise<void> {
    bridge.send({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: CLIENT_PARAMS });
    expect((await bridge.reply('init')).result).toBeDefined();
    bridge.send(initializedNotification);
  }

  it('a server request that arrives on a keep-alive ping’s stream reaches the client and its answer reaches the server', async () => {
    const request = { jsonrpc: '2.0', id: 'srv-1', method: 'roots/list' };
    const server = await pingStreamServer({ beforeResponse: [request], awaitAnswerTo: 'srv-1' });
    const bridge = bridgeTo(server.url, KEEP_ALIVE_MS);
    await initialized(bridge);
    const first = await server.waitForMessage(isPing);
    expect(await bridge.waitFor((m) => m.id === 'srv-1' && m.method === 'roots/list')).toEqual(request);
    const answer = { jsonrpc: '2.0', id: 'srv-1', result: { roots: [{ uri: 'file:///work', name: 'work' }] } };
    bridge.send(answer);
    expect(await server.waitForMessage((m) => m.id === 'srv-1' && !('method' in m))).toEqual(answer);
    // The answer went on the session like any response the client writes.
    expect(server.received.find((r) => r.message.id === 'srv-1')?.headers['mcp-session-id']).toBe(PING_STREAM_SESSION);
    // The ping was answered once the server had its answer: the next ping is a new one, after it.
    await server.waitForMessage((m) => isPing(m) && m.id !== first.id);
    expect(bridge.stderr()).not.toMatch(/keep-alive ping/);
    expect(bridge.lines.map((line) => JSON.parse(line))).toEqual([expect.objectContaining({ id: 'init' }), request]);
  });

  it('a notification on a keep-alive ping’s stream reaches stdout, and the ping’s own response never does', async () => {
    const notification = { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'from the ping stream' } };
    const server = await pingStreamServer({ beforeResponse: [notification] });
    const bridge = bridgeTo(server.url, KEEP_ALIVE_MS);
    await initialized(bridge);
    const first = await server.waitForMessage(isPing);
    expect(await bridge.waitFor((m) => m.method === 'notifications/message')).toEqual(notification);
    // A second ping goes only after the first one's stream was read to its response.
    await server.waitForMessage((m) => isPing(m) && m.id !== first.id);
    expect(bridge.stderr()).not.toMatch(/keep-alive ping/);
    expect(bridge.lines.map((line) => JSON.parse(line))).toEqual([expect.objectContaining({ id: 'init' }), notification]);
    expect(bridge.lines.join('\n')).not.toContain('fenbs-mcp-keep-alive-');
  });
});
