// A real MCP server built on the official v1 SDK, on loopback, recording every request it receives.

import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod/v4';

/** The tool whose name needs the Base64 sentinel in `Mcp-Name` (non-ASCII, a space). */
export const GREETING_TOOL = 'Grüße tool';

export interface RecordedRequest {
  method: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body of a POST; undefined for GET and DELETE. */
  body: any;
}

export interface SdkV1Server {
  /** The MCP endpoint, http://127.0.0.1:<port>/mcp. */
  url: string;
  /** Every HTTP request that reached the server, authorised or not, in arrival order. */
  requests: RecordedRequest[];
  /** Every session id the server minted, in order. */
  sessionIds: string[];
  /** Session ids the idle reaper (`reapIdleMs`) ended, in order. */
  reaped: string[];
  close(): Promise<void>;
}

export interface SdkV1ServerOptions {
  /** `json`: enableJsonResponse; `sse`: every POST reply is an event stream. */
  mode: 'json' | 'sse';
  /** The bearer token the server accepts; anything else gets 401. */
  token: string;
  /**
   * Ends a session no POST reached for this long, in ms, as servers and gateways that reap idle
   * sessions do: its id is then answered 404. An open GET listen stream does not keep it.
   */
  reapIdleMs?: number;
  /** Answers `ping` with -32601 (method not found) instead of the SDK's empty result. */
  refusePing?: boolean;
  /** Adds the tool `whoami`, which answers with the id of the session that serves the call. */
  whoami?: boolean;
}

/** The two tools every SDK v1 test server has: `echo`, and `slow`, which reports progress as it waits. */
export function registerEchoAndSlow(server: McpServer): void {
  server.registerTool('echo', { description: 'Returns its text', inputSchema: { text: z.string() } }, ({ text }) => ({
    content: [{ type: 'text', text }],
  }));
  server.registerTool(
    'slow',
    { description: 'Waits ms milliseconds, reporting progress', inputSchema: { ms: z.number().int().min(0), steps: z.number().int().min(1).default(3) } },
    async ({ ms, steps }, extra) => {
      const progressToken = extra._meta?.progressToken;
      // Progress first, then the step's wait: the result never shares a chunk with the last progress.
      // (The v1 Client handles notifications a microtask late, so a progress read together with the
      // result would find its handler already gone.)
      for (let step = 1; step <= steps; step++) {
        if (progressToken !== undefined) {
          await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: step, total: steps } });
        }
        await new Promise((resolve) => setTimeout(resolve, ms / steps));
      }
      return { content: [{ type: 'text', text: `waited ${ms} ms` }] };
    },
  );
}

function createMcpServer(options: { whoami?: boolean | undefined } = {}): McpServer {
  const server = new McpServer({ name: 'fenbs-mcp-test-v1', version: '1.0.0' });
  registerEchoAndSlow(server);
  if (options.whoami === true) {
    server.registerTool('whoami', { description: 'Names the session that answers' }, (extra) => ({
      content: [{ type: 'text', text: extra.sessionId ?? '(no session)' }],
    }));
  }
  // The name is outside the SEP-986 character set on purpose (the bridge must carry it in Mcp-Name
  // with the Base64 sentinel); the SDK says so on stderr at every registration, which the test run
  // has no use for, so that one warning stays inside this call.
  const warn = console.warn;
  console.warn = () => undefined;
  try {
    server.registerTool(GREETING_TOOL, { description: 'Greets in German' }, () => ({ content: [{ type: 'text', text: 'Grüße!' }] }));
  } finally {
    console.warn = warn;
  }
  return server;
}

async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    return text === '' ? undefined : (JSON.parse(text) as unknown);
  } catch {
    return text;
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

/** Starts the server on 127.0.0.1:0 at /mcp, stateful (one session per initialize). */
export async function startSdkV1Server(options: SdkV1ServerOptions): Promise<SdkV1Server> {
  const requests: RecordedRequest[] = [];
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const sessionIds: string[] = [];
  const reaped: string[] = [];
  const lastPost = new Map<string, number>();
  const reapIdleMs = options.reapIdleMs;
  const reaper =
    reapIdleMs === undefined
      ? undefined
      : setInterval(
          () => {
            for (const [id, transport] of sessions) {
              if (performance.now() - (lastPost.get(id) ?? 0) < reapIdleMs) continue;
              sessions.delete(id);
              reaped.push(id);
              void transport.close();
            }
          },
          Math.max(10, reapIdleMs / 10),
        );
  reaper?.unref();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = req.method === 'POST' ? await readJsonBody(req) : undefined;
    requests.push({ method: req.method ?? '', headers: req.headers, body });
    const postedTo = req.headers['mcp-session-id'];
    if (req.method === 'POST' && typeof postedTo === 'string' && sessions.has(postedTo)) lastPost.set(postedTo, performance.now());
    if (options.refusePing === true && req.method === 'POST' && (body as { method?: unknown } | undefined)?.method === 'ping') {
      sendJson(res, 200, { jsonrpc: '2.0', id: (body as { id?: unknown }).id, error: { code: -32601, message: 'Method not found' } });
      return;
    }
    if (new URL(req.url ?? '/', 'http://127.0.0.1').pathname !== '/mcp') {
      sendJson(res, 404, { error: 'not found' });
      return;
    }
    // Authorization §Token Requirements: a missing or wrong token is a 401 with a challenge.
    if (req.headers.authorization !== `Bearer ${options.token}`) {
      sendJson(res, 401, { error: 'invalid_token' }, { 'www-authenticate': 'Bearer error="invalid_token"' });
      return;
    }
    const sessionId = req.headers['mcp-session-id'];
    const existing = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
    if (existing !== undefined) {
      await existing.handleRequest(req, res, body);
      return;
    }
    if (sessionId === undefined && req.method === 'POST' && isInitializeRequest(body)) {
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: options.mode === 'json',
        onsessioninitialized: (id) => {
          sessions.set(id, transport);
          sessionIds.push(id);
          lastPost.set(id, performance.now());
        },
      });
      transport.onclose = () => {
        if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
      };
      await createMcpServer({ whoami: options.whoami }).connect(transport);
      await transport.handleRequest(req, res, body);
      return;
    }
    if (sessionId !== undefined) {
      sendJson(res, 404, { jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null });
      return;
    }
    sendJson(res, 400, { jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: No valid session ID provided' }, id: null });
  };

  const http = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { jsonrpc: '2.0', error: { code: -32603, message: String(error) }, id: null });
      else res.destroy();
    });
  });
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  const { port } = http.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/mcp`,
    requests,
    sessionIds,
    reaped,
    async close() {
      if (reaper !== undefined) clearInterval(reaper);
      await Promise.all([...sessions.values()].map((transport) => transport.close()));
      http.close();
      http.closeAllConnections();
      await once(http, 'close');
    },
  };
}
