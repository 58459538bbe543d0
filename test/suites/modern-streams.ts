// Shared suite, 2026-07-28 streams: cancelling closes the exchange, listen streams never time out, quiet calls live on.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSdkV2Server, type RecordedRequest, type SdkV2Server, type SdkV2ServerOptions } from '../helpers/sdk-v2-server.js';
import { expectCleanEnd, type BridgeMode, type RunningBridge } from '../helpers/bridge-mode.js';

const TOKEN = 'modern-streams-token';

const ENVELOPE = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

function modern(id: string, method: string, params: Record<string, unknown> = {}, meta: Record<string, unknown> = {}) {
  return { jsonrpc: '2.0', id, method, params: { ...params, _meta: { ...ENVELOPE, ...meta } } };
}

/** On stdio a 2026-07-28 client cancels with this notification (stdio transport §Cancellation). */
const cancel = (requestId: string) => ({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason: 'user', _meta: ENVELOPE } });

const listen = (id: string) => modern(id, 'subscriptions/listen', { notifications: { toolsListChanged: true } });

const parsedLines = (bridge: RunningBridge): any[] => bridge.lines.map((line) => JSON.parse(line));

const isListChanged = (message: any) => message.method === 'notifications/tools/list_changed';

/** Defines the suite against bridges started by `mode`. */
export function defineModernStreamsSuite(mode: BridgeMode): void {
  let server: SdkV2Server;
  let spawned: RunningBridge | undefined;
  const startServer = async (options: Omit<SdkV2ServerOptions, 'token'> = {}) => {
    server = await startSdkV2Server({ token: TOKEN, ...options });
  };
  const startBridge = (args: string[] = []) => (spawned = mode.start(['--url', server.url, ...args], { FENBS_TOKEN: TOKEN }));
  afterEach(async () => {
    spawned?.kill();
    spawned = undefined;
    await server.close();
  });

  /** The recorded exchange for the request with this JSON-RPC id, once it has arrived. */
  const exchangeOf = (id: unknown): Promise<RecordedRequest> => server.until(() => server.requests.find((r) => r.body?.id === id));

  const noCancelWasPosted = () => expect(server.requests.filter((r) => r.body?.method === 'notifications/cancelled')).toEqual([]);

  describe('cancelling a modern call', () => {
    beforeEach(() => startServer());

    it('closes the HTTP exchange as it reads the cancel line, before it answers the next line, writes nothing more for the id and posts no cancel', async () => {
      const bridge = startBridge();
      bridge.send(modern('slow-1', 'tools/call', { name: 'slow_task', arguments: { ms: 60_000 } }, { progressToken: 'p-1' }));
      // The progress notification shows the call's event stream is open.
      await bridge.waitFor((m) => m.method === 'notifications/progress' && m.params.progressToken === 'p-1');
      const exchange = await exchangeOf('slow-1');
      bridge.send(cancel('slow-1'));
      bridge.send(modern('after', 'server/discover'));
      await bridge.reply('after');
      // 2026-07-28 transports §Cancellation: closing the stream is the cancellation. Closed by the
      // time the next line is answered (an order, not a time: the machines running this are shared).
      expect(exchange.closedAt).toBeDefined();
      expect(exchange.completed).toBe(false);
      expect(parsedLines(bridge).filter((m) => m.id === 'slow-1')).toEqual([]);
      noCancelWasPosted();
    });

    it('lets the v2 client cancel a slow call: the server sees the disconnect before the client’s next call is answered', async () => {
      const bridged = await mode.connect(server.url, TOKEN);
      try {
        const controller = new AbortController();
        const call = bridged.client.callTool({ name: 'slow_task', arguments: { ms: 60_000 } }, { signal: controller.signal });
        await server.until(() => (server.slowCalls === 1 ? true : undefined));
        const exchange = server.requests.find((r) => r.body?.params?.name === 'slow_task')!;
        controller.abort();
        await expect(call).rejects.toThrow();
        await bridged.client.listTools(); // a later line, read after the cancel
        expect(exchange.closedAt).toBeDefined();
        expect(exchange.completed).toBe(false);
        noCancelWasPosted();
      } finally {
        await bridged.close();
      }
    });
  });

  describe('subscriptions/listen through the bridge', () => {
    it('keeps a listen stream open past the stream-idle limit and the request deadline of ordinary calls, then delivers the next notification', async () => {
      await startServer({ keepAliveMs: 0 }); // no keep-alives: the listen stream is truly silent
      const bridged = await mode.connect(server.url, TOKEN, ['--stream-idle-timeout', '500', '--request-timeout', '800']);
      try {
        const { client } = bridged;
        const listChanged = new Promise((resolve) => client.setNotificationHandler('notifications/tools/list_changed', resolve));
        const subscription = await client.listen({ toolsListChanged: true });
        const exchange = server.requests.find((r) => r.body?.method === 'subscriptions/listen')!;
        // Both limits are real for ordinary calls: a stream silent after its progress is given up at
        // 500 ms, a call with no answer yet at 800 ms. Meanwhile the listen stream has been silent.
        await expect(client.callTool({ name: 'slow_task', arguments: { ms: 60_000 } }, { onprogress: () => undefined })).rejects.toMatchObject({
          code: -31009,
        });
        await expect(client.callTool({ name: 'slow_task', arguments: { ms: 60_000 } })).rejects.toMatchObject({ code: -31008 });
        expect(exchange.closedAt).toBeUndefined();
        expect(exchange.comments).toBe(0);
        server.notify.toolsChanged();
        expect(await listChanged).toMatchObject({ method: 'notifications/tools/list_changed' });
        await subscription.close();
        await exchange.closed;
        expect(exchange.completed).toBe(false);
      } finally {
        await bridged.close();
      }
    });

    it('writes nothing for keep-alive comments and writes each notification as it arrives', async () => {
      await startServer({ keepAliveMs: 20 });
      const bridge = startBridge();
      bridge.send(listen('listen-1'));
      await bridge.waitFor((m) => m.method === 'notifications/subscriptions/acknowledged');
      const exchange = await exchangeOf('listen-1');
      for (const nth of [1, 2]) {
        const comments = exchange.comments;
        await server.until(() => (exchange.comments >= comments + 3 ? true : undefined));
        server.notify.toolsChanged();
        await bridge.waitFor((m) => isListChanged(m) && parsedLines(bridge).filter(isListChanged).length === nth);
      }
      const notification = {
        jsonrpc: '2.0',
        method: 'notifications/tools/list_changed',
        params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 'listen-1' } },
      };
      expect(parsedLines(bridge).slice(1)).toEqual([notification, notification]);
    });

    it('closes the listen stream as it reads the cancel line, before it answers the next line, and writes nothing more for it', async () => {
      await startServer();
      const bridge = startBridge();
      bridge.send(listen('listen-2'));
      await bridge.waitFor((m) => m.method === 'notifications/subscriptions/acknowledged');
      const exchange = await exchangeOf('listen-2');
      bridge.send(cancel('listen-2'));
      bridge.send(modern('after', 'server/discover'));
      await bridge.reply('after');
      expect(exchange.closedAt).toBeDefined();
      server.notify.toolsChanged();
      bridge.send(modern('after-change', 'server/discover'));
      await bridge.reply('after-change');
      expect(parsedLines(bridge).filter((m) => m.id === 'listen-2' || isListChanged(m))).toEqual([]);
      noCancelWasPosted();
    });

    it.each([
      ['stdin ends', (bridge: RunningBridge) => bridge.end(), 'input-ended'],
      [`the bridge gets ${mode.name === 'spawned' ? 'SIGTERM' : 'its stop signal'}`, (bridge: RunningBridge) => bridge.stop(), 'signal'],
    ] as const)('closes an open listen stream when %s, and exits', async (_when, stop, reason) => {
      await startServer();
      const bridge = startBridge();
      bridge.send(listen('listen-3'));
      await bridge.waitFor((m) => m.method === 'notifications/subscriptions/acknowledged');
      const exchange = await exchangeOf('listen-3');
      stop(bridge);
      await exchange.closed;
      expect(exchange.completed).toBe(false);
      await expectCleanEnd(bridge, reason);
    });
  });

  describe('a long modern tool call', () => {
    it.each([
      ['only keep-alive comments, past a 500 ms stream-idle limit', { keepAliveMs: 100 }, ['--stream-idle-timeout', '500'], 5],
      ['silence, with the default limits', { keepAliveMs: 0 }, [], 0],
    ])('is answered when its event stream carries %s', async (_what, serverOptions, bridgeArgs, minComments) => {
      await startServer(serverOptions);
      const bridged = await mode.connect(server.url, TOKEN, bridgeArgs);
      try {
        // Progress first: the SDK server then answers with an event stream, quiet until the result.
        const result = await bridged.client.callTool({ name: 'slow_task', arguments: { ms: 1500 } }, { onprogress: () => undefined });
        expect(result.content).toEqual([{ type: 'text', text: 'worked 1500 ms' }]);
      } finally {
        await bridged.close();
      }
      const exchange = server.requests.find((r) => r.body?.params?.name === 'slow_task')!;
      expect(exchange.headers['mcp-protocol-version']).toBe('2026-07-28');
      expect(exchange.comments).toBeGreaterThanOrEqual(minComments);
    });
  });
}
