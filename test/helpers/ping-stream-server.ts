// A 2025-06-18 server with a session that answers the first ping on an event stream carrying its own messages before the response.

import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The one session id the server mints. */
export const PING_STREAM_SESSION = 'ping-stream-session';

export interface PingStreamServerOptions {
  /** What the first ping's event stream carries before the ping's response, one event each. */
  beforeResponse: unknown[];
  /**
   * The id of a request in `beforeResponse` whose answer the server waits for: the ping's response
   * follows only once the client's response with this id has been POSTed, as a server that needs the
   * answer to go on does.
   */
  awaitAnswerTo?: string;
}

export interface PingStreamServer {
  url: string;
  /** Every JSON-RPC message POSTed, with its headers, in arrival order. */
  received: { message: any; headers: IncomingHttpHeaders }[];
  /** Resolves with the first message POSTed (so far or later) that `match` accepts. */
  waitForMessage(match: (message: any) => boolean): Promise<any>;
  close(): Promise<void>;
}

/**
 * Answers `initialize` with a session id, notifications and responses with 202, GET with 405 (no
 * listen stream), DELETE with 200; the first `ping` with an event stream (`beforeResponse`, then the
 * response) and every later one with a JSON result; any other method with -32601.
 */
export async function startPingStreamServer(options: PingStreamServerOptions): Promise<PingStreamServer> {
  const received: PingStreamServer['received'] = [];
  const waiters: { match: (message: any) => boolean; resolve: (message: any) => void }[] = [];
  const waitForMessage = (match: (message: any) => boolean): Promise<any> => {
    const found = received.find((r) => match(r.message));
    if (found !== undefined) return Promise.resolve(found.message);
    return new Promise((resolve) => waiters.push({ match, resolve }));
  };
  const record = (message: any, headers: IncomingHttpHeaders) => {
    received.push({ message, headers });
    for (const waiter of [...waiters]) {
      if (!waiter.match(message)) continue;
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve(message);
    }
  };
  const sendJson = (res: ServerResponse, body: unknown, headers: Record<string, string> = {}) =>
    res.writeHead(200, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
  let pings = 0;

  const streamPing = async (res: ServerResponse, id: unknown) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': PING_STREAM_SESSION });
    for (const message of options.beforeResponse) res.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
    const awaited = options.awaitAnswerTo;
    if (awaited !== undefined) await waitForMessage((m) => m.id === awaited && !('method' in m));
    res.end(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id, result: {} })}\n\n`);
  };

  const http = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method === 'GET') return void res.writeHead(405).end();
      if (req.method !== 'POST') return void res.writeHead(200).end();
      const message = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      record(message, req.headers);
      const { id, method } = message;
      if (id === undefined || method === undefined) return void res.writeHead(202).end();
      if (method === 'initialize') {
        const result = { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 'ping-stream', version: '1.0.0' } };
        return void sendJson(res, { jsonrpc: '2.0', id, result }, { 'mcp-session-id': PING_STREAM_SESSION });
      }
      if (method === 'ping' && ++pings === 1) return void streamPing(res, id);
      if (method === 'ping') return void sendJson(res, { jsonrpc: '2.0', id, result: {} });
      return void sendJson(res, { jsonrpc: '2.0', id, error: { code: -32601, message: `Method not found: ${method}` } });
    });
  });
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    received,
    waitForMessage,
    async close() {
      http.closeAllConnections();
      http.close();
      await once(http, 'close');
    },
  };
}
