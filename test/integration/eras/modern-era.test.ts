import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createConfig } from '../../../src/config/config.js';
import { Endpoint } from '../../../src/http/endpoint.js';
import { type JsonObject } from '../../../src/core/json-rpc.js';
import { MAX_TOOL_LIST_PAGES, ModernEra } from '../../../src/eras/modern-era.js';
import { ToolHeaderRegistry } from '../../../src/eras/tool-headers.js';
import { sseEvent, startFaultServer, type FaultServer } from '../../helpers/fault-server.js';
import type { Dispatcher } from '../../../src/http/undici-parts.js';
import { MODERN_VERSION_META_KEY } from '../../../src/core/protocol.js';
import { fixedCredential } from '../../../src/credentials/create-credential.js';
import { createDispatcher } from '../../../src/http/dispatcher.js';

const VERSION = '2026-07-28';
const annotatedTool = (name: string, header: string) => ({
  name,
  inputSchema: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': header } } },
});
const invalidTool = { name: 'broken', inputSchema: { type: 'object', properties: { p: { type: 'string', 'x-mcp-header': 'Bad Name' } } } };
const callOf = (name: string, meta: JsonObject = { [MODERN_VERSION_META_KEY]: VERSION }): JsonObject => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: { name, arguments: { region: 'eu-west' }, _meta: meta },
});

function recordingLogger() {
  const lines: { msg: string; tool?: string }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(JSON.parse(chunk.toString()) as { msg: string });
      callback();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), lines };
}

