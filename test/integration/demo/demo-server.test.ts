import { readFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { request } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_BODY_BYTES, RESOURCES_PAGE_SIZE, startDemoServer } from '../../../src/demo/demo-server.js';
import type { DemoServer } from '../../../src/demo/demo-server.js';

const ACCEPT_BOTH = 'application/json, text/event-stream';
const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'demo-server-test', version: '1.0.0' } },
};

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

async function post(url: URL, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const response = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: ACCEPT_BOTH, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.statusCode, headers: response.headers, text: await response.body.text() };
}

/** The data of each `event: message` in an SSE body; enough for the demo's one-line events. */
function parseEvents(text: string) {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const lines = block.split('\n');
      expect(lines[0]).toBe('event: message');
      return JSON.parse(
        lines
          .filter((line) => line.startsWith('data: '))
          .map((line) => line.slice(6))
          .join('\n'),
      );
    });
}

/** The one JSON-RPC message of a reply, whichever of the two reply modes the server chose. */
function messageOf(reply: Reply) {
  if (reply.headers['content-type'] === 'text/event-stream') return parseEvents(reply.text).at(-1);
  expect(reply.headers['content-type']).toBe('application/json');
  return JSON.parse(reply.text);
}

async function openSession(url: URL, headers: Record<string, string> = {}): Promise<Record<string, string>> {
  const reply = await post(url, INITIALIZE, headers);
  const sessionId = reply.headers['mcp-session-id'];
  if (typeof sessionId !== 'string') throw new Error(`initialize gave no session id (status ${reply.status})`);
  return { ...headers, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' };
}

function callTool(id: number, name: string, args: object = {}, meta?: object) {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) } };
}

