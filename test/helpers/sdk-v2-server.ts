// The official v2 SDK at both ends of the bridge: a recording 2026-07-28 server on loopback, and a client that spawns the bridge.

import { EventEmitter, once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import {
  acceptedContent,
  createMcpHandler,
  fromJsonSchema,
  inputRequired,
  inputResponse,
  McpServer,
  type JsonSchemaType,
  type ServerNotifier,
} from '@modelcontextprotocol/server';
import { BIN } from './spawn-bridge.js';

/** The task board `tasks_get` reads from. */
export const TASKS: Readonly<Record<string, string>> = { 'T-1': 'Draft the release notes', 'T-2': 'Tag v1.0.0' };

/** The tool whose annotation breaks 2026-07-28 server/tools §x-mcp-header: it sits on a `number`. */
export const INVALID_TOOL = 'tasks_estimate';

/**
 * What the SDK v2 says about INVALID_TOOL: it warns on every tools/list that the tool "will be
 * excluded by conforming Streamable HTTP clients", which is the very case the tests check. Those
 * warnings land here, for a test to read, instead of on the test run's stderr; any other warning
 * goes on to the console as before.
 */
export const SDK_WARNINGS_ABOUT_INVALID_TOOL: string[] = [];
const consoleWarn = console.warn.bind(console);
console.warn = (...args: unknown[]) => {
  const [first] = args;
  if (typeof first === 'string' && first.startsWith(`[mcp-sdk] tool '${INVALID_TOOL}' carries an invalid x-mcp-header declaration`)) {
    SDK_WARNINGS_ABOUT_INVALID_TOOL.push(first);
    return;
  }
  consoleWarn(...args);
};

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body of a POST (the raw text when it is not JSON); undefined without a body. */
  body: any;
  /** performance.now() when the request arrived. */
  receivedAt: number;
  /** Resolves with performance.now() when the response was sent or its connection closed, whichever came first. */
  closed: Promise<number>;
  /** When it closed, once it has. */
  readonly closedAt: number | undefined;
  /** True once the response was sent completely; false when the client went away first. */
  readonly completed: boolean;
  /** SSE comment frames (keep-alives) written to the response so far. */
  readonly comments: number;
}

export interface SdkV2Server {
  /** The MCP endpoint, http://127.0.0.1:<port>/mcp. */
  url: string;
  /** Every HTTP request that reached the server, in arrival order. */
  requests: RecordedRequest[];
  /** Publishes change events to the open subscriptions/listen streams. */
  notify: ServerNotifier;
  /** How many times `slow_task` has started. */
  readonly slowCalls: number;
  /**
   * Resolves with the first defined value of `probe`, evaluated now and after every change the
   * server sees (a request arriving or closing, a comment written, a slow call starting).
   */
  until<T>(probe: () => T | undefined): Promise<T>;
  close(): Promise<void>;
}

export interface SdkV2ServerOptions {
  /** The bearer token the server accepts; anything else gets 401. */
  token: string;
  /** SSE comment keep-alive interval; 0 = none (default 0, so silence is really silence). */
  keepAliveMs?: number;
  /** createMcpHandler's response shaping for modern exchanges (default 'auto'). */
  responseMode?: 'auto' | 'sse' | 'json';
  /** How 2025-era traffic is served: 'reject' (default, a 2026-07-28-only server) or 'stateless' (dual-era). */
  legacy?: 'reject' | 'stateless';
  /**
   * Refuses a 2025 `initialize` in front of the SDK the way other 2026-07-28-only servers do:
   * 'not-found' (404 with -32601) or 'header-mismatch' (400 with -32020). Default: the SDK's own -32022.
   */
  refuseInitialize?: 'not-found' | 'header-mismatch';
  /**
   * A tools/call of one of these tools is answered with the body its function makes (JSON), in front
   * of the SDK: a server's reply no SDK would build. A `StalledBody` is the start of a body that then
   * never ends (with the length it declares, or chunked).
   */
  rawToolReplies?: Record<string, (id: unknown) => Buffer | string | StalledBody>;
  /** The raw tool replies come as one event of a text/event-stream body instead. */
  rawRepliesAsEvents?: boolean;
}

/** The first bytes of a JSON body whose rest never comes. */
export interface StalledBody {
  start: Buffer | string;
  /** The Content-Length declared; without it the body is chunked. */
  contentLength?: number | undefined;
}

