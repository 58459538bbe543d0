// The loopback redirect URI (RFC 8252 §7.3): one http://127.0.0.1:<port>/callback that waits for the authorization response.

import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const CALLBACK_PATH = '/callback';
/**
 * The most a request's line and headers may take before it is answered 431 and its connection
 * closed: Node's default, named so that NODE_OPTIONS=--max-http-header-size cannot raise it. A
 * callback with its code is a few KB; the browser's cookies for 127.0.0.1 (other local servers')
 * come with it, hence no less.
 */
export const MAX_CALLBACK_HEAD_BYTES = 16 * 1024;

const PAGE_DONE = '<!doctype html><meta charset="utf-8"><title>fenbs-mcp</title><p>Signed in. You can close this window and return to your application.</p>';
const PAGE_FAILED =
  '<!doctype html><meta charset="utf-8"><title>fenbs-mcp</title><p>Sign-in did not complete. You can close this window; your application shows the reason.</p>';

export interface CallbackServer {
  redirectUri: string;
  port: number;
  /** Resolves with the query of the first request to /callback carrying `state`. */
  response: Promise<URLSearchParams>;
  close(): Promise<void>;
}

/**
 * The query of `req` when it is the awaited callback: a GET of /callback in origin form (RFC 9112
 * §3.2.1) whose `state` is `state`. Any other process on this machine can reach the port, so
 * anything else (another path or method, no or another state, an absolute-form or `*` target,
 * text that is no URL) is not it.
 */
function callbackQuery(req: IncomingMessage, state: string): URLSearchParams | undefined {
  const target = req.url ?? '';
  if (req.method !== 'GET' || !target.startsWith('/') || !URL.canParse(target, 'http://127.0.0.1')) return undefined;
  const url = new URL(target, 'http://127.0.0.1');
  return url.host === '127.0.0.1' && url.pathname === CALLBACK_PATH && url.searchParams.get('state') === state ? url.searchParams : undefined;
}

function answer(res: ServerResponse, status: number, type: string, body: string): void {
  // Connection: close: the socket ends with this answer, and a request body is never read.
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', connection: 'close' }).end(body);
}

/**
 * Listens on 127.0.0.1 (never "localhost", which may resolve to another interface) on `port`
 * (0 = any free port). Only the first awaited callback counts; every other request gets 404 and
 * is otherwise ignored, so no other local process or stray page can end the sign-in or answer it
 * in the user's place without the state, nor replace an answer already given.
 */
export async function startCallbackServer(port: number, state: string): Promise<CallbackServer> {
  let deliver: ((params: URLSearchParams) => void) | undefined;
  const response = new Promise<URLSearchParams>((resolve) => (deliver = resolve));
  const server: Server = createServer({ maxHeaderSize: MAX_CALLBACK_HEAD_BYTES }, (req, res) => {
    const waiting = deliver;
    const params = waiting === undefined ? undefined : callbackQuery(req, state);
    if (waiting === undefined || params === undefined) {
      answer(res, 404, 'text/plain', 'not found');
      return;
    }
    deliver = undefined;
    const failed = params.has('error') || !params.has('code');
    answer(res, 200, 'text/html; charset=utf-8', failed ? PAGE_FAILED : PAGE_DONE);
    waiting(params);
  });
  server.listen(port, '127.0.0.1');
  await Promise.race([once(server, 'listening'), once(server, 'error').then(([error]) => Promise.reject(error as Error))]);
  // Listening: a later server error (accept failing for want of file descriptors) must not end the
  // process; the sign-in's own deadline ends the wait.
  /* c8 ignore next -- running out of file descriptors cannot be caused here without starving the test runner */
  server.on('error', () => undefined);
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