describe('startDemoServer', () => {
  let demo: DemoServer;
  let session: Record<string, string>;

  beforeEach(async () => {
    demo = await startDemoServer();
    session = await openSession(demo.url);
  });

  afterEach(async () => {
    await demo.close();
  });

  it('listens on loopback at the /mcp endpoint', () => {
    expect(demo.url.hostname).toBe('127.0.0.1');
    expect(demo.url.pathname).toBe('/mcp');
    expect(Number(demo.url.port)).toBeGreaterThan(0);
  });

  it('answers initialize with a session id, the requested protocol version and the demo server info', async () => {
    const reply = await post(demo.url, INITIALIZE);
    expect(reply.status).toBe(200);
    expect(reply.headers['mcp-session-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(reply.headers['mcp-session-id']).not.toBe(session['mcp-session-id']);
    const { result } = messageOf(reply);
    expect(result.protocolVersion).toBe('2025-06-18');
    expect(result.capabilities).toEqual({ tools: { listChanged: false }, resources: {}, prompts: {}, logging: {} });
    expect(result.serverInfo).toEqual({ name: 'fenbs-demo', version: '1.0.0' });
    expect(typeof result.instructions).toBe('string');
  });

  it('offers 2025-06-18 when initialize asks for a version it does not speak', async () => {
    // 2025-06-18 lifecycle §Version Negotiation: answer with another version the server supports.
    const reply = await post(demo.url, { ...INITIALIZE, params: { ...INITIALIZE.params, protocolVersion: '2024-11-05' } });
    expect(messageOf(reply).result.protocolVersion).toBe('2025-06-18');
    const newer = await post(demo.url, { ...INITIALIZE, params: { ...INITIALIZE.params, protocolVersion: '2025-11-25' } });
    expect(messageOf(newer).result.protocolVersion).toBe('2025-11-25');
  });

  it('lists the four task tools with JSON Schemas for their arguments', async () => {
    const reply = await post(demo.url, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, session);
    const { tools } = messageOf(reply).result;
    expect(tools.map((tool: { name: string }) => tool.name)).toEqual(['tasks_list', 'tasks_get', 'tasks_create', 'tasks_import']);
    const byName = Object.fromEntries(tools.map((tool: { name: string }) => [tool.name, tool]));
    expect(byName.tasks_get.inputSchema.required).toEqual(['ref']);
    expect(byName.tasks_create.inputSchema.required).toEqual(['title']);
    expect(byName.tasks_import.inputSchema.properties.count).toMatchObject({ type: 'integer', minimum: 1, maximum: 50, default: 5 });
    expect(byName.tasks_list.inputSchema.properties.status.enum).toEqual(['open', 'done']);
  });

  it('answers ping with an empty result', async () => {
    const reply = await post(demo.url, { jsonrpc: '2.0', id: 'p', method: 'ping' }, session);
    expect(messageOf(reply)).toEqual({ jsonrpc: '2.0', id: 'p', result: {} });
  });

  it('shows task T-1 as "Draft the release notes" in a JSON reply', async () => {
    const reply = await post(demo.url, callTool(3, 'tasks_get', { ref: 'T-1' }), session);
    expect(reply.headers['content-type']).toBe('application/json');
    const { result } = messageOf(reply);
    expect(result.content[0].text).toContain('Draft the release notes');
    expect(result.structuredContent).toEqual({ ref: 'T-1', title: 'Draft the release notes', status: 'open', assignee: 'claude' });
  });

  it('reports an unknown task as a tool error, not a protocol error', async () => {
    const { result } = messageOf(await post(demo.url, callTool(3, 'tasks_get', { ref: 'T-99' }), session));
    expect(result.isError).toBe(true);
    expect(result.content[0].text).toContain('T-99');
  });

  it('numbers created tasks from T-4 within each session', async () => {
    const first = messageOf(await post(demo.url, callTool(4, 'tasks_create', { title: 'Try fenbs-mcp' }), session));
    expect(first.result.structuredContent).toEqual({ ref: 'T-4', title: 'Try fenbs-mcp', status: 'open' });
    const second = messageOf(await post(demo.url, callTool(5, 'tasks_create', { title: 'Again', assignee: 'ada' }), session));
    expect(second.result.structuredContent.ref).toBe('T-5');
    const other = await openSession(demo.url);
    const fresh = messageOf(await post(demo.url, callTool(4, 'tasks_create', { title: 'Elsewhere' }), other));
    expect(fresh.result.structuredContent.ref).toBe('T-4');
  });

  it('lists tasks on an event stream, filtered by status', async () => {
    const reply = await post(demo.url, callTool(6, 'tasks_list', { status: 'done' }), session);
    expect(reply.headers['content-type']).toBe('text/event-stream');
    expect(reply.headers['cache-control']).toBe('no-cache');
    const events = parseEvents(reply.text);
    expect(events).toHaveLength(1);
    expect(events[0].id).toBe(6);
    expect(events[0].result.structuredContent.tasks.map((task: { ref: string }) => task.ref)).toEqual(['T-3']);
  });

  it('streams one progress notification per imported task before the result', async () => {
    const reply = await post(demo.url, callTool(5, 'tasks_import', { count: 3 }, { progressToken: 'import-1' }), session);
    expect(reply.headers['content-type']).toBe('text/event-stream');
    const events = parseEvents(reply.text);
    expect(events.slice(0, 3)).toEqual(
      [1, 2, 3].map((progress) => ({
        jsonrpc: '2.0',
        method: 'notifications/progress',
        params: { progressToken: 'import-1', progress, total: 3, message: `imported ${progress} of 3` },
      })),
    );
    expect(events).toHaveLength(4);
    expect(events[3].id).toBe(5);
    expect(events[3].result.structuredContent).toEqual({ imported: ['T-4', 'T-5', 'T-6'] });
  });

  it('imports without progress notifications when the call has no progress token', async () => {
    const events = parseEvents((await post(demo.url, callTool(5, 'tasks_import', { count: 2 }), session)).text);
    expect(events).toHaveLength(1);
    expect(events[0].result.structuredContent.imported).toEqual(['T-4', 'T-5']);
  });

  it('rejects an import count outside 1..50 with -32602', async () => {
    const { error } = messageOf(await post(demo.url, callTool(5, 'tasks_import', { count: 51 }), session));
    expect(error.code).toBe(-32602);
  });

  it('answers an unknown tool with -32602 and an unknown method with -32601', async () => {
    expect(messageOf(await post(demo.url, callTool(7, 'tasks_delete'), session)).error.code).toBe(-32602);
    const unknown = messageOf(await post(demo.url, { jsonrpc: '2.0', id: 8, method: 'completion/complete' }, session));
    expect(unknown).toMatchObject({ id: 8, error: { code: -32601 } });
  });

  it('accepts a notification with 202 and an empty body', async () => {
    // 2025-06-18 transports §Sending Messages item 4.
    const reply = await post(demo.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, session);
    expect(reply).toMatchObject({ status: 202, text: '' });
  });

  it('refuses a request without a session id with 400', async () => {
    const reply = await post(demo.url, { jsonrpc: '2.0', id: 2, method: 'tools/list' });
    expect(reply.status).toBe(400);
    expect(JSON.parse(reply.text)).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32000, message: 'Bad Request: Mcp-Session-Id header is required' },
    });
  });

  it('refuses an unknown session id with 404', async () => {
    // 2025-06-18 transports §Session Management item 3.
    const reply = await post(demo.url, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, { ...session, 'mcp-session-id': 'no-such-session' });
    expect(reply.status).toBe(404);
    expect(JSON.parse(reply.text).error).toEqual({ code: -32001, message: 'Session not found' });
  });

  it('refuses an unsupported MCP-Protocol-Version header with 400', async () => {
    const reply = await post(demo.url, { jsonrpc: '2.0', id: 2, method: 'ping' }, { ...session, 'mcp-protocol-version': '1999-01-01' });
    expect(reply.status).toBe(400);
  });

  it('refuses a POST that does not accept both JSON and event streams with 406', async () => {
    const reply = await post(demo.url, INITIALIZE, { accept: 'application/json' });
    expect(reply.status).toBe(406);
  });

  it('refuses a body that is not application/json with 415', async () => {
    const reply = await post(demo.url, INITIALIZE, { 'content-type': 'text/plain' });
    expect(reply.status).toBe(415);
  });

  it('refuses invalid JSON with -32700 and a batch with -32600', async () => {
    const invalid = await post(demo.url, '{"jsonrpc":', session);
    expect(invalid.status).toBe(400);
    expect(JSON.parse(invalid.text).error.code).toBe(-32700);
    const batch = await post(demo.url, [{ jsonrpc: '2.0', id: 1, method: 'ping' }], session);
    expect(batch.status).toBe(400);
    expect(JSON.parse(batch.text)).toMatchObject({ id: null, error: { code: -32600 } });
  });

  it('refuses a body larger than MAX_BODY_BYTES with 413', async () => {
    const reply = await post(demo.url, `"${'x'.repeat(MAX_BODY_BYTES)}"`, session);
    expect(reply.status).toBe(413);
  });

  it('refuses a browser Origin that is not loopback with 403', async () => {
    const reply = await post(demo.url, INITIALIZE, { origin: 'https://attacker.example' });
    expect(reply.status).toBe(403);
    expect((await post(demo.url, INITIALIZE, { origin: 'http://localhost:6274' })).status).toBe(200);
  });

  it('answers GET with 405 because it offers no listen stream', async () => {
    const response = await request(demo.url, { method: 'GET', headers: { accept: 'text/event-stream', ...session } });
    await response.body.dump();
    expect(response.statusCode).toBe(405);
  });

  it('forgets the session on DELETE', async () => {
    const deleted = await request(demo.url, { method: 'DELETE', headers: session });
    await deleted.body.dump();
    expect(deleted.statusCode).toBe(200);
    const after = await post(demo.url, { jsonrpc: '2.0', id: 2, method: 'ping' }, session);
    expect(after.status).toBe(404);
  });

  it('answers each line of examples/session.jsonl', async () => {
    const lines = (await readFile(new URL('../../../examples/session.jsonl', import.meta.url), 'utf8')).trim().split('\n');
    const [first, ...rest] = lines.map((line) => JSON.parse(line));
    const exampleSession = await openSession(demo.url);
    expect(first.method).toBe('initialize');
    const answered: number[] = [];
    for (const message of rest) {
      const reply = await post(demo.url, message, exampleSession);
      if (message.id === undefined) expect(reply.status).toBe(202);
      else {
        const answer = messageOf(reply);
        expect(answer.error).toBeUndefined();
        expect(answer.result.isError).toBeUndefined();
        answered.push(answer.id);
      }
    }
    expect(answered).toEqual([2, 3, 4, 5, 6]);
  });

  it('resolves close() promptly while an event stream is still open', async () => {
    const response = await request(demo.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: ACCEPT_BOTH, ...session },
      body: JSON.stringify(callTool(5, 'tasks_import', { count: 50 }, { progressToken: 'slow' })),
    });
    expect(response.headers['content-type']).toBe('text/event-stream');
    const started = performance.now();
    await demo.close();
    // The import alone would take 50 × 50 ms; close() must not wait for it.
    expect(performance.now() - started).toBeLessThan(1000);
    await expect(response.body.text()).rejects.toThrow();
  });
});

