// The loopback redirect URI (RFC 8252 §7.3): one http://127.0.0.1:<port>/callback that waits for the authorization response.

import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export const CALLBACK_PATH = '/callback';

const PAGE_DONE = '<!doctype html><meta charset="utf-8"><title>fenbs-mcp</title><p>Signed in. You can close this window and return to your application.</p>';
const PAGE_FAILED = '<!doctype html><meta charset="utf-8"><title>fenbs-mcp</title><p>Sign-in did not complete. You can close this window; your application shows the reason.</p>';

export interface CallbackServer {
  redirectUri: string;
  port: number;
  /** Resolves with the query of the first request to /callback carrying `state`. */
  response: Promise<URLSearchParams>;
  close(): Promise<void>;
}

/**
 * Listens on 127.0.0.1 (never "localhost", which may resolve to another interface) on `port`
 * (0 = any free port). Requests to other paths, or without the expected `state`, get 404 and are
 * otherwise ignored, so a stray page cannot end the sign-in.
 */
export async function startCallbackServer(port: number, state: string): Promise<CallbackServer> {
  let deliver: (params: URLSearchParams) => void = () => undefined;
  const response = new Promise<URLSearchParams>((resolve) => (deliver = resolve));
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method !== 'GET' || url.pathname !== CALLBACK_PATH || url.searchParams.get('state') !== state) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    const failed = url.searchParams.has('error') || !url.searchParams.has('code');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', connection: 'close' }).end(failed ? PAGE_FAILED : PAGE_DONE);
    deliver(url.searchParams);
  });
  server.listen(port, '127.0.0.1');
  await Promise.race([once(server, 'listening'), once(server, 'error').then(([error]) => Promise.reject(error as Error))]);
  const actual = (server.address() as AddressInfo).port;
  return {
    redirectUri: `http://127.0.0.1:${actual}${CALLBACK_PATH}`,
    port: actual,
    response,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
