// Shared suite, 2026-07-28 traffic: headers from each body, x-mcp-header, pass-through and modern errors.

import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { INVALID_TOOL, SDK_WARNINGS_ABOUT_INVALID_TOOL, startSdkV2Server, type SdkV2Server } from '../helpers/sdk-v2-server.js';
import { expectCleanEnd, type BridgeMode, type RunningBridge } from '../helpers/bridge-mode.js';
import { initializedNotification, initializeRequest } from '../helpers/spawn-bridge.js';

const TOKEN = 'modern-e2e-token';
const MODERN = '2026-07-28';

/** A request as a 2026-07-28 client writes it: the era is the `_meta` protocol-version claim. */
function modern(id: string | number, method: string, params: Record<string, unknown> = {}, meta: Record<string, unknown> = {}) {
  const envelope = { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {}, ...meta };
  return { jsonrpc: '2.0', id, method, params: { ...params, _meta: envelope } };
}

const sentinel = (text: string) => `=?base64?${Buffer.from(text, 'utf8').toString('base64')}?=`;

/** Defines the suite against bridges started by `mode`. */
export function defineModernSuite(mode: BridgeMode): void {
  describe('the v2 client through the bridge to a v2 server at 2026-07-28', () => {
    let server: SdkV2Server;
    beforeEach(async () => {
      server = await startSdkV2Server({ token: TOKEN });
    });
    afterEach(async () => {
      await server.close();
    });

    const callsTo = (tool: string) => server.requests.filter((r) => r.body?.method === 'tools/call' && r.body.params?.name === tool);

    it('reaches 2026-07-28 and calls tasks_get with MCP-Protocol-Version, Mcp-Method, Mcp-Name and Mcp-Param-Task-Ref from the body', async () => {
      const bridged = await mode.connect(server.url, TOKEN);
      try {
        expect(bridged.client.getNegotiatedProtocolVersion()).toBe(MODERN);
        await bridged.client.listTools();
        const result = await bridged.client.callTool({ name: 'tasks_get', arguments: { ref: 'T-1' } });
        expect(result.content).toEqual([{ type: 'text', text: 'Draft the release notes' }]);
      } finally {
        await bridged.close();
      }
      // One POST: the SDK server checks every mirrored header and would have answered -32020.
      const calls = callsTo('tasks_get');
      expect(calls).toHaveLength(1);
      expect(calls[0]!.headers).toMatchObject({
        'mcp-protocol-version': MODERN,
        'mcp-method': 'tools/call',
        'mcp-name': 'tasks_get',
        'mcp-param-task-ref': 'T-1',
      });
    });

    it('mirrors each annotated argument by its type, Base64-encodes a non-ASCII one and leaves out an absent one', async () => {
      const bridged = await mode.connect(server.url, TOKEN);
      try {
        await bridged.client.listTools();
        const result = await bridged.client.callTool({ name: 'tasks_find', arguments: { assignee: 'Zoë Ångström', limit: 3, open: false } });
        expect(result.content).toEqual([{ type: 'text', text: JSON.stringify({ assignee: 'Zoë Ångström', limit: 3, open: false, label: null }) }]);
      } finally {
        await bridged.close();
      }
      // 2026-07-28 Streamable HTTP §Value Encoding: non-ASCII → sentinel; integer → decimal; boolean → true/false.
      const calls = callsTo('tasks_find');
      expect(calls).toHaveLength(1);
      expect(calls[0]!.headers).toMatchObject({ 'mcp-param-assignee': sentinel('Zoë Ångström'), 'mcp-param-limit': '3', 'mcp-param-open-only': 'false' });
      expect(calls[0]!.headers).not.toHaveProperty('mcp-param-label');
    });

    it('removes the tool with an invalid x-mcp-header from the list the client receives, with a warning naming it', async () => {
      // The server does advertise it (asked directly, not through the bridge).
      const direct = await fetch(server.url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${TOKEN}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': MODERN,
          'mcp-method': 'tools/list',
        },
        body: JSON.stringify(modern('direct', 'tools/list')),
      });
      const advertised = ((await direct.json()) as { result: { tools: { name: string }[] } }).result.tools.map((tool) => tool.name);
      expect(advertised).toContain(INVALID_TOOL);
      // The SDK itself says a conforming client drops it (kept by the helper, off the test run's stderr).
      expect(SDK_WARNINGS_ABOUT_INVALID_TOOL.at(-1)).toMatch(/will be excluded by conforming Streamable HTTP clients/);

      const bridged = await mode.connect(server.url, TOKEN);
      try {
        // The v2 client filters only on HTTP, never on stdio: what it lists is what the bridge wrote.
        const { tools } = await bridged.client.listTools();
        expect(tools.map((tool) => tool.name)).toEqual(advertised.filter((name) => name !== INVALID_TOOL));
        const warning = await bridged.stderrLine((entry) => entry.tool === INVALID_TOOL);
        expect(warning.reason).toMatch(/"number"/);
        // Exactly one warning names the dropped tool.
        expect(bridged.logEntries().filter((entry) => JSON.stringify(entry).includes(INVALID_TOOL))).toEqual([
          expect.objectContaining({ tool: INVALID_TOOL, reason: expect.stringMatching(/"number"/) }),
        ]);
      } finally {
        await bridged.close();
      }
    });

    it("answers the server's -32020 by refreshing tools/list with a private request and retrying the call once", async () => {
      const bridged = await mode.connect(server.url, TOKEN);
      try {
        // No tools/list first: the bridge knows no schema, so the first POST lacks Mcp-Param-Task-Ref.
        const result = await bridged.client.callTool({ name: 'tasks_get', arguments: { ref: 'T-2' } });
        expect(result.content).toEqual([{ type: 'text', text: 'Tag v1.0.0' }]);
        // The private tools/list answer never reached the client (it would report an unknown id).
        expect(bridged.errors).toEqual([]);
      } finally {
        await bridged.close();
      }
      const posts = server.requests.filter((r) => r.body?.method !== 'server/discover');
      expect(posts.map((r) => r.body.method)).toEqual(['tools/call', 'tools/list', 'tools/call']);
      expect(posts[0]!.headers).not.toHaveProperty('mcp-param-task-ref');
      expect(posts[1]!.body.id).toMatch(/^fenbs-mcp-/);
      expect(posts[1]!.body.params._meta['io.modelcontextprotocol/protocolVersion']).toBe(MODERN);
      expect(posts[2]!.headers['mcp-param-task-ref']).toBe('T-2');
    });

    it('sends no session id, Last-Event-ID, GET or DELETE to the v2 server over a whole session', async () => {
      const bridged = await mode.connect(server.url, TOKEN);
      await bridged.client.listTools();
      await bridged.client.callTool({ name: 'tasks_get', arguments: { ref: 'T-1' } });
      const subscription = await bridged.client.listen({ toolsListChanged: true });
      await subscription.close();
      await bridged.close(); // stdin closes and the bridge exits: the moment a legacy bridge would DELETE
      expect(server.requests.map((r) => r.body?.method)).toEqual(['server/discover', 'tools/list', 'tools/call', 'subscriptions/listen']);
      for (const request of server.requests) {
        expect(request.method).toBe('POST');
        expect(request.headers).not.toHaveProperty('mcp-session-id');
        expect(request.headers).not.toHaveProperty('last-event-id');
      }
    });
  });

  interface ScriptedRequest {
    method: string;
    headers: IncomingHttpHeaders;
    body: any;
  }

  /** A hand-written server for answers the SDK server cannot be made to give; records every request. */
  async function startScriptedServer(answer: (request: ScriptedRequest, res: ServerResponse) => void) {
    const requests: ScriptedRequest[] = [];
    const http = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const request = { method: req.method ?? '', headers: req.headers, body: text === '' ? undefined : JSON.parse(text) };
        requests.push(request);
        if (request.method === 'POST') answer(request, res);
        else res.writeHead(405).end();
      });
    });
    http.listen(0, '127.0.0.1');
    await once(http, 'listening');
    return {
      url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
      requests,
      posts: (method: string) => requests.filter((r) => r.body?.method === method),
      async close() {
        http.closeAllConnections();
        http.close();
        await once(http, 'close');
      },
    };
  }

  function sendJson(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  }

  const resultFor = (id: unknown, result: Record<string, unknown>) => ({ jsonrpc: '2.0', id, result: { resultType: 'complete', ...result } });
  const errorFor = (id: unknown, error: Record<string, unknown>) => ({ jsonrpc: '2.0', id, error });
  /** The exact line the bridge writes for a message: it re-serialises, and JSON keeps key order. */
  const lineOf = (message: unknown) => JSON.stringify(message);

  describe('modern traffic through the bridge to a scripted server', () => {
    let server: Awaited<ReturnType<typeof startScriptedServer>>;
    let bridge: RunningBridge;
    afterEach(async () => {
      bridge.kill();
      await server.close();
    });
    const start = async (answer: Parameters<typeof startScriptedServer>[0]) => {
      server = await startScriptedServer(answer);
      bridge = mode.start(['--url', server.url], { FENBS_TOKEN: TOKEN });
    };
    /** Ends stdin and waits until the bridge has ended cleanly and its stderr is fully read. */
    const stop = async () => {
      bridge.end();
      await expectCleanEnd(bridge, 'input-ended');
    };

    it("forwards the server's -32020 as the answer when refreshing tools/list fails, and does not retry the call", async () => {
      const mismatch = { code: -32020, message: 'Bad Request: header mismatch', data: { mismatch: { header: 'Mcp-Param-Region' } } };
      await start((request, res) => {
        if (request.body.method === 'tools/call') sendJson(res, 400, errorFor(request.body.id, mismatch));
        else res.writeHead(500, { 'content-type': 'text/plain' }).end('tools/list is down');
      });
      bridge.send(modern(1, 'tools/call', { name: 'search', arguments: { region: 'eu' } }));
      expect(await bridge.reply(1)).toEqual(errorFor(1, mismatch));
      await bridge.waitForLog(/refreshing tools\/list after a -32020 failed/);
      expect(server.requests.map((r) => r.body.method)).toEqual(['tools/call', 'tools/list']);
      await stop();
    });

    it('refuses a redirect without a Location, saying so', async () => {
      await start((_request, res) => res.writeHead(302).end());
      bridge.send(modern(1, 'tools/list'));
      const reply = await bridge.reply(1);
      expect(reply.error.data).toMatchObject({ bridgeCode: 'REDIRECT_REFUSED', status: 302 });
      expect(reply.error.data).not.toHaveProperty('location');
      expect(reply.error.message).toContain('(no Location)');
      await stop();
    });

    it('takes every header from its own body: the version of each request, Mcp-Name from params.name or params.uri', async () => {
      await start((request, res) => sendJson(res, 200, resultFor(request.body.id, {})));
      bridge.send(modern(1, 'tools/list'));
      bridge.send(modern(2, 'prompts/get', { name: 'release-notes' }));
      bridge.send(modern(3, 'resources/read', { uri: 'file:///notes/Grüße.md' }));
      bridge.send(modern(4, 'tools/call', { name: 'tasks_get', arguments: {} }, { 'io.modelcontextprotocol/protocolVersion': '2027-03-15' }));
      await Promise.all([1, 2, 3, 4].map((id) => bridge.reply(id)));
      const headersOf = (id: number) => server.requests.find((r) => r.body?.id === id)!.headers;
      expect(headersOf(1)).toMatchObject({ 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/list' });
      expect(headersOf(1)).not.toHaveProperty('mcp-name');
      expect(headersOf(2)).toMatchObject({ 'mcp-method': 'prompts/get', 'mcp-name': 'release-notes' });
      expect(headersOf(3)).toMatchObject({ 'mcp-method': 'resources/read', 'mcp-name': sentinel('file:///notes/Grüße.md') });
      // Per request, never from connection state (2026-07-28 transports §Protocol Version Header).
      expect(headersOf(4)).toMatchObject({ 'mcp-protocol-version': '2027-03-15', 'mcp-name': 'tasks_get' });
    });

    it('remembers annotations from every tools/list page, drops an invalid tool from its page, and leaves out null arguments', async () => {
      const pageTwo = [
        {
          name: 'notes_search',
          inputSchema: {
            type: 'object',
            properties: {
              filter: { type: 'object', properties: { owner: { type: 'string', 'x-mcp-header': 'Owner' } } },
              count: { type: 'integer', 'x-mcp-header': 'Count' },
              note: { type: 'string', 'x-mcp-header': 'Note' },
              raw: { type: 'string', 'x-mcp-header': 'Raw' },
            },
          },
        },
        { name: 'tags_set', inputSchema: { type: 'object', properties: { tags: { type: 'array', items: { type: 'string', 'x-mcp-header': 'Tag' } } } } },
      ];
      await start((request, res) => {
        const { id, method, params } = request.body;
        if (method !== 'tools/list') sendJson(res, 200, resultFor(id, { content: [] }));
        else if (params.cursor === undefined)
          sendJson(res, 200, resultFor(id, { tools: [{ name: 'tasks_get', inputSchema: { type: 'object' } }], nextCursor: 'page-2' }));
        else sendJson(res, 200, resultFor(id, { tools: pageTwo }));
      });
      bridge.send(modern(1, 'tools/list'));
      await bridge.reply(1);
      bridge.send(modern(2, 'tools/list', { cursor: 'page-2' }));
      expect((await bridge.reply(2)).result.tools.map((tool: { name: string }) => tool.name)).toEqual(['notes_search']);
      bridge.send(modern(3, 'tools/call', { name: 'notes_search', arguments: { filter: { owner: 'ana' }, count: 0, note: null, raw: '=?base64?abc?=' } }));
      await bridge.reply(3);
      const call = server.posts('tools/call')[0]!;
      // A plain value that looks like the sentinel is encoded too (§Value Encoding); null is left out.
      expect(call.headers).toMatchObject({ 'mcp-param-owner': 'ana', 'mcp-param-count': '0', 'mcp-param-raw': sentinel('=?base64?abc?=') });
      expect(call.headers).not.toHaveProperty('mcp-param-note');
      await stop();
      expect(bridge.stderr()).toMatch(/tags_set/);
    });

    it('posts every server/discover and writes each answer verbatim, never from a cache', async () => {
      const discovered = {
        supportedVersions: [MODERN],
        capabilities: { tools: {} },
        ttlMs: 600_000,
        cacheScope: 'public',
        _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'scripted', version: '1' } },
      };
      await start((request, res) => sendJson(res, 200, resultFor(request.body.id, discovered)));
      bridge.send(modern('d-1', 'server/discover'));
      expect(await bridge.reply('d-1')).toEqual(resultFor('d-1', discovered));
      bridge.send(modern('d-2', 'server/discover'));
      await bridge.reply('d-2');
      expect(server.posts('server/discover')).toHaveLength(2);
      expect(bridge.lines).toEqual([lineOf(resultFor('d-1', discovered)), lineOf(resultFor('d-2', discovered))]);
    });

    it('forwards an input_required result verbatim and posts each MRTR retry as written, with its new id', async () => {
      const inputRequired = {
        resultType: 'input_required',
        inputRequests: {
          confirm: {
            method: 'elicitation/create',
            params: { mode: 'form', message: 'Publish T-1?', requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } } } },
          },
        },
        requestState: 'c3RhdGU6IHJvdW5kIDE=',
      };
      const published = (id: unknown) => resultFor(id, { content: [{ type: 'text', text: 'published' }] });
      await start((request, res) => {
        const { id, params } = request.body;
        sendJson(res, 200, params.inputResponses === undefined ? { jsonrpc: '2.0', id, result: inputRequired } : published(id));
      });
      const call = { name: 'tasks_publish', arguments: { ref: 'T-1' } };
      bridge.send(modern('r-1', 'tools/call', call));
      await bridge.reply('r-1');
      expect(bridge.lines).toEqual([lineOf({ jsonrpc: '2.0', id: 'r-1', result: inputRequired })]);
      // 2026-07-28 MRTR: each retry is a new request; the same retry twice is posted twice.
      const retry = (id: string) =>
        modern(id, 'tools/call', {
          ...call,
          inputResponses: { confirm: { action: 'accept', content: { ok: true } } },
          requestState: inputRequired.requestState,
        });
      bridge.send(retry('r-2'));
      bridge.send(retry('r-3'));
      expect(await bridge.reply('r-2')).toEqual(published('r-2'));
      expect(await bridge.reply('r-3')).toEqual(published('r-3'));
      expect(server.posts('tools/call').map((r) => r.body)).toEqual([modern('r-1', 'tools/call', call), retry('r-2'), retry('r-3')]);
    });

    it.each([
      [
        '-32020 HeaderMismatch for prompts/get',
        'prompts/get',
        { name: 'weekly' },
        400,
        { code: -32020, message: 'Bad Request: the request headers and body disagree', data: { mismatch: { header: 'Mcp-Name' } } },
      ],
      [
        '-32021 MissingRequiredClientCapability',
        'tools/call',
        { name: 'tasks_publish', arguments: {} },
        400,
        { code: -32021, message: 'Missing required client capability', data: { requiredCapabilities: { elicitation: {} } } },
      ],
      [
        '-32022 UnsupportedProtocolVersion',
        'server/discover',
        {},
        400,
        { code: -32022, message: 'Unsupported protocol version', data: { supported: ['2026-07-28'], requested: MODERN } },
      ],
      ['-32601 with 404', 'tasks/archive', {}, 404, { code: -32601, message: 'Method not found' }],
    ])('forwards %s unchanged and sends nothing more', async (_name, method, params, status, error) => {
      await start((request, res) => sendJson(res, status, errorFor(request.body.id, error)));
      bridge.send(modern(7, method, params));
      await bridge.reply(7);
      expect(bridge.lines).toEqual([lineOf(errorFor(7, error))]);
      expect(server.requests).toHaveLength(1);
    });

    const taskSchema = { type: 'object', properties: { ref: { type: 'string', 'x-mcp-header': 'Task-Ref' } } };
    const mismatch = (attempt: number) => ({ code: -32020, message: 'Bad Request: the request headers and body disagree', data: { attempt } });

    it('forwards a second -32020 unchanged after one private refresh and one retry', async () => {
      let attempts = 0;
      await start((request, res) => {
        const { id, method } = request.body;
        if (method === 'tools/list') sendJson(res, 200, resultFor(id, { tools: [{ name: 'tasks_get', inputSchema: taskSchema }] }));
        else sendJson(res, 400, errorFor(id, mismatch(++attempts)));
      });
      bridge.send(modern(1, 'tools/call', { name: 'tasks_get', arguments: { ref: 'T-1' } }));
      await bridge.reply(1);
      expect(bridge.lines).toEqual([lineOf(errorFor(1, mismatch(2)))]);
      expect(server.requests.map((r) => r.body.method)).toEqual(['tools/call', 'tools/list', 'tools/call']);
      expect(server.requests[2]!.headers['mcp-param-task-ref']).toBe('T-1');
    });

    it("forwards the server's -32020 unchanged when the private refresh of tools/list fails", async () => {
      await start((request, res) => {
        const { id, method } = request.body;
        if (method === 'tools/list') res.writeHead(503, { 'content-type': 'text/plain' }).end('down for maintenance');
        else sendJson(res, 400, errorFor(id, mismatch(1)));
      });
      bridge.send(modern(1, 'tools/call', { name: 'tasks_get', arguments: { ref: 'T-1' } }));
      await bridge.reply(1);
      // Modern errors pass through so the client can recover itself.
      expect(bridge.lines).toEqual([lineOf(errorFor(1, mismatch(1)))]);
      expect(server.requests.map((r) => r.body.method)).toEqual(['tools/call', 'tools/list']);
    });

    it('does not resume a cut modern stream with GET and Last-Event-ID, nor post it again: the id gets an error', async () => {
      const progress = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'p-1', progress: 1, total: 3 } };
      await start((_request, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(`id: ev-1\ndata: ${JSON.stringify(progress)}\n\n`);
      });
      bridge.send(modern(1, 'tools/call', { name: 'slow_task', arguments: {} }, { progressToken: 'p-1' }));
      // 2026-07-28 changelog major 9: a broken stream loses the request; the client re-issues it.
      expect((await bridge.reply(1)).error).toMatchObject({ code: -31007, data: { bridgeCode: 'REMOTE_STREAM_ENDED' } });
      expect(bridge.lines[0]).toBe(lineOf(progress));
      await stop();
      expect(server.requests.map((r) => r.method)).toEqual(['POST']);
      expect(server.requests[0]!.headers).not.toHaveProperty('last-event-id');
    });

    it('leaves the session id of an open legacy session off modern requests', async () => {
      await start((request, res) => {
        const { id, method } = request.body;
        if (method === 'initialize') {
          res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'legacy-session-1' });
          res.end(
            JSON.stringify({ jsonrpc: '2.0', id, result: { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 'scripted', version: '1' } } }),
          );
        } else if (id === undefined) res.writeHead(202).end();
        else sendJson(res, 200, resultFor(id, { tools: [] }));
      });
      bridge.send(initializeRequest(1));
      await bridge.reply(1); // the session id is taken before this reply is written
      bridge.send(initializedNotification);
      bridge.send(modern(2, 'tools/list'));
      await bridge.reply(2);
      const list = server.posts('tools/list')[0]!;
      expect(list.headers).toMatchObject({ 'mcp-protocol-version': MODERN });
      expect(list.headers).not.toHaveProperty('mcp-session-id');
    });
  });
}