describe('startDemoServer with a token', () => {
  let demo: DemoServer;

  beforeEach(async () => {
    demo = await startDemoServer({ token: 'demo-secret' });
  });

  afterEach(async () => {
    await demo.close();
  });

  it('refuses a request without the bearer token with 401 and a Bearer challenge', async () => {
    // 2025-06-18 authorization; RFC 6750 §3.1 leaves out the error code when no credentials were sent.
    const missing = await post(demo.url, INITIALIZE);
    expect(missing.status).toBe(401);
    expect(missing.headers['www-authenticate']).toBe('Bearer realm="fenbs-demo"');
    const wrong = await post(demo.url, INITIALIZE, { authorization: 'Bearer not-the-secret' });
    expect(wrong.status).toBe(401);
    expect(wrong.headers['www-authenticate']).toBe('Bearer realm="fenbs-demo", error="invalid_token"');
  });

  it('serves a client that sends the bearer token on every request', async () => {
    const auth = { authorization: 'Bearer demo-secret' };
    const session = await openSession(demo.url, auth);
    const reply = await post(demo.url, callTool(3, 'tasks_get', { ref: 'T-2' }), session);
    expect(messageOf(reply).result.content[0].text).toContain('Review the bridge README');
    const deleted = await request(demo.url, { method: 'DELETE', headers: { 'mcp-session-id': session['mcp-session-id']! } });
    await deleted.body.dump();
    expect(deleted.statusCode).toBe(401);
  });
});

