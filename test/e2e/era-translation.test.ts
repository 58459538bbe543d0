// The official SDK v1 (2025-era) client, through the built bridge, against 2026-07-28-only servers.

import type { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN } from '../helpers/spawn-bridge.js';
import { CONFIRM_STATE, CONFIRM_TOOL, startSdkV2Server, type SdkV2Server, type SdkV2ServerOptions } from '../helpers/sdk-v2-server.js';

const TOKEN = 'era-translation-token';

interface V1Client {
  client: Client;
  /** Resolves when a bridge log line (stderr, JSON) matches. */
  logged(pattern: RegExp): Promise<void>;
  /** The elicitation requests the client was asked. */
  elicitations: unknown[];
}

/** An SDK v1 client that declares elicitation and accepts with ok=true, spawning the bridge as a desktop host does. */
async function connectV1(url: string, bridgeArgs: string[] = []): Promise<V1Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, '--url', url, ...bridgeArgs],
    env: { PATH: process.env.PATH ?? '', FENBS_TOKEN: TOKEN, FENBS_MCP_LOG_LEVEL: 'info' },
    stderr: 'pipe',
  });
  let stderr = '';
  const waiters: { pattern: RegExp; resolve: () => void }[] = [];
  (transport.stderr as Readable).setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    for (const waiter of waiters.filter((w) => w.pattern.test(stderr))) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  });
  const client = new Client({ name: 'fenbs-mcp-v1-host', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  const elicitations: unknown[] = [];
  client.setRequestHandler(ElicitRequestSchema, (request) => {
    elicitations.push(request.params);
    return { action: 'accept', content: { ok: true } };
  });
  await client.connect(transport);
  return {
    client,
    elicitations,
    logged: (pattern) => (pattern.test(stderr) ? Promise.resolve() : new Promise((resolve) => waiters.push({ pattern, resolve }))),
  };
}

const refusals: [string, Pick<SdkV2ServerOptions, 'refuseInitialize'>][] = [
  ['-32022 (the SDK v2 server, legacy: reject)', {}],
  ['404 with -32601', { refuseInitialize: 'not-found' }],
  ['400 with -32020', { refuseInitialize: 'header-mismatch' }],
];

describe.each(refusals)('an SDK v1 client against a 2026-07-28-only server that refuses initialize with %s', (_, refusal) => {
  let server: SdkV2Server;
  let connected: V1Client | undefined;

  afterEach(async () => {
    await connected?.client.close();
    connected = undefined;
    await server.close();
  });

  it('connects with default flags: initialize is answered from server/discover and every request is a 2026-07-28 request', async () => {
    server = await startSdkV2Server({ token: TOKEN, ...refusal });
    connected = await connectV1(server.url);
    const { client } = connected;
    expect(client.getServerVersion()).toEqual({ name: 'fenbs-mcp-test-v2', version: '2.0.0' });
    expect(client.getServerCapabilities()).toMatchObject({ tools: { listChanged: true } });
    expect(client.getInstructions()).toBe('Ask for tasks by reference.');

    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toContain(CONFIRM_TOOL);
    const result = await client.callTool({ name: 'tasks_get', arguments: { ref: 'T-1' } });
    expect(result.content).toEqual([{ type: 'text', text: 'Draft the release notes' }]);

    // After the refused initialize, only 2026-07-28 requests: version and client identity in _meta.
    const posts = server.requests.filter((r) => r.method === 'POST' && r.body?.method !== 'initialize');
    expect(posts.length).toBeGreaterThan(0);
    for (const post of posts) {
      expect(post.body.params._meta).toMatchObject({
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientInfo': { name: 'fenbs-mcp-v1-host', version: '1.0.0' },
        'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
      });
      expect(post.headers['mcp-protocol-version']).toBe('2026-07-28');
    }
  });

  it('fails to connect with --protocol passthrough: the translation is what makes it work', async () => {
    server = await startSdkV2Server({ token: TOKEN, ...refusal });
    await expect(connectV1(server.url, ['--protocol', 'passthrough'])).rejects.toThrow();
    expect(server.requests.some((r) => r.body?.method === 'server/discover')).toBe(false);
  });
});

describe('an SDK v1 client through the translating bridge', () => {
  let server: SdkV2Server;
  let connected: V1Client;

  afterEach(async () => {
    await connected.client.close();
    await server.close();
  });

  it('receives the progress of a call (2026-07-28 progress rides the call stream)', async () => {
    server = await startSdkV2Server({ token: TOKEN });
    connected = await connectV1(server.url);
    let progressCallbacks = 0;
    // The work outlasts the progress by far, so the client has handled the progress before the
    // response arrives (a progress written in the same turn as the response may race the client's
    // handler removal, which is not the bridge's doing).
    const result = await connected.client.callTool({ name: 'slow_task', arguments: { ms: 300 } }, undefined, { onprogress: () => void progressCallbacks++ });
    expect(result.content).toEqual([{ type: 'text', text: 'worked 300 ms' }]);
    expect(progressCallbacks).toBe(1);
  });

  it('closes the call stream when the client cancels: the server sees the exchange end unfinished', async () => {
    server = await startSdkV2Server({ token: TOKEN });
    connected = await connectV1(server.url);
    const controller = new AbortController();
    const call = connected.client.callTool({ name: 'slow_task', arguments: { ms: 60_000 } }, undefined, { signal: controller.signal });
    const exchange = await server.until(() => (server.slowCalls > 0 ? server.requests.find((r) => r.body?.params?.name === 'slow_task') : undefined));
    controller.abort();
    await expect(call).rejects.toThrow();
    await exchange.closed;
    expect(exchange.completed).toBe(false);
  });

  it('delivers a tool list change through the subscription the bridge opened', async () => {
    server = await startSdkV2Server({ token: TOKEN });
    connected = await connectV1(server.url);
    const listChanged = new Promise((resolve) => connected.client.setNotificationHandler(ToolListChangedNotificationSchema, resolve));
    await connected.logged(/list-change subscription open/);
    const listen = server.requests.find((r) => r.body?.method === 'subscriptions/listen')!;
    expect(listen.body.params.notifications).toEqual({ toolsListChanged: true });
    server.notify.toolsChanged();
    expect(await listChanged).toMatchObject({ method: 'notifications/tools/list_changed' });
  });

  it('plays an input_required round as an elicitation/create to the client and retries with its answer and the exact requestState', async () => {
    server = await startSdkV2Server({ token: TOKEN });
    connected = await connectV1(server.url);
    const result = await connected.client.callTool({ name: CONFIRM_TOOL, arguments: { ref: 'T-2' } });
    expect(result.content).toEqual([{ type: 'text', text: `T-2 confirmed=true state=${CONFIRM_STATE}` }]);
    expect(connected.elicitations).toEqual([expect.objectContaining({ message: 'Close T-2?' })]);
    const [first, retry] = server.requests.filter((r) => r.body?.params?.name === CONFIRM_TOOL).map((r) => r.body);
    // mrtr §Client Requirements: a new JSON-RPC id, the answers, the exact requestState.
    expect(retry.id).not.toBe(first.id);
    expect(retry.params.requestState).toBe(CONFIRM_STATE);
    expect(retry.params.inputResponses).toEqual({ confirm: { action: 'accept', content: { ok: true } } });
  });
});

describe('servers that answer initialize', () => {
  it('never translates a dual-era server: the SDK v1 client speaks 2025 to it as before', async () => {
    const server = await startSdkV2Server({ token: TOKEN, legacy: 'stateless' });
    const connected = await connectV1(server.url);
    try {
      await connected.client.listTools();
      expect(server.requests.some((r) => r.body?.method === 'server/discover')).toBe(false);
      const list = server.requests.find((r) => r.body?.method === 'tools/list')!;
      expect(list.body.params?._meta?.['io.modelcontextprotocol/protocolVersion']).toBeUndefined();
    } finally {
      await connected.client.close();
      await server.close();
    }
  });
});
