// A 2025-06-18 MCP server on loopback whose answers are scripted per method, recording every message it receives.

import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What a scripted method answers: a result, a JSON-RPC error, or messages on an event stream (the last one the response). */
export type Answer = { result: unknown } | { error: { code: number; message: string; data?: unknown } } | { stream: (id: unknown, params: any) => unknown[] };

export interface ScriptedMcpServer {
  url: string;
  /** Every JSON-RPC message POSTed, in arrival order. */
  received: any[];
  close(): Promise<void>;
}

export interface ScriptedMcpServerOptions {
  /** What `initialize` names as the server (default `{ name: 'scripted', version: '1.0.0' }`). */
  serverInfo?: unknown;
  /** What `initialize` names as the server's capabilities (default `{ tools: {} }`). */
  capabilities?: unknown;
  /** How `server/discover` is answered instead of the 404: some 2025 servers fail any method they do not know with a 500 page. */
  discover?: { status: number; contentType: string; body: string };
}

/**
 * `initialize` and notifications are answered for you (no session id); `server/discover` gets 404
 * like any 2025-era server; every other method answers from `script`, or -32601.
 */
export async function startScriptedMcpServer(
  script: Record<string, (params: any, id: unknown) => Answer>,
  options: ScriptedMcpServerOptions = {},
): Promise<ScriptedMcpServer> {
  const serverInfo = options.serverInfo ?? { name: 'scripted', version: '1.0.0' };
  const capabilities = options.capabilities ?? { tools: {} };
  const received: any[] = [];
  const send = (res: ServerResponse, status: number, body?: unknown) => {
    res.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' }).end(body === undefined ? undefined : JSON.stringify(body));
  };
  const http = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST') return send(res, 405);
      const message = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      received.push(message);
      const { id, method, params } = message;
      if (id === undefined || method === undefined) return send(res, 202);
      if (method === 'server/discover' && options.discover !== undefined) {
        return res.writeHead(options.discover.status, { 'content-type': options.discover.contentType }).end(options.discover.body);
      }
      if (method === 'server/discover') return send(res, 404, { jsonrpc: '2.0', id: null, error: { code: -32601, message: 'Method not found' } });
      if (method === 'initialize') {
        return send(res, 200, { jsonrpc: '2.0', id, result: { protocolVersion: '2025-06-18', capabilities, serverInfo } });
      }
      const handler = script[method];
      const answer: Answer = handler === undefined ? { error: { code: -32601, message: `Method not found: ${method}` } } : handler(params, id);
      if ('stream' in answer) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const item of answer.stream(id, params)) res.write(`event: message\ndata: ${JSON.stringify(item)}\n\n`);
        return res.end();
      }
      return send(res, 200, { jsonrpc: '2.0', id, ...answer });
    });
  });
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    received,
    async close() {
      http.closeAllConnections();
      http.close();
      await once(http, 'close');
    },
  };
}
