// A stateful SDK v1 MCP server on 127.0.0.1 that logs every HTTP exchange as JSON lines on stdout.
// Runs as its own process, started (and restarted on the same port) by sdk-v1-full-server.ts.
// Settings come from the environment: V1_PORT, V1_EXPIRY (404 | 400), V1_RESUMABLE (1).
//
// V1_EXPIRY=400 answers an unknown session id with 400 "Bad Request: No valid session ID provided",
// as the SDK's own examples do; the default is the spec's 404 (transports §Session Management 3).
// V1_RESUMABLE=1 adds an event store and `retry: 150`, so streams carry ids and `poll` can cut its own.

import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as z from 'zod/v4';
import { completable } from '@modelcontextprotocol/sdk/server/completable.js';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { StreamableHTTPServerTransport, type EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest, type JSONRPCMessage, type LoggingLevel, type ServerNotification, type ServerRequest } from '@modelcontextprotocol/sdk/types.js';

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

const PORT = Number(process.env.V1_PORT ?? '0');
const EXPIRY_STATUS = process.env.V1_EXPIRY === '400' ? 400 : 404;
const RESUMABLE = process.env.V1_RESUMABLE === '1';
/** The `retry:` a resumable server asks for, in ms (2025-11-25 polling). */
const RETRY_MS = 150;
const FRUITS = ['apple', 'apricot', 'banana'];
const NAMES = ['Ada', 'Alan', 'Grace'];
const BLOB = Buffer.from([0, 1, 2, 250, 251, 255]).toString('base64');

const log = (entry: Record<string, unknown>) => process.stdout.write(`${JSON.stringify({ at: Date.now(), ...entry })}\n`);
const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });
const pause = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });

/** Event ids name their stream ("<stream>#<n>"), so a resumed GET finds the stream it continues. */
function createEventStore(): EventStore {
  const events: { id: string; streamId: string; message: JSONRPCMessage }[] = [];
  return {
    storeEvent: (streamId, message) => {
      const id = `${streamId}#${events.length}`;
      events.push({ id, streamId, message });
      return Promise.resolve(id);
    },
    getStreamIdForEventId: (eventId) => Promise.resolve(events.find((event) => event.id === eventId)?.streamId),
    replayEventsAfter: async (lastEventId, { send }) => {
      const index = events.findIndex((event) => event.id === lastEventId);
      const streamId = events[index]!.streamId;
      for (const event of events.slice(index + 1)) if (event.streamId === streamId) await send(event.id, event.message);
      return streamId;
    },
  };
}

