// A real MCP server on the official v1 SDK's deprecated HTTP+SSE transport (2024-11-05), on loopback, recording every request.

import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { registerEchoAndSlow } from './sdk-v1-server.js';

export interface RecordedSseRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body of a POST to the message endpoint. */
  body: any;
}

export interface SdkV1SseServer {
  /** The URL a user is given: `<origin>/sse`, or the origin's `/` in `base` layout. */
  url: string;
  origin: string;
  requests: RecordedSseRequest[];
  /** Every client message the server received, in order (what the SDK's transport handed to the server). */
  received: any[];
  /** Ends every open event stream, as a server restart would. */
  dropStreams(): void;
  close(): Promise<void>;
}

export interface SdkV1SseServerOptions {
  /**
   * `sse`: GET /sse streams, POST /messages takes messages, a POST to /sse is a plain 404 (an
   * Express app's "Cannot POST"); `base`: GET / streams, POST / is a plain 404, messages go to /messages.
   */
  layout: 'sse' | 'base';
  /** The bearer token the server accepts; anything else gets 401. */
  token: string;
}

function createMcpServer(): McpServer {
  const server = new McpServer({ name: 'fenbs-mcp-test-v1-sse', version: '1.0.0' }, { capabilities: { logging: {} } });
  registerEchoAndSlow(server);
  // A server→client request answered by the client through the message endpoint.
  server.registerTool('roots', { description: "Lists the client's roots" }, async () => {
    const { roots } = await server.server.listRoots();
    return { content: [{ type: 'text', text: roots.map((root) => root.uri).join(',') }] };
  });
  // A server→client notification on the stream.
  server.registerTool('notify', { description: 'Sends a log message, then answers' }, async (extra) => {
    await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data: 'hello from the server' } });
    return { content: [{ type: 'text', text: 'notified' }] };
  });
  return server;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Starts the server on 127.0.0.1:0. */
export async function startSdkV1SseServer(options: SdkV1SseServerOptions): Promise<SdkV1SseServer> {
  const requests: RecordedSseRequest[] = [];
  const received: any[] = [];
  const transports = new Map<string, SSEServerTransport>();
  const streamPath = options.layout === 'sse' ? '/sse' : '/';

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const text = req.method === 'POST' ? await readBody(req) : '';
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      body = text;
    }
    requests.push({ method: req.method ?? '', path: `${url.pathname}${url.search}`, headers: req.headers, body });
    if (req.headers.authorization !== `Bearer ${options.token}`) {
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer error="invalid_token"' }).end('{"error":"invalid_token"}');
      return;
    }
    if (req.method === 'GET' && url.pathname === streamPath) {
      const transport = new SSEServerTransport('/messages', res);
      transports.set(transport.sessionId, transport);
      transport.onclose = () => transports.delete(transport.sessionId);
      const server = createMcpServer();
      const onmessage = (message: unknown) => received.push(message);
      await server.connect(transport);
      // Watched beside the server's own handler, which connect() installed.
      const handler = transport.onmessage;
      transport.onmessage = (message, extra) => {
        onmessage(message);
        handler?.(message, extra);
      };
      return;
    }
    if (req.method === 'POST' && url.pathname === '/messages') {
      const transport = transports.get(url.searchParams.get('sessionId') ?? '');
      if (transport === undefined) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('Session not found');
        return;
      }
      await transport.handlePostMessage(req, res, body);
      return;
    }
    // What an Express app answers for a route it does not have.
    res.writeHead(404, { 'content-type': 'text/html; charset=utf-8' }).end(`<pre>Cannot ${req.method} ${url.pathname}</pre>`);
  };

  const http = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  const origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  return {
    url: `${origin}${options.layout === 'sse' ? '/sse' : '/'}`,
    origin,
    requests,
    received,
    dropStreams() {
      for (const transport of transports.values()) void transport.close();
    },
    async close() {
      await Promise.all([...transports.values()].map((transport) => transport.close()));
      http.close();
      http.closeAllConnections();
      await once(http, 'close');
    },
  };
}