describe('startDemoServer with the official SDK client', () => {
  it('serves a whole session to @modelcontextprotocol/sdk, output schemas and progress included', async () => {
    const demo = await startDemoServer();
    const client = new Client({ name: 'demo-server-test', version: '1.0.0' });
    try {
      await client.connect(new StreamableHTTPClientTransport(demo.url));
      expect(client.getServerVersion()).toEqual({ name: 'fenbs-demo', version: '1.0.0' });
      const { tools } = await client.listTools();
      expect(tools).toHaveLength(4);
      // The SDK client checks structuredContent against each tool's outputSchema.
      const listed = await client.callTool({ name: 'tasks_list', arguments: { status: 'open' } });
      expect(listed.structuredContent).toMatchObject({ tasks: [{ ref: 'T-1' }, { ref: 'T-2' }] });
      const progress: number[] = [];
      const imported = await client.callTool({ name: 'tasks_import', arguments: { count: 2 } }, undefined, {
        onprogress: ({ progress: step }) => progress.push(step),
      });
      expect(progress).toEqual([1, 2]);
      expect(imported.structuredContent).toEqual({ imported: ['T-4', 'T-5'] });
    } finally {
      await client.close();
      await demo.close();
    }
  });

  it('serves resources in pages and prompts with arguments, in the shapes the SDK client checks', async () => {
    const demo = await startDemoServer();
    const client = new Client({ name: 'demo-server-test', version: '1.0.0' });
    try {
      await client.connect(new StreamableHTTPClientTransport(demo.url));
      const first = await client.listResources();
      expect(first.resources).toHaveLength(RESOURCES_PAGE_SIZE);
      expect(first.nextCursor).toBeTypeOf('string');
      const second = await client.listResources({ cursor: first.nextCursor! });
      expect(second.nextCursor).toBeUndefined();
      expect([...first.resources, ...second.resources].map((resource) => resource.uri)).toEqual(['demo://board', 'demo://board/open', 'demo://board.json']);
      await expect(client.listResources({ cursor: 'nonsense' })).rejects.toThrow(/unknown cursor/);
      const open = await client.readResource({ uri: 'demo://board/open' });
      expect(open.contents).toEqual([
        {
          uri: 'demo://board/open',
          mimeType: 'text/plain',
          text: 'T-1 [open] Draft the release notes (assignee: claude)\nT-2 [open] Review the bridge README',
        },
      ]);
      const json = await client.readResource({ uri: 'demo://board.json' });
      expect(JSON.parse((json.contents[0] as { text: string }).text).tasks).toHaveLength(3);
      expect((await client.readResource({ uri: 'demo://board' })).contents[0]).toMatchObject({ text: expect.stringContaining('T-3 [done]') });
      await expect(client.readResource({ uri: 'demo://nowhere' })).rejects.toThrow(/Resource not found/);
      const { prompts } = await client.listPrompts();
      expect(prompts.map((prompt) => prompt.name)).toEqual(['summarize_board', 'plan_task']);
      const summary = await client.getPrompt({ name: 'summarize_board' });
      expect(summary.messages[0]).toMatchObject({ role: 'user', content: { type: 'text', text: expect.stringContaining('T-2 [open]') } });
      const plan = await client.getPrompt({ name: 'plan_task', arguments: { ref: 'T-2', style: 'detailed' } });
      expect(plan.messages[0]!.content).toMatchObject({ text: expect.stringMatching(/^Write a detailed step-by-step plan/) });
      await expect(client.getPrompt({ name: 'plan_task', arguments: { ref: 'T-99' } })).rejects.toThrow(/no task T-99/);
      await expect(client.getPrompt({ name: 'plan_task', arguments: {} })).rejects.toThrow(/ref must be/);
      await expect(client.getPrompt({ name: 'nope' })).rejects.toThrow(/Unknown prompt/);
    } finally {
      await client.close();
      await demo.close();
    }
  });
});
