// The official v1 SDK client, through the built bridge as a desktop host starts it, against the SDK v1 HTTP+SSE server (2024-11-05) behind an /sse URL.

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ListRootsRequestSchema, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BIN, initializeRequest, spawnBridge } from '../helpers/spawn-bridge.js';
import { startSdkV1SseServer, type SdkV1SseServer } from '../helpers/sdk-v1-sse-server.js';

const token = `tok-${randomUUID()}`;

describe('an SDK v1 client through the bridge, to an HTTP+SSE server by its /sse URL', () => {
  let server: SdkV1SseServer;
  let client: Client;
  let stderr = '';
  const logs: string[] = [];

  beforeEach(async () => {
    server = await startSdkV1SseServer({ layout: 'sse', token });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, '--url', server.url],
      env: { FENBS_TOKEN: token, FENBS_MCP_LOG_LEVEL: 'info', PATH: process.env.PATH ?? '' },
      stderr: 'pipe',
    });
    stderr = '';
    logs.length = 0;
    (transport.stderr as Readable | null)?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    client = new Client({ name: 'fenbs-mcp-e2e', version: '1.0.0' }, { capabilities: { roots: { listChanged: true } } });
    client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [{ uri: 'file:///home/user/project', name: 'project' }] }));
    client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => void logs.push(String(notification.params.data)));
    await client.connect(transport);
  });

  afterEach(async () => {
    await client.close();
    await server.close();
  });

  it('initializes through the automatic fallback and says which transport it uses', () => {
    expect(client.getServerVersion()).toMatchObject({ name: 'fenbs-mcp-test-v1-sse' });
    expect(stderr).toContain('the server speaks the HTTP+SSE transport (2024-11-05): using it for this run');
    expect(server.requests.slice(0, 2).map((r) => `${r.method} ${r.path}`)).toEqual(['POST /sse', 'GET /sse']);
  });

  it('lists tools, calls one with progress, answers the server roots request, and carries notifications both ways', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['echo', 'notify', 'roots', 'slow']);

    const progress: string[] = [];
    const slow = await client.callTool({ name: 'slow', arguments: { ms: 300, steps: 3 } }, undefined, {
      onprogress: (p) => progress.push(`${p.progress}/${p.total}`),
    });
    expect(slow.content).toEqual([{ type: 'text', text: 'waited 300 ms' }]);
    expect(progress).toEqual(['1/3', '2/3', '3/3']);

    const roots = await client.callTool({ name: 'roots', arguments: {} });
    expect(roots.content).toEqual([{ type: 'text', text: 'file:///home/user/project' }]);

    const notified = await client.callTool({ name: 'notify', arguments: {} });
    expect(notified.content).toEqual([{ type: 'text', text: 'notified' }]);
    expect(logs).toEqual(['hello from the server']);

    await client.sendRootsListChanged();
    await client.callTool({ name: 'echo', arguments: { text: 'after' } });
    expect(server.received.map((m) => m.method)).toContain('notifications/roots/list_changed');
    for (const request of server.requests) expect(request.headers.authorization).toBe(`Bearer ${token}`);
    expect(stderr).not.toContain(token);
  });
});

describe('the built bridge on HTTP+SSE at stdin EOF', () => {
  it('answers what is in flight, closes the stream and exits 0', async () => {
    const server = await startSdkV1SseServer({ layout: 'sse', token });
    try {
      const bridge = spawnBridge(['--url', server.url], { FENBS_TOKEN: token });
      bridge.send(initializeRequest(1, '2024-11-05'));
      await bridge.reply(1);
      bridge.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      bridge.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'slow', arguments: { ms: 200, steps: 1 } } });
      bridge.end();
      expect((await bridge.reply(2)).result.content).toEqual([{ type: 'text', text: 'waited 200 ms' }]);
      expect(await bridge.exited).toEqual({ code: 0, signal: null });
    } finally {
      await server.close();
    }
  });
});

describe('the shell commands of the built bin, to an HTTP+SSE server', () => {
  /** Runs `fenbs-mcp <args>` as a person does in a shell: no terminal, stdin closed. */
  async function shell(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const child = spawn(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH ?? '', FENBS_TOKEN: token }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const [code] = (await once(child, 'close')) as [number | null];
    return { code, stdout, stderr };
  }

  it.each(['sse', 'base'] as const)('lists and calls the tools of a server in the %s layout, with no option', async (layout) => {
    const server = await startSdkV1SseServer({ layout, token });
    try {
      const tools = await shell(['tools', '--url', server.url]);
      expect(tools.stderr).toBe('');
      expect(tools.code).toBe(0);
      expect(tools.stdout).toMatch(/^echo\b/m);
      expect(tools.stdout).toMatch(/^slow\b/m);
      // The first POST was refused as no Streamable HTTP endpoint; the event stream was opened then.
      expect(server.requests.slice(0, 2).map((r) => r.method)).toEqual(['POST', 'GET']);

      const call = await shell(['call', 'echo', 'text=over the older transport', '--url', server.url]);
      expect(call.stderr).toBe('');
      expect(call.code).toBe(0);
      expect(call.stdout).toBe('over the older transport\n');
      expect(server.received.filter((m) => m.method === 'tools/call').map((m) => m.params.arguments)).toEqual([{ text: 'over the older transport' }]);
      for (const request of server.requests) expect(request.headers.authorization).toBe(`Bearer ${token}`);
    } finally {
      await server.close();
    }
  });
});