function createMcpServer(): McpServer {
  const server = new McpServer({ name: 'sdk-v1-full', version: '1.0.0' }, { capabilities: { logging: {} } });
  const progress = async (extra: Extra, value: number, total: number, message: string) => {
    const progressToken = extra._meta?.progressToken;
    if (progressToken === undefined) return;
    await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: value, total, message } });
  };

  server.registerTool('echo', { description: 'Echoes its text', inputSchema: { text: z.string() } }, ({ text: value }) => text(value));
  server.registerTool('progress', { description: 'Reports progress', inputSchema: { steps: z.number().int() } }, async ({ steps }, extra) => {
    for (let step = 1; step <= steps; step++) await progress(extra, step, steps, `step ${step}`);
    return text(`did ${steps} steps`);
  });
  server.registerTool('ask', { description: 'Elicits a colour, then samples with it' }, async (extra) => {
    // Tied to this request: both travel on its POST stream.
    const related = { relatedRequestId: extra.requestId };
    const answer = await server.server.elicitInput(
      { message: 'Pick a colour', requestedSchema: { type: 'object', properties: { color: { type: 'string' } }, required: ['color'] } },
      related,
    );
    const color = String(answer.content?.color);
    const sampled = await server.server.createMessage(
      { messages: [{ role: 'user', content: { type: 'text', text: `Name a ${color} fruit` } }], maxTokens: 20 },
      related,
    );
    const said = sampled.content.type === 'text' ? sampled.content.text : sampled.content.type;
    return text(`${answer.action}:${color} -> ${sampled.model}: ${said}`);
  });
  server.registerTool('roots', { description: 'Lists the client roots' }, async (extra) => {
    const { roots } = await server.server.listRoots(undefined, { relatedRequestId: extra.requestId });
    return text(JSON.stringify(roots));
  });
  server.registerTool('announce', { description: 'Pings the client on the listen stream' }, async () => {
    // Not tied to any request, so it travels on the GET stream.
    await server.server.ping();
    return text('announced');
  });
  server.registerTool('log', { description: 'Logs at three levels on the listen stream, honouring logging/setLevel' }, async (extra) => {
    for (const level of ['debug', 'info', 'error'] satisfies LoggingLevel[]) {
      await server.sendLoggingMessage({ level, logger: 'listen', data: `${level} line` }, extra.sessionId);
    }
    await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', logger: 'request', data: 'on the request stream' } });
    return text('logged');
  });
  server.registerTool('slow', { description: 'Waits, unless cancelled', inputSchema: { ms: z.number().int() } }, async ({ ms }, extra) => {
    await progress(extra, 0, 1, 'started');
    await pause(ms, extra.signal);
    if (extra.signal.aborted) log({ ev: 'aborted', tool: 'slow', requestId: extra.requestId });
    return text('slept');
  });
  server.registerTool('poll', { description: 'Closes its own stream (2025-11-25 polling), then answers' }, async (extra) => {
    await progress(extra, 1, 2, 'before the cut');
    log({ ev: 'cut', requestId: extra.requestId });
    extra.closeSSEStream?.();
    await pause(100);
    await progress(extra, 2, 2, 'after the cut');
    return text('polled');
  });

  server.registerResource('note', 'memo://note', { mimeType: 'text/plain', description: 'A text resource' }, (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'a text resource' }],
  }));
  server.registerResource('bytes', 'memo://bytes', { mimeType: 'application/octet-stream', description: 'A blob resource' }, (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'application/octet-stream', blob: BLOB }],
  }));
  const items = new ResourceTemplate('memo://items/{name}', { list: undefined, complete: { name: (value) => FRUITS.filter((f) => f.startsWith(value)) } });
  server.registerResource('item', items, { mimeType: 'text/plain', description: 'One item' }, (uri, { name }) => ({
    contents: [{ uri: uri.href, mimeType: 'text/plain', text: `item ${String(name)}` }],
  }));
  server.registerPrompt(
    'greet',
    {
      description: 'A greeting',
      argsSchema: { name: completable(z.string(), (value) => NAMES.filter((n) => n.startsWith(value))), tone: z.string().optional() },
    },
    ({ name, tone }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Greet ${name}${tone === undefined ? '' : ` in a ${tone} tone`}` } }] }),
  );
  return server;
}

const sessions = new Map<string, StreamableHTTPServerTransport>();

function answerError(res: ServerResponse, status: number, code: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8');
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const session = req.headers['mcp-session-id'] as string | undefined;
  const body = req.method === 'POST' ? await readBody(req) : undefined;
  const message = (typeof body === 'object' && body !== null ? body : {}) as { method?: unknown; id?: unknown };
  const exchange = { http: req.method, session, rpc: message.method, id: message.id };
  log({ ev: 'request', ...exchange, headers: req.headers, body });
  // Logged when the status goes out: for a GET, the listen stream is registered by then.
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
  res.writeHead = (...args: unknown[]) => (log({ ev: 'headers', ...exchange, status: args[0] }), writeHead(...args));
  res.on('close', () => log({ ev: 'response', ...exchange, status: res.statusCode, finished: res.writableFinished }));
  const known = session === undefined ? undefined : sessions.get(session);
  if (known !== undefined) return known.handleRequest(req, res, body);
  if (session === undefined && req.method === 'POST' && isInitializeRequest(body)) {
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void sessions.set(id, transport),
      ...(RESUMABLE ? { eventStore: createEventStore(), retryInterval: RETRY_MS } : {}),
    });
    transport.onclose = () => void sessions.delete(transport.sessionId ?? '');
    await createMcpServer().connect(transport);
    return transport.handleRequest(req, res, body);
  }
  // An unknown session: 404 is the spec's answer, 400 what the SDK's own examples send.
  if (session !== undefined && EXPIRY_STATUS === 404) return answerError(res, 404, -32001, 'Session not found');
  answerError(res, 400, -32000, 'Bad Request: No valid session ID provided');
}

const http = createServer((req, res) => {
  handle(req, res).catch((error: unknown) => {
    log({ ev: 'error', message: String(error) });
    if (!res.headersSent) res.writeHead(500).end();
  });
});
http.listen(PORT, '127.0.0.1', () => log({ ev: 'listening', port: (http.address() as AddressInfo).port }));