describe('ModernEra', () => {
  let server: FaultServer;
  let dispatcher: Dispatcher;
  let tools: ToolHeaderRegistry;
  let era: ModernEra;
  let lines: { msg: string; tool?: string }[];

  beforeEach(async () => {
    server = await startFaultServer();
    const config = createConfig({ options: { url: server.url }, env: {}, readTextFile: () => '' });
    dispatcher = createDispatcher({ connectTimeoutMs: config.connectTimeoutMs, caFile: undefined, env: {} });
    tools = new ToolHeaderRegistry();
    const recording = recordingLogger();
    lines = recording.lines;
    era = new ModernEra({
      endpoint: new Endpoint(config, dispatcher, {}, fixedCredential(config)),
      tools,
      logger: recording.logger,
      maxMessageBytes: 1024 * 1024,
      redact: (text) => text,
    });
  });
  afterEach(async () => {
    await dispatcher.close();
    await server.close();
  });

  describe('onResponse', () => {
    it('drops a tool with an invalid x-mcp-header from tools/list, logs it, and keeps the rest of the message', async () => {
      const message = { jsonrpc: '2.0', id: 3, result: { tools: [annotatedTool('search', 'Region'), invalidTool], nextCursor: 'c' } };
      const reply = era.onResponse('tools/list', message);
      expect(reply).not.toBe(message);
      expect(reply).toEqual({ jsonrpc: '2.0', id: 3, result: { tools: [annotatedTool('search', 'Region')], nextCursor: 'c' } });
      expect(message.result.tools).toHaveLength(2); // the server's message is not mutated
      await new Promise((resolve) => setImmediate(resolve));
      expect(lines).toContainEqual(expect.objectContaining({ tool: 'broken', msg: expect.stringContaining('invalid x-mcp-header') }));
      expect(era.headersFor(callOf('search'), 'tools/call')).toMatchObject({ 'mcp-param-region': 'eu-west' });
    });

    it('returns the very same message when every tool is valid, so the server’s own bytes are written', () => {
      const message = { jsonrpc: '2.0', id: 3, result: { tools: [annotatedTool('search', 'Region')] } };
      expect(era.onResponse('tools/list', message)).toBe(message);
    });

    it('leaves other methods and error answers to tools/list untouched', () => {
      const error = { jsonrpc: '2.0', id: 3, error: { code: -32603, message: 'down' } };
      expect(era.onResponse('tools/list', error)).toBe(error);
      const other = { jsonrpc: '2.0', id: 4, result: { tools: [invalidTool] } };
      expect(era.onResponse('prompts/list', other)).toBe(other);
    });
  });

  describe('headersFor', () => {
    it('takes the version and Mcp-Method from the message, and Mcp-Param-* only for tools/call', () => {
      era.onResponse('tools/list', { jsonrpc: '2.0', id: 1, result: { tools: [annotatedTool('search', 'Region')] } });
      expect(era.headersFor(callOf('search'), 'tools/call')).toEqual({
        'mcp-method': 'tools/call',
        'mcp-name': 'search',
        'mcp-protocol-version': VERSION,
        'mcp-param-region': 'eu-west',
      });
      expect(era.headersFor({ jsonrpc: '2.0', id: 2, method: 'ping' }, 'ping')).toEqual({ 'mcp-method': 'ping' });
      expect(era.headersFor({ jsonrpc: '2.0', id: 3, result: {} }, undefined)).toEqual({});
    });

    it('has no session to wait for, expire or heal', async () => {
      expect(era.ready()).toBeUndefined();
      expect(era.isExpired()).toBe(false);
      await expect(era.heal()).resolves.toBeUndefined();
      expect(era.onAccepted()).toBeUndefined();
    });
  });

  // 2026-07-28 Streamable HTTP §Schema Extension: after a HeaderMismatch the schemas may be stale.
  describe('refreshTools', () => {
    it('fetches every page of tools/list with the call’s protocol _meta, and remembers the tools of each page', async () => {
      server.next('tools/list', (request) => ({
        kind: 'json',
        body: { jsonrpc: '2.0', id: request.id, result: { tools: [annotatedTool('first', 'Region')], nextCursor: 'page-2' } },
      }));
      server.next('tools/list', (request) => ({
        kind: 'sse',
        steps: [
          sseEvent({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'unrelated' } }),
          sseEvent({ jsonrpc: '2.0', id: 'someone-else', result: {} }),
          sseEvent({ jsonrpc: '2.0', id: request.id, result: { tools: [annotatedTool('second', 'Zone')] } }),
        ],
      }));
      const call = callOf('second', { [MODERN_VERSION_META_KEY]: VERSION, progressToken: 'not-protocol' });
      await era.refreshTools(call, new AbortController().signal);

      const lists = server.requests.filter((request) => request.rpcMethod === 'tools/list');
      expect(lists).toHaveLength(2);
      expect(lists[0]!.body.params).toEqual({ _meta: { [MODERN_VERSION_META_KEY]: VERSION } });
      expect(lists[1]!.body.params).toEqual({ _meta: { [MODERN_VERSION_META_KEY]: VERSION }, cursor: 'page-2' });
      expect(lists[0]!.id).not.toBe(lists[1]!.id);
      expect(lists[0]!.headers['mcp-method']).toBe('tools/list');
      expect(lists[0]!.headers['mcp-protocol-version']).toBe(VERSION);
      expect(tools.has('first') && tools.has('second')).toBe(true);
      expect(era.headersFor(call, 'tools/call')).toMatchObject({ 'mcp-param-zone': 'eu-west' });
    });

    it('sends an empty _meta when the call carries none', async () => {
      server.next('tools/list', (request) => ({ kind: 'json', body: { jsonrpc: '2.0', id: request.id, result: { tools: [] } } }));
      await era.refreshTools({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x' } }, new AbortController().signal);
      expect(server.requests.map((request) => request.body.params)).toEqual([{ _meta: {} }]);
    });

    it('stops after MAX_TOOL_LIST_PAGES pages from a server whose cursor never ends', async () => {
      server.every('tools/list', (request) => ({
        kind: 'json',
        body: { jsonrpc: '2.0', id: request.id, result: { tools: [], nextCursor: `after-${String(request.id)}` } },
      }));
      await era.refreshTools(callOf('x'), new AbortController().signal);
      expect(server.requests.filter((request) => request.rpcMethod === 'tools/list')).toHaveLength(MAX_TOOL_LIST_PAGES);
    });

    it('stops without remembering anything when the server answers tools/list with an error', async () => {
      server.next('tools/list', (request) => ({ kind: 'json', body: { jsonrpc: '2.0', id: request.id, error: { code: -32603, message: 'no tools today' } } }));
      await era.refreshTools(callOf('x'), new AbortController().signal);
      expect(server.requests).toHaveLength(1);
      expect(tools.has('x')).toBe(false);
    });

    it('rejects with REMOTE_HTTP_STATUS and an excerpt of the body when tools/list gets an HTTP error', async () => {
      server.next('tools/list', () => ({ kind: 'status', status: 503, body: 'maintenance window', contentType: 'text/plain' }));
      await expect(era.refreshTools(callOf('x'), new AbortController().signal)).rejects.toMatchObject({
        code: 'REMOTE_HTTP_STATUS',
        context: { status: 503, bodyExcerpt: 'maintenance window' },
      });
    });

    it('rejects with REMOTE_BAD_REPLY when the answer is not the response to the bridge’s own request', async () => {
      server.next('tools/list', () => ({ kind: 'json', body: { jsonrpc: '2.0', id: 'not-ours', result: { tools: [] } } }));
      await expect(era.refreshTools(callOf('x'), new AbortController().signal)).rejects.toMatchObject({ code: 'REMOTE_BAD_REPLY', context: { status: 200 } });
    });
  });
});
