// --keep-alive through the built bin: a session the server would reap when idle is kept by pings.

import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { startSdkV1Server, type SdkV1Server } from '../helpers/sdk-v1-server.js';
import { PING_STREAM_SESSION, startPingStreamServer } from '../helpers/ping-stream-server.js';
import { initializedNotification, initializeRequest, spawnBridge, type BridgeProcess } from '../helpers/spawn-bridge.js';
import { MIN_KEEP_ALIVE_MS } from '../../src/config/config.js';

// The bin takes no keep-alive under MIN_KEEP_ALIVE_MS, so the server reaps after 2.5 of them:
// room for a loaded machine to be late with a ping, and 3 reaping periods still pass in seconds.
const REAP_MS = 2.5 * MIN_KEEP_ALIVE_MS;
const TOKEN = 'keep-alive-e2e-token';
const whoami = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'whoami', arguments: {} } });

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function sessionThrough(args: string[]): Promise<{ server: SdkV1Server; bridge: BridgeProcess; session: string }> {
  const server = await startSdkV1Server({ mode: 'json', token: TOKEN, reapIdleMs: REAP_MS, whoami: true });
  cleanups.push(() => server.close());
  const bridge = spawnBridge(['--url', server.url, ...args], { FENBS_TOKEN: TOKEN, FENBS_MCP_LOG_LEVEL: 'warn' });
  cleanups.push(() => bridge.kill());
  bridge.send(initializeRequest(1));
  await bridge.reply(1);
  bridge.send(initializedNotification);
  bridge.send(whoami(2));
  const session = (await bridge.reply(2)).result.content[0].text as string;
  return { server, bridge, session };
}

describe('--keep-alive, end to end', () => {
  it('keeps the same session through three reaping periods of silence, and exits 0 at stdin EOF', async () => {
    const { server, bridge, session } = await sessionThrough(['--keep-alive', String(MIN_KEEP_ALIVE_MS)]);
    await sleep(3 * REAP_MS);
    bridge.send(whoami(3));
    expect((await bridge.reply(3)).result.content[0].text).toBe(session);
    expect(server.reaped).toEqual([]);
    expect(server.requests.some((r) => r.body?.method === 'ping')).toBe(true);
    // Only the client's own replies on stdout: no ping answer.
    expect(bridge.lines.map((line) => JSON.parse(line).id)).toEqual([1, 2, 3]);
    bridge.end();
    expect((await bridge.exited).code).toBe(0);
  });

  it('without --keep-alive answers the next call after the server reaped the session, on a new one', async () => {
    const { server, bridge, session } = await sessionThrough([]);
    await expect.poll(() => server.reaped, { timeout: 4 * REAP_MS }).toEqual([session]);
    bridge.send(whoami(3));
    const healed = (await bridge.reply(3)).result.content[0].text as string;
    expect(healed).not.toBe(session);
    expect(server.requests.some((r) => r.body?.method === 'ping')).toBe(false);
    bridge.end();
    expect((await bridge.exited).code).toBe(0);
  });

  it('hands a server request on a ping’s event stream to the client, posts its answer back, and keeps the ping’s response off stdout', async () => {
    // transports §Sending Messages to the Server 6: requests and notifications MAY come before the response.
    const request = { jsonrpc: '2.0', id: 'srv-1', method: 'sampling/createMessage', params: { messages: [], maxTokens: 1 } };
    const notification = { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'on the ping stream' } };
    const server = await startPingStreamServer({ beforeResponse: [notification, request], awaitAnswerTo: 'srv-1' });
    cleanups.push(() => server.close());
    const bridge = spawnBridge(['--url', server.url, '--keep-alive', String(MIN_KEEP_ALIVE_MS)], { FENBS_TOKEN: TOKEN, FENBS_MCP_LOG_LEVEL: 'warn' });
    cleanups.push(() => bridge.kill());
    bridge.send(initializeRequest(1));
    await bridge.reply(1);
    bridge.send(initializedNotification);
    expect(await bridge.waitFor((m) => m.id === 'srv-1' && m.method === 'sampling/createMessage')).toEqual(request);
    const answer = { jsonrpc: '2.0', id: 'srv-1', result: { role: 'assistant', content: { type: 'text', text: 'hi' }, model: 'm' } };
    bridge.send(answer);
    expect(await server.waitForMessage((m) => m.id === 'srv-1' && !('method' in m))).toEqual(answer);
    expect(server.received.find((r) => r.message.id === 'srv-1')?.headers['mcp-session-id']).toBe(PING_STREAM_SESSION);
    // The next ping goes only once the first one's stream was read to its response.
    const pings = () => server.received.filter((r) => r.message.method === 'ping');
    await server.waitForMessage((m) => m.method === 'ping' && m.id !== pings()[0]!.message.id);
    expect(bridge.lines.map((line) => JSON.parse(line))).toEqual([expect.objectContaining({ id: 1 }), notification, request]);
    expect(bridge.stderr()).not.toMatch(/keep-alive ping/);
    bridge.end();
    expect((await bridge.exited).code).toBe(0);
  });

  it('refuses a keep-alive under a second with exit 2, naming the unit', async () => {
    const bridge = spawnBridge(['--keep-alive', '30'], { FENBS_TOKEN: TOKEN });
    cleanups.push(() => bridge.kill());
    expect((await bridge.exited).code).toBe(2);
    expect(bridge.stderr()).toContain('--keep-alive is in milliseconds and at least 1000');
    expect(bridge.stderr()).toContain('try: fenbs-mcp --keep-alive 30000');
  });
});