/** The tool that asks the client to confirm (an MRTR elicitation) before it answers. */
export const CONFIRM_TOOL = 'tasks_confirm';
/** The requestState `tasks_confirm` mints; the retry must echo it exactly (2026-07-28 mrtr). */
export const CONFIRM_STATE = 'confirm-state-1';

/** A property mirrored into `Mcp-Param-{header}`; the annotation is outside JSON Schema's own vocabulary. */
function mirrored(type: 'string' | 'integer' | 'boolean' | 'number', header: string): JsonSchemaType {
  return { type, 'x-mcp-header': header } as JsonSchemaType;
}

function createTaskServer(onSlowCall: () => void): McpServer {
  const server = new McpServer(
    { name: 'fenbs-mcp-test-v2', version: '2.0.0' },
    { capabilities: { tools: { listChanged: true } }, instructions: 'Ask for tasks by reference.' },
  );
  server.registerTool(
    CONFIRM_TOOL,
    {
      description: 'Asks the client to confirm (2026-07-28 MRTR elicitation), then answers with what it said',
      inputSchema: fromJsonSchema<{ ref: string }>({ type: 'object', properties: { ref: { type: 'string' } }, required: ['ref'] }),
    },
    ({ ref }, ctx) => {
      const confirmed = acceptedContent(ctx.mcpReq.inputResponses, 'confirm');
      if (confirmed === undefined) {
        return inputRequired({
          inputRequests: {
            confirm: inputRequired.elicit({
              message: `Close ${ref}?`,
              requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
            }),
          },
          requestState: CONFIRM_STATE,
        });
      }
      const state = ctx.mcpReq.requestState<string>();
      return { content: [{ type: 'text', text: `${ref} confirmed=${String(confirmed.ok)} state=${String(state)}` }] };
    },
  );
  server.registerTool('tasks_ask_forever', { description: 'Answers every round with input_required (state only)' }, () =>
    inputRequired({ requestState: 'again' }),
  );
  server.registerTool('tasks_ask_url', { description: 'Asks for a URL-mode elicitation' }, () =>
    inputRequired({ inputRequests: { visit: inputRequired.elicitUrl({ message: 'Sign in', url: 'https://example.com/sign-in' }) } }),
  );
  server.registerTool('tasks_ask_sampling', { description: 'Asks the client model for a summary' }, (ctx) => {
    const view = inputResponse(ctx.mcpReq.inputResponses, 'summary');
    if (view.kind !== 'sampling') {
      return inputRequired({
        inputRequests: {
          summary: inputRequired.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: 'Summarise T-1' } }], maxTokens: 50 }),
        },
      });
    }
    return { content: [{ type: 'text', text: `summary: ${JSON.stringify(view.result.content)}` }] };
  });
  server.registerTool('tasks_ask_roots', { description: 'Asks for the client roots' }, (ctx) => {
    const roots = ctx.mcpReq.inputResponses?.roots as { roots?: { uri: string }[] } | undefined;
    if (roots === undefined) return inputRequired({ inputRequests: { roots: inputRequired.listRoots() } });
    return { content: [{ type: 'text', text: (roots.roots ?? []).map((root) => root.uri).join(',') }] };
  });
  server.registerTool(
    'tasks_get',
    {
      description: 'Reads one task by its reference',
      // 2026-07-28 Streamable HTTP §Custom Headers from Tool Parameters: mirrored into Mcp-Param-Task-Ref.
      inputSchema: fromJsonSchema<{ ref: string }>({
        type: 'object',
        properties: { ref: mirrored('string', 'Task-Ref') },
        required: ['ref'],
      }),
    },
    ({ ref }) => {
      const title = TASKS[ref];
      return title === undefined ? { content: [{ type: 'text', text: `no task ${ref}` }], isError: true } : { content: [{ type: 'text', text: title }] };
    },
  );
  server.registerTool(
    'tasks_find',
    {
      description: 'Finds tasks; every argument is mirrored into a header',
      inputSchema: fromJsonSchema<{ assignee: string; limit: number; open: boolean; label?: string }>({
        type: 'object',
        properties: {
          assignee: mirrored('string', 'Assignee'),
          limit: mirrored('integer', 'Limit'),
          open: mirrored('boolean', 'Open-Only'),
          label: mirrored('string', 'Label'),
        },
        required: ['assignee', 'limit', 'open'],
      }),
    },
    ({ assignee, limit, open, label }) => ({ content: [{ type: 'text', text: JSON.stringify({ assignee, limit, open, label: label ?? null }) }] }),
  );
  server.registerTool(
    INVALID_TOOL,
    {
      description: 'Its annotation is on a number, which x-mcp-header does not allow',
      inputSchema: fromJsonSchema<{ hours: number }>({ type: 'object', properties: { hours: mirrored('number', 'Hours') } }),
    },
    () => ({ content: [{ type: 'text', text: 'estimated' }] }),
  );
  server.registerTool(
    'tasks_import',
    {
      description: 'Imports count tasks, one progress notification per task and the result right behind the last one',
      inputSchema: fromJsonSchema<{ count: number }>({
        type: 'object',
        properties: { count: { type: 'integer', minimum: 1, maximum: 100 } },
        required: ['count'],
      }),
    },
    async ({ count }, ctx) => {
      const progressToken = ctx.mcpReq._meta?.progressToken;
      for (let done = 1; done <= count; done++) {
        if (progressToken !== undefined) await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken, progress: done, total: count } });
      }
      return { content: [{ type: 'text', text: `imported ${count} tasks` }] };
    },
  );
  server.registerTool(
    'slow_task',
    {
      description: 'Works for ms milliseconds (progress first when asked), or until the call is cancelled',
      inputSchema: fromJsonSchema<{ ms: number }>({ type: 'object', properties: { ms: { type: 'integer', minimum: 0 } }, required: ['ms'] }),
    },
    async ({ ms }, ctx) => {
      onSlowCall();
      const progressToken = ctx.mcpReq._meta?.progressToken;
      if (progressToken !== undefined) {
        await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken, progress: 0, total: 1 } });
      }
      const signal = ctx.mcpReq.signal;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
      });
      return { content: [{ type: 'text', text: signal.aborted ? 'cancelled' : `worked ${ms} ms` }] };
    },
  );
  return server;
}

