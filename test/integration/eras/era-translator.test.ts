// In-process: a 2025-era client on stdin, a 2026-07-28-only server, and the translation between them.

import { EventEmitter, once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { LISTEN_REOPEN_DELAYS_MS, MAX_INPUT_ROUNDS } from '../../../src/eras/era-translator.js';
import { MAX_INPUT_REQUESTS_PER_ROUND } from '../../../src/eras/translate-messages.js';
import { LARGE_LINE_BYTES } from '../../../src/stdio/line-reader.js';
import { LARGE_REPLY_BYTES } from '../../../src/http/reply-reader.js';
import { startInProcessBridge, waitForLog, type InProcessBridge } from '../../helpers/in-process-bridge.js';
import { CONFIRM_STATE, CONFIRM_TOOL, startSdkV2Server, type SdkV2Server } from '../../helpers/sdk-v2-server.js';

const TOKEN = 'era-translator-token';

const initialize = (id: number | string, capabilities: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities, clientInfo: { name: 'raw-2025-client', version: '0.1' } },
});
const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };
const call = (id: number | string, name: string, args: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args },
});
const cancelled = (requestId: number | string) => ({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason: 'user' } });
const isBridgeRequest = (method: string) => (m: any) => m.method === method && typeof m.id === 'string' && m.id.startsWith('fenbs-mcp-');

