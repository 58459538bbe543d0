// A loopback server whose every exchange is scripted by its own handler, and the dispatcher that reaches it.

import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll } from 'vitest';
import type { Dispatcher } from '../../src/http/undici-parts.js';
import { createDispatcher } from '../../src/http/dispatcher.js';
import { sendHttp, type HttpExchange, type HttpMethod } from '../../src/http/send.js';

export type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export interface RouteServer {
  /** Registers `handler` under a fresh path and sends one request there with the bridge's own sendHttp. */
  exchange(handler: Handler, options?: { method?: HttpMethod; signal?: AbortSignal; onArrived?: (exchange: HttpExchange) => void }): Promise<HttpExchange>;
}

/** Starts the server before the file's tests and stops it after them. */
export function useRouteServer(): RouteServer {
  const routes = new Map<string, Handler>();
  let server: Server;
  let base: string;
  let dispatcher: Dispatcher;
  let paths = 0;
  beforeAll(async () => {
    server = createServer((req, res) => {
      const handler = routes.get(req.url ?? '');
      if (handler === undefined) res.writeHead(404).end('no route');
      else handler(req, res);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    dispatcher = createDispatcher({ connectTimeoutMs: 5_000, env: {} });
  });
  afterAll(async () => {
    await dispatcher.close();
    server.closeAllConnections();
    server.close();
  });
  return {
    exchange(handler, { method = 'POST', signal = new AbortController().signal, onArrived } = {}) {
      const path = `/r${++paths}`;
      routes.set(path, handler);
      const body = method === 'POST' ? { body: '{}', headers: { 'content-type': 'application/json' } } : { headers: {} };
      return sendHttp(dispatcher, { method, url: new URL(path, base), signal, onArrived, ...body });
    },
  };
}