function toHeaders(incoming: IncomingHttpHeaders): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
  }
  return headers;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function parseBody(bytes: Buffer): unknown {
  if (bytes.length === 0) return undefined;
  const text = bytes.toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** Writes a web Response to a node response, flushing each chunk as it comes (SSE must not be buffered). */
async function writeResponse(response: Response, res: ServerResponse, onChunk: (chunk: Uint8Array) => void): Promise<void> {
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.flushHeaders();
  if (response.body === null) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  res.once('close', () => void reader.cancel().catch(() => undefined));
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (res.destroyed) return;
    res.write(value);
    onChunk(value);
  }
  res.end();
}

/** Starts the server on 127.0.0.1:0 at /mcp: modern-only (legacy traffic is refused), no sessions. */
export async function startSdkV2Server(options: SdkV2ServerOptions): Promise<SdkV2Server> {
  const requests: RecordedRequest[] = [];
  const changes = new EventEmitter().setMaxListeners(0);
  const changed = () => changes.emit('change');
  let slowCalls = 0;
  const handler = createMcpHandler(() => createTaskServer(() => (slowCalls++, changed())), {
    legacy: options.legacy ?? 'reject',
    keepAliveMs: options.keepAliveMs ?? 0,
    responseMode: options.responseMode ?? 'auto',
  });

  const record = (req: IncomingMessage, res: ServerResponse, body: unknown) => {
    let completed = false;
    let closedAt: number | undefined;
    let comments = 0;
    const closed = new Promise<number>((resolve) => {
      const done = () => {
        if (closedAt !== undefined) return;
        completed = res.writableFinished;
        closedAt = performance.now();
        resolve(closedAt);
        changed();
      };
      // Node emits it on the response when the connection goes away before the end, too.
      res.once('close', done);
    });
    requests.push({
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      body,
      receivedAt: performance.now(),
      closed,
      get closedAt() {
        return closedAt;
      },
      get completed() {
        return completed;
      },
      get comments() {
        return comments;
      },
    });
    changed();
    // An SSE comment frame starts with a colon (WHATWG event stream §Interpretation).
    return (chunk: Uint8Array) => {
      if (chunk[0] !== 0x3a) return;
      comments++;
      changed();
    };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const bytes = await readBody(req);
    const onChunk = record(req, res, parseBody(bytes));
    if (new URL(req.url ?? '/', 'http://127.0.0.1').pathname !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    if (req.headers.authorization !== `Bearer ${options.token}`) {
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer error="invalid_token"' }).end('{"error":"invalid_token"}');
      return;
    }
    const parsed = parseBody(bytes) as { id?: unknown; method?: unknown } | undefined;
    if (options.refuseInitialize !== undefined && parsed?.method === 'initialize') {
      const [status, code, message] =
        options.refuseInitialize === 'not-found'
          ? [404, -32601, 'Method not found: initialize']
          : [400, -32020, 'Header mismatch: MCP-Protocol-Version is required'];
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: parsed.id ?? null, error: { code, message } }));
      return;
    }
    const tool = (parsed as { params?: { name?: unknown } } | undefined)?.params?.name;
    const raw = parsed?.method === 'tools/call' && typeof tool === 'string' ? options.rawToolReplies?.[tool] : undefined;
    if (raw !== undefined) {
      const body = raw(parsed!.id);
      if ((typeof body === 'string' || Buffer.isBuffer(body)) && options.rawRepliesAsEvents === true) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('event: message\ndata: ');
        res.end(Buffer.concat([Buffer.from(body), Buffer.from('\n\n')]));
        return;
      }
      if (typeof body === 'string' || Buffer.isBuffer(body)) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(body);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', ...(body.contentLength === undefined ? {} : { 'content-length': body.contentLength }) });
      res.write(body.start);
      return;
    }
    // The client going away is the cancellation (2026-07-28 transports §Cancellation): the SDK
    // aborts the handler when the request's signal fires.
    const disconnected = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) disconnected.abort();
    });
    const method = req.method ?? 'GET';
    const request = new Request(new URL(req.url ?? '/', 'http://127.0.0.1'), {
      method,
      headers: toHeaders(req.headers),
      signal: disconnected.signal,
      ...(method === 'GET' || method === 'HEAD' ? {} : { body: bytes }),
    });
    await writeResponse(await handler.fetch(request), res, onChunk);
  };

  const http = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  const { port } = http.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/mcp`,
    requests,
    notify: handler.notify,
    get slowCalls() {
      return slowCalls;
    },
    until<T>(probe: () => T | undefined): Promise<T> {
      return new Promise<T>((resolve) => {
        const check = () => {
          const value = probe();
          if (value === undefined) return;
          changes.off('change', check);
          resolve(value);
        };
        changes.on('change', check);
        check();
      });
    },
    async close() {
      await handler.close();
      http.closeAllConnections();
      http.close();
      await once(http, 'close');
    },
  };
}

export interface BridgedClient {
  client: Client;
  /** Errors the client reported outside any call (e.g. a response for an id it never sent). */
  errors: Error[];
  /** Resolves with the first parsed stderr log line of the bridge (past or future) that matches. */
  stderrLine(predicate: (entry: any) => boolean): Promise<any>;
  /** Every parsed stderr log line of the bridge so far. */
  logEntries(): any[];
  close(): Promise<void>;
}

/**
 * Connects a v2 client to `url` exactly as a desktop host does: its stdio transport spawns the
 * bridge, and version negotiation ('auto': a server/discover probe) must reach 2026-07-28.
 */
export async function connectThroughBridge(url: string, token: string, bridgeArgs: string[] = []): Promise<BridgedClient> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, '--url', url, ...bridgeArgs],
    env: { PATH: process.env.PATH ?? '', FENBS_TOKEN: token, FENBS_MCP_LOG_LEVEL: 'warn' },
    stderr: 'pipe',
  });
  const entries: any[] = [];
  const waiters: { predicate: (entry: any) => boolean; resolve: (entry: any) => void }[] = [];
  let partial = '';
  (transport.stderr as Readable).setEncoding('utf8').on('data', (chunk: string) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      let entry: unknown;
      try {
        entry = JSON.parse(line);
      } catch {
        continue;
      }
      entries.push(entry);
      for (const waiter of waiters.filter((w) => w.predicate(entry))) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(entry);
      }
    }
  });
  const client = new Client({ name: 'fenbs-mcp-tests', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  const errors: Error[] = [];
  client.onerror = (error) => void errors.push(error);
  await client.connect(transport);
  return {
    client,
    errors,
    stderrLine(predicate) {
      const seen = entries.find(predicate);
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve) => waiters.push({ predicate, resolve }));
    },
    logEntries: () => [...entries],
    close: () => client.close(),
  };
}
