// The official v1 SDK client, through the built bridge, against an official v1 SDK server.

import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BIN } from '../helpers/spawn-bridge.js';
import { GREETING_TOOL, startSdkV1Server, type RecordedRequest, type SdkV1Server } from '../helpers/sdk-v1-server.js';

/** The media types of an Accept header, without parameters. */
function mediaTypes(accept: string | string[] | undefined): string[] {
  return String(accept ?? '')
    .split(',')
    .map((part) => part.split(';', 1)[0]!.trim().toLowerCase());
}

function postsOf(server: SdkV1Server, rpcMethod: string): RecordedRequest[] {
  return server.requests.filter((request) => request.method === 'POST' && request.body?.method === rpcMethod);
}

describe.each(['json', 'sse'] as const)('an SDK v1 client through the bridge, %s replies', (mode) => {
  const token = `tok-${randomUUID()}`;
  let server: SdkV1Server;
  let client: Client;
  let stderr = '';

  beforeEach(async () => {
    server = await startSdkV1Server({ mode, token });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, '--url', server.url],
      env: { FENBS_TOKEN: token, FENBS_MCP_LOG_LEVEL: 'warn', PATH: process.env.PATH ?? '' },
      stderr: 'pipe',
    });
    stderr = '';
    (transport.stderr as Readable | null)?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    client = new Client({ name: 'fenbs-mcp-e2e', version: '1.0.0' });
    await client.connect(transport);
  });

  afterEach(async () => {
    await client.close();
    await server.close();
  });

  it('completes initialize and reports the server it reached', () => {
    expect(client.getServerVersion()).toMatchObject({ name: 'fenbs-mcp-test-v1' });
    expect(client.getServerCapabilities()).toHaveProperty('tools');
  });

  it('lists the server tools', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['echo', GREETING_TOOL, 'slow'].sort());
  });

  it('calls a tool and returns its result', async () => {
    const result = await client.callTool({ name: 'echo', arguments: { text: 'hello über the bridge' } });
    expect(result.content).toEqual([{ type: 'text', text: 'hello über the bridge' }]);
  });

  it('calls a tool whose name is not plain ASCII', async () => {
    const result = await client.callTool({ name: GREETING_TOOL, arguments: {} });
    expect(result.content).toEqual([{ type: 'text', text: 'Grüße!' }]);
  });

  it('answers concurrent calls each with its own result', async () => {
    const texts = Array.from({ length: 20 }, (_, i) => `call ${i}`);
    const results = await Promise.all(texts.map((text) => client.callTool({ name: 'echo', arguments: { text } })));
    expect(results.map((result) => (result.content as { text: string }[])[0]!.text)).toEqual(texts);
  });

  it('sends the protocol headers on tools/call and none of the session ones on initialize', async () => {
    await client.callTool({ name: GREETING_TOOL, arguments: {} });

    const [initialize] = postsOf(server, 'initialize');
    expect(initialize).toBeDefined();
    expect(initialize!.headers.authorization).toBe(`Bearer ${token}`);
    // Nothing is negotiated yet on the initialize POST (transports §Session Management, §Protocol Version Header).
    expect(initialize!.headers).not.toHaveProperty('mcp-session-id');
    expect(initialize!.headers).not.toHaveProperty('mcp-protocol-version');

    const call = postsOf(server, 'tools/call').find((request) => request.body.params.name === GREETING_TOOL);
    expect(call).toBeDefined();
    const { headers } = call!;
    expect(headers.authorization).toBe(`Bearer ${token}`);
    expect(headers['content-type']?.split(';', 1)[0]).toBe('application/json');
    // The client MUST list both types (transports §Sending Messages item 2).
    expect(mediaTypes(headers.accept)).toEqual(expect.arrayContaining(['application/json', 'text/event-stream']));
    expect(headers['mcp-method']).toBe('tools/call');
    // Non-ASCII and spaces force the Base64 sentinel (2026-07-28 Streamable HTTP §Value Encoding).
    expect(headers['mcp-name']).toBe(`=?base64?${Buffer.from(GREETING_TOOL, 'utf8').toString('base64')}?=`);
    expect(headers['mcp-session-id']).toBeTypeOf('string');
    expect(server.sessionIds).toContain(headers['mcp-session-id']);
    expect(headers['mcp-protocol-version']).toBe(initialize!.body.params.protocolVersion);
  });

  it('sends the session id and the negotiated version on every message after initialize', async () => {
    await client.listTools();
    const after = server.requests.filter((request) => request.method === 'POST' && request.body?.method !== 'initialize');
    expect(after.map((request) => request.body.method)).toContain('tools/list');
    for (const request of after) {
      expect(request.headers['mcp-session-id']).toBe(server.sessionIds[0]);
      expect(request.headers['mcp-protocol-version']).toBeTypeOf('string');
    }
  });

  it('never writes the token to stderr', async () => {
    await client.callTool({ name: 'echo', arguments: { text: 'x' } });
    expect(stderr).not.toContain(token);
  });

  it.runIf(mode === 'sse')('delivers every progress notification before the result', async () => {
    const order: string[] = [];
    const result = await client.callTool({ name: 'slow', arguments: { ms: 600, steps: 3 } }, undefined, {
      onprogress: (progress) => order.push(`progress ${progress.progress}/${progress.total}`),
    });
    order.push('result');
    expect(result.content).toEqual([{ type: 'text', text: 'waited 600 ms' }]);
    expect(order).toEqual(['progress 1/3', 'progress 2/3', 'progress 3/3', 'result']);
  });

  // With enableJsonResponse the v1 server has no stream to put progress on: it drops it, and the
  // call still completes with its one JSON reply.
  it.runIf(mode === 'json')('completes a call with a progress token when the server answers with plain JSON', async () => {
    const progress: number[] = [];
    const result = await client.callTool({ name: 'slow', arguments: { ms: 150, steps: 3 } }, undefined, { onprogress: (p) => progress.push(p.progress) });
    expect(result.content).toEqual([{ type: 'text', text: 'waited 150 ms' }]);
    expect(progress).toEqual([]);
  });
});