/** An input_required result of `count` roots/list input requests, as a server floods a client with. */
function manyInputRequests(id: unknown, count: number): string {
  const entries = Array.from({ length: count }, (_, i) => `"r${i}":{"method":"roots/list"}`);
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"resultType":"input_required","inputRequests":{${entries.join(',')}},"requestState":"s"}}`;
}

describe('an input_required result that asks for too many inputs at once', () => {
  it.each([
    [MAX_INPUT_REQUESTS_PER_ROUND + 1, 'just past the bound'],
    [100_000, 'a 2.9 MB flood'],
  ])(`answers %i input requests (%s) with one INPUT_REQUESTS_EXCEEDED error, asks the client nothing, and serves the next call`, async (count) => {
    const server = await startSdkV2Server({ token: TOKEN, rawToolReplies: { tasks_flood: (id) => manyInputRequests(id, count) } });
    const bridge = startInProcessBridge(['--url', server.url], { FENBS_TOKEN: TOKEN });
    try {
      bridge.send(initialize(0, { roots: {} }));
      await bridge.reply(0);
      bridge.send(initialized);
      bridge.send(call(1, 'tasks_flood'));
      const reply = await bridge.reply(1, 30_000);
      expect(reply.error).toMatchObject({ code: -31023, data: { bridgeCode: 'INPUT_REQUESTS_EXCEEDED', limit: MAX_INPUT_REQUESTS_PER_ROUND } });
      bridge.send(call(2, 'tasks_get', { ref: 'T-1' }));
      expect((await bridge.reply(2)).result.content[0].text).toBe('Draft the release notes');
      expect(bridge.lines.filter((line) => line.includes('roots/list'))).toEqual([]);
      expect(bridge.lines).toHaveLength(3);
    } finally {
      bridge.kill();
      await bridge.exited;
      await server.close();
    }
  });

  it.each([
    ['declares its length', LARGE_REPLY_BYTES * 64],
    ['is chunked', undefined],
  ])(
    'refuses a large flood as soon as its input requests pass the bound, without waiting for the rest of a body that %s and never ends',
    async (_, contentLength) => {
      // Past LARGE_REPLY_BYTES a body is scanned as it arrives: the start of this one already shows
      // resultType input_required and more input requests than a round may carry.
      const start = manyInputRequests('x', 60_000).slice(0, LARGE_REPLY_BYTES + 4096);
      const server = await startSdkV2Server({
        token: TOKEN,
        rawToolReplies: { tasks_flood: (id) => ({ start: start.replace('"id":"x"', `"id":${JSON.stringify(id)}`), contentLength }) },
      });
      const bridge = startInProcessBridge(['--url', server.url, '--request-timeout', '60000'], { FENBS_TOKEN: TOKEN });
      try {
        bridge.send(initialize(0, { roots: {} }));
        await bridge.reply(0);
        bridge.send(initialized);
        bridge.send(call(1, 'tasks_flood'));
        const reply = await bridge.reply(1, 10_000);
        expect(reply.error).toMatchObject({ code: -31023, data: { bridgeCode: 'INPUT_REQUESTS_EXCEEDED', limit: MAX_INPUT_REQUESTS_PER_ROUND } });
        bridge.send(call(2, 'tasks_get', { ref: 'T-1' }));
        expect((await bridge.reply(2)).result.content[0].text).toBe('Draft the release notes');
        expect(bridge.lines.filter((line) => line.includes('roots/list'))).toEqual([]);
      } finally {
        bridge.kill();
        await bridge.exited;
        await server.close();
      }
    },
  );

  it(`still asks for ${MAX_INPUT_REQUESTS_PER_ROUND} inputs in one round`, async () => {
    const server = await startSdkV2Server({ token: TOKEN, rawToolReplies: { tasks_flood: (id) => manyInputRequests(id, MAX_INPUT_REQUESTS_PER_ROUND) } });
    const bridge = startInProcessBridge(['--url', server.url], { FENBS_TOKEN: TOKEN });
    try {
      bridge.send(initialize(0, { roots: {} }));
      await bridge.reply(0);
      bridge.send(initialized);
      bridge.send(call(1, 'tasks_flood'));
      await bridge.waitFor((m) => m.method === 'roots/list');
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(bridge.lines.filter((line) => line.includes('"roots/list"'))).toHaveLength(MAX_INPUT_REQUESTS_PER_ROUND);
    } finally {
      bridge.kill();
      await bridge.exited;
      await server.close();
    }
  });
});

describe('the era translator against the SDK v2 server (legacy: reject)', () => {
  let server: SdkV2Server;
  let bridge: InProcessBridge;
  const posts = (method: string) => server.requests.filter((r) => r.method === 'POST' && r.body?.method === method);

  const start = async (args: string[] = [], capabilities: Record<string, unknown> = { elicitation: {} }) => {
    server = await startSdkV2Server({ token: TOKEN });
    bridge = startInProcessBridge(['--url', server.url, ...args], { FENBS_TOKEN: TOKEN });
    bridge.send(initialize(0, capabilities));
    const reply = await bridge.reply(0);
    bridge.send(initialized);
    return reply;
  };

  afterEach(async () => {
    bridge.kill();
    await bridge.exited;
    await server.close();
  });

  it('answers initialize from server/discover with the version the client asked for, and swallows notifications/initialized', async () => {
    const reply = await start(['--log-level', 'info']);
    expect(reply).toEqual({
      jsonrpc: '2.0',
      id: 0,
      result: {
        protocolVersion: '2025-06-18',
        capabilities: { tools: { listChanged: true } },
        serverInfo: { name: 'fenbs-mcp-test-v2', version: '2.0.0' },
        instructions: 'Ask for tasks by reference.',
      },
    });
    await server.until(() => posts('subscriptions/listen')[0]);
    expect(posts('notifications/initialized')).toEqual([]);
    expect(bridge.stderr()).toMatch(/translating for this 2025-era client/);
  });

  it('answers ping with a server/discover round trip', async () => {
    await start();
    const discovers = posts('server/discover').length;
    bridge.send({ jsonrpc: '2.0', id: 'p', method: 'ping' });
    expect(await bridge.reply('p')).toEqual({ jsonrpc: '2.0', id: 'p', result: {} });
    expect(posts('server/discover')).toHaveLength(discovers + 1);
  });

  it('turns logging/setLevel into the log level of every later request, and refuses a level 2025 does not have', async () => {
    await start();
    bridge.send({ jsonrpc: '2.0', id: 'l', method: 'logging/setLevel', params: { level: 'warning' } });
    expect(await bridge.reply('l')).toEqual({ jsonrpc: '2.0', id: 'l', result: {} });
    expect(posts('logging/setLevel')).toEqual([]);
    bridge.send({ jsonrpc: '2.0', id: 't', method: 'tools/list' });
    await bridge.reply('t');
    expect(posts('tools/list')[0]!.body.params._meta['io.modelcontextprotocol/logLevel']).toBe('warning');
    bridge.send({ jsonrpc: '2.0', id: 'bad', method: 'logging/setLevel', params: { level: 'loud' } });
    expect((await bridge.reply('bad')).error.code).toBe(-32602);
  });

  it('writes an input request to the client under an id of its own and answers the call under the client id', async () => {
    await start();
    bridge.send(call(7, CONFIRM_TOOL, { ref: 'T-1' }));
    const ask = await bridge.waitFor(isBridgeRequest('elicitation/create'));
    expect(ask.params).toMatchObject({ message: 'Close T-1?', requestedSchema: { type: 'object' } });
    bridge.send({ jsonrpc: '2.0', id: ask.id, result: { action: 'accept', content: { ok: false } } });
    const reply = await bridge.reply(7);
    expect(reply.result.content).toEqual([{ type: 'text', text: `T-1 confirmed=false state=${CONFIRM_STATE}` }]);
    const rounds = posts('tools/call').map((r) => r.body);
    expect(rounds).toHaveLength(2);
    expect(new Set([7, ...rounds.map((round) => round.id)]).size).toBe(3);
  });

  it('ends the call with a clear error when the client answers the input request with an error', async () => {
    await start();
    bridge.send(call(8, CONFIRM_TOOL, { ref: 'T-1' }));
    const ask = await bridge.waitFor(isBridgeRequest('elicitation/create'));
    bridge.send({ jsonrpc: '2.0', id: ask.id, error: { code: -32603, message: 'user went away' } });
    const reply = await bridge.reply(8);
    expect(reply.error).toMatchObject({ code: -31021, data: { bridgeCode: 'INPUT_UNAVAILABLE' } });
    expect(reply.error.message).toMatch(/user went away/);
  });

  it('forwards the refusal of the server itself when the client did not declare the capability the input needs', async () => {
    await start([], {});
    bridge.send(call(9, CONFIRM_TOOL, { ref: 'T-1' }));
    // The SDK server checks the capabilities in _meta itself (-32021 MissingRequiredClientCapability).
    expect((await bridge.reply(9)).error).toMatchObject({ code: -32021, data: { requiredCapabilities: { elicitation: {} } } });
  });

  it('ends the call with a clear error for a URL-mode elicitation, which has no 2025 shape', async () => {
    await start([], { elicitation: { form: {}, url: {} } });
    bridge.send(call(10, 'tasks_ask_url'));
    expect((await bridge.reply(10)).error.message).toMatch(/elicitation mode "url" has no 2025-era form/);
  });

  it('asks a client that declared roots for roots/list and sends its answer in the retry', async () => {
    await start([], { roots: {} });
    bridge.send(call(11, 'tasks_ask_roots'));
    const ask = await bridge.waitFor(isBridgeRequest('roots/list'));
    bridge.send({ jsonrpc: '2.0', id: ask.id, result: { roots: [{ uri: 'file:///work' }] } });
    expect((await bridge.reply(11)).result.content).toEqual([{ type: 'text', text: 'file:///work' }]);
  });

  it('asks a client that declared sampling for sampling/createMessage and sends its answer in the retry', async () => {
    await start([], { sampling: {} });
    bridge.send(call(20, 'tasks_ask_sampling'));
    const ask = await bridge.waitFor(isBridgeRequest('sampling/createMessage'));
    expect(ask.params).toMatchObject({ maxTokens: 50, messages: [{ role: 'user', content: { type: 'text', text: 'Summarise T-1' } }] });
    bridge.send({
      jsonrpc: '2.0',
      id: ask.id,
      result: { role: 'assistant', content: { type: 'text', text: 'Draft notes' }, model: 'm', stopReason: 'endTurn' },
    });
    expect((await bridge.reply(20)).result.content).toEqual([{ type: 'text', text: 'summary: {"type":"text","text":"Draft notes"}' }]);
  });

  it('reads a large request and a large answer to its input request whole (lines over LARGE_LINE_BYTES are otherwise only scanned)', async () => {
    await start([], { sampling: {} });
    bridge.send({ jsonrpc: '2.0', id: 'big-ping', method: 'ping', params: { _meta: { note: 'n'.repeat(LARGE_LINE_BYTES) } } });
    expect((await bridge.reply('big-ping')).result).toEqual({});
    bridge.send(call(21, 'tasks_ask_sampling'));
    const ask = await bridge.waitFor(isBridgeRequest('sampling/createMessage'));
    const text = `Draft ${'d'.repeat(LARGE_LINE_BYTES)}`;
    bridge.send({ jsonrpc: '2.0', id: ask.id, result: { role: 'assistant', content: { type: 'text', text }, model: 'm', stopReason: 'endTurn' } });
    expect((await bridge.reply(21)).result.content).toEqual([{ type: 'text', text: `summary: ${JSON.stringify({ type: 'text', text })}` }]);
  });

  it(`gives up after ${MAX_INPUT_ROUNDS} input_required rounds, each sent under a new id`, async () => {
    await start();
    bridge.send(call(12, 'tasks_ask_forever'));
    expect((await bridge.reply(12)).error).toMatchObject({ code: -31022, data: { bridgeCode: 'INPUT_ROUNDS_EXCEEDED', limit: MAX_INPUT_ROUNDS } });
    const rounds = posts('tools/call');
    expect(rounds).toHaveLength(MAX_INPUT_ROUNDS);
    expect(new Set(rounds.map((r) => r.body.id)).size).toBe(MAX_INPUT_ROUNDS);
    expect(rounds.slice(1).every((r) => r.body.params.requestState === 'again')).toBe(true);
  });

  it('writes nothing for a call the client cancels while its input is asked, and cancels the input request', async () => {
    await start();
    bridge.send(call(13, CONFIRM_TOOL, { ref: 'T-1' }));
    const ask = await bridge.waitFor(isBridgeRequest('elicitation/create'));
    bridge.send(cancelled(13));
    const notice = await bridge.waitFor((m) => m.method === 'notifications/cancelled');
    expect(notice.params.requestId).toBe(ask.id);
    bridge.send({ jsonrpc: '2.0', id: 'after', method: 'ping' });
    await bridge.reply('after');
    expect(bridge.lines.map((line) => JSON.parse(line)).filter((m) => m.id === 13)).toEqual([]);
  });

  it('closes the stream of a call the client cancels, and writes nothing for it', async () => {
    await start();
    bridge.send(call(14, 'slow_task', { ms: 60_000 }));
    const exchange = await server.until(() => (server.slowCalls > 0 ? posts('tools/call')[0] : undefined));
    bridge.send(cancelled(14));
    await exchange.closed;
    expect(exchange.completed).toBe(false);
    bridge.send({ jsonrpc: '2.0', id: 'after', method: 'ping' });
    await bridge.reply('after');
    expect(bridge.lines.map((line) => JSON.parse(line)).filter((m) => m.id === 14)).toEqual([]);
  });

  it('answers a request waiting on the client when stdin ends, and ends cleanly', async () => {
    await start();
    bridge.send(call(15, CONFIRM_TOOL, { ref: 'T-1' }));
    await bridge.waitFor(isBridgeRequest('elicitation/create'));
    bridge.end();
    expect((await bridge.reply(15)).error).toMatchObject({ data: { bridgeCode: 'SHUTTING_DOWN' } });
    expect(await bridge.exited).toEqual({ exit: 'input-ended' });
  });

  it('answers a request waiting on the client when the bridge is stopped', async () => {
    await start();
    bridge.send(call(16, CONFIRM_TOOL, { ref: 'T-1' }));
    await bridge.waitFor(isBridgeRequest('elicitation/create'));
    bridge.signal();
    expect((await bridge.reply(16)).error).toMatchObject({ data: { bridgeCode: 'SHUTTING_DOWN' } });
  });

  it('answers with a deadline error when the client does not answer the input request in time', async () => {
    await start(['--request-timeout', '1500']); // room for the handshake on a busy machine
    bridge.send(call(17, CONFIRM_TOOL, { ref: 'T-1' }));
    const ask = await bridge.waitFor(isBridgeRequest('elicitation/create'));
    expect((await bridge.reply(17)).error).toMatchObject({ data: { bridgeCode: 'REQUEST_TIMEOUT' } });
    expect((await bridge.waitFor((m) => m.method === 'notifications/cancelled')).params.requestId).toBe(ask.id);
  });

  it('answers a call whose round outlives the request deadline with the deadline error, under the client id', async () => {
    await start(['--request-timeout', '1500']); // room for the handshake on a busy machine
    bridge.send(call(19, 'slow_task', { ms: 60_000 }));
    expect((await bridge.reply(19)).error).toMatchObject({ code: -31008, data: { bridgeCode: 'REQUEST_TIMEOUT' } });
    const exchange = await server.until(() => posts('tools/call')[0]);
    await exchange.closed;
    expect(exchange.completed).toBe(false);
  });

  it('refuses a second request with an id that is still outstanding', async () => {
    await start();
    bridge.send(call(18, 'slow_task', { ms: 60_000 }));
    await server.until(() => (server.slowCalls > 0 ? true : undefined));
    bridge.send(call(18, 'tasks_get', { ref: 'T-1' }));
    expect((await bridge.reply(18)).error.code).toBe(-32600);
  });

  it('ignores a cancel for an id that is not outstanding, for initialize, or without a usable id', async () => {
    await start();
    bridge.send(cancelled('nothing-like-it'));
    bridge.send(cancelled(0));
    bridge.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: { odd: true } } });
    bridge.send({ jsonrpc: '2.0', method: 'notifications/cancelled' });
    bridge.send({ jsonrpc: '2.0', id: 'after', method: 'ping' });
    expect(await bridge.reply('after')).toEqual({ jsonrpc: '2.0', id: 'after', result: {} });
    expect(posts('notifications/cancelled')).toEqual([]);
  });

  it('answers a second initialize from server/discover again, and drops notifications and answers it has no use for', async () => {
    await start();
    bridge.send({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' });
    bridge.send({ jsonrpc: '2.0', id: 'nobody-asked', result: {} });
    bridge.send(initialize('again'));
    expect((await bridge.reply('again')).result.serverInfo).toEqual({ name: 'fenbs-mcp-test-v2', version: '2.0.0' });
    expect(posts('notifications/roots/list_changed')).toEqual([]);
    expect(bridge.stderr()).toMatch(/did not send; dropped/);
  });

  it('passes a 2026-07-28 request through untouched while translating', async () => {
    await start();
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
    bridge.send({ jsonrpc: '2.0', id: 'modern', method: 'tools/list', params: { _meta: meta } });
    await bridge.reply('modern');
    expect(posts('tools/list')[0]!.body).toEqual({ jsonrpc: '2.0', id: 'modern', method: 'tools/list', params: { _meta: meta } });
  });

  it('forwards the refusal unchanged with --protocol passthrough', async () => {
    server = await startSdkV2Server({ token: TOKEN });
    bridge = startInProcessBridge(['--url', server.url, '--protocol', 'passthrough'], { FENBS_TOKEN: TOKEN });
    bridge.send(initialize(0));
    expect((await bridge.reply(0)).error.code).toBe(-32022);
    expect(posts('server/discover')).toEqual([]);
  });
});

/** A scripted server: each method gets its scripted answer (status, body; "ID" becomes the request id), anything else 404. */
async function startScripted(
  answers: Record<string, [number, string]>,
): Promise<{ url: string; methods: string[]; until: (count: number) => Promise<void>; close: () => Promise<void> }> {
  const methods: string[] = [];
  const arrived = new EventEmitter();
  const http: Server = createServer((req, res) => {
    // A GET is the bridge looking for an HTTP+SSE event stream after a refused initialize: a
    // 2026-07-28 server without one answers 405 (Streamable HTTP §Listening for Messages).
    if (req.method === 'GET') {
      res.writeHead(405).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: unknown; method: string };
      methods.push(body.method);
      arrived.emit('request');
      const [status, text] = answers[body.method] ?? [404, ''];
      res.writeHead(status, { 'content-type': text.startsWith('{') ? 'application/json' : 'text/plain' }).end(text.replace('"ID"', JSON.stringify(body.id)));
    });
  });
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    methods,
    /** Resolves once `count` requests have arrived. */
    until: (count) =>
      new Promise((resolve) => {
        const check = () => {
          if (methods.length < count) return;
          arrived.off('request', check);
          resolve();
        };
        arrived.on('request', check);
        check();
      }),
    close: async () => {
      http.closeAllConnections();
      http.close();
      await once(http, 'close');
    },
  };
}

const discoverResult = (versions: string[], capabilities: Record<string, unknown> = {}) =>
  JSON.stringify({ jsonrpc: '2.0', id: 'ID', result: { supportedVersions: versions, capabilities, resultType: 'complete', ttlMs: 0, cacheScope: 'private' } });

describe('deciding whether to translate', () => {
  let scripted: Awaited<ReturnType<typeof startScripted>>;
  let bridge: InProcessBridge;
  afterEach(async () => {
    bridge.kill();
    await bridge.exited;
    await scripted.close();
  });

  it('translates after a plain 404 to initialize when server/discover lists only 2026-07-28', async () => {
    scripted = await startScripted({ initialize: [404, 'Not Found'], 'server/discover': [200, discoverResult(['2026-07-28'])] });
    bridge = startInProcessBridge(['--url', scripted.url], { FENBS_TOKEN: TOKEN });
    bridge.send(initialize(1));
    expect((await bridge.reply(1)).result).toEqual({ protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 'unknown', version: '0' } });
  });

  it('never translates a server that answers initialize, and never asks it server/discover', async () => {
    const answer = JSON.stringify({
      jsonrpc: '2.0',
      id: 'ID',
      result: { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 'old', version: '1' } },
    });
    scripted = await startScripted({ initialize: [200, answer], 'server/discover': [200, discoverResult(['2026-07-28'])] });
    bridge = startInProcessBridge(['--url', scripted.url], { FENBS_TOKEN: TOKEN });
    bridge.send(initialize(5));
    expect((await bridge.reply(5)).result.serverInfo).toEqual({ name: 'old', version: '1' });
    bridge.send(initialized);
    bridge.send({ jsonrpc: '2.0', id: 6, method: 'ping' });
    await bridge.reply(6);
    expect(scripted.methods).toEqual(['initialize', 'notifications/initialized', 'ping']);
  });

  it('forwards the refusal when server/discover lists a 2025 version too', async () => {
    const refusal = JSON.stringify({ jsonrpc: '2.0', id: 'ID', error: { code: -32022, message: 'Unsupported protocol version' } });
    scripted = await startScripted({ initialize: [400, refusal], 'server/discover': [200, discoverResult(['2025-11-25', '2026-07-28'])] });
    bridge = startInProcessBridge(['--url', scripted.url], { FENBS_TOKEN: TOKEN });
    bridge.send(initialize(2));
    expect((await bridge.reply(2)).error).toEqual({ code: -32022, message: 'Unsupported protocol version' });
    expect(scripted.methods).toEqual(['initialize', 'server/discover']);
  });

  it('forwards the refusal when server/discover fails too', async () => {
    scripted = await startScripted({ initialize: [404, 'Not Found'], 'server/discover': [404, 'Not Found'] });
    bridge = startInProcessBridge(['--url', scripted.url], { FENBS_TOKEN: TOKEN });
    bridge.send(initialize(3));
    expect((await bridge.reply(3)).error.data).toMatchObject({ bridgeCode: 'REMOTE_HTTP_STATUS', status: 404 });
  });

  it('never probes server/discover after an initialize refused for another reason', async () => {
    scripted = await startScripted({ initialize: [500, 'boom'], 'server/discover': [200, discoverResult(['2026-07-28'])] });
    bridge = startInProcessBridge(['--url', scripted.url], { FENBS_TOKEN: TOKEN });
    bridge.send(initialize(4));
    expect((await bridge.reply(4)).error.data).toMatchObject({ status: 500 });
    expect(scripted.methods).toEqual(['initialize']);
  });
});

describe('the list-change subscription', () => {
  let scripted: Awaited<ReturnType<typeof startScripted>>;
  let bridge: InProcessBridge;
  const discover = discoverResult(['2026-07-28'], { prompts: { listChanged: true } });
  const listens = () => scripted.methods.filter((method) => method === 'subscriptions/listen').length;
  afterEach(async () => {
    bridge.kill();
    await bridge.exited;
    await scripted.close();
  });

  const connect = async (listen: [number, string]) => {
    scripted = await startScripted({ initialize: [404, 'Not Found'], 'server/discover': [200, discover], 'subscriptions/listen': listen });
    bridge = startInProcessBridge(['--url', scripted.url], { FENBS_TOKEN: TOKEN });
    bridge.send(initialize(1));
    await bridge.reply(1);
    bridge.send(initialized);
  };

  it(`is reopened after ${LISTEN_REOPEN_DELAYS_MS[0]} ms when the server ends it`, async () => {
    await connect([200, JSON.stringify({ jsonrpc: '2.0', id: 'ID', result: {} })]);
    await scripted.until(4); // initialize, server/discover, listen, listen again
    expect(scripted.methods).toEqual(['initialize', 'server/discover', 'subscriptions/listen', 'subscriptions/listen']);
  });

  it('is not reopened when the server does not have subscriptions/listen', async () => {
    await connect([404, JSON.stringify({ jsonrpc: '2.0', id: 'ID', error: { code: -32601, message: 'Method not found' } })]);
    await waitForLog(bridge, /could not be reopened/);
    expect(listens()).toBe(1);
  });
});
