// The fetch oauth4webapi calls: one request through the bridge's undici dispatcher, bounded in size and time.

import { allowInsecureRequests, customFetch } from 'oauth4webapi';
import type { Dispatcher } from '../undici-parts.js';
import { isLoopbackHost } from '../config.js';

/** The largest metadata, registration or token response read; real ones are a few KB. */
export const MAX_OAUTH_RESPONSE_BYTES = 1024 * 1024;
/** How long one request to the authorization server or a metadata URL may take. */
export const OAUTH_REQUEST_TIMEOUT_MS = 30_000;

/** Responses that by definition carry no body (the Response constructor refuses one for them). */
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

export interface OAuthHttp {
  /** Fetch-shaped: what oauth4webapi's `customFetch` takes, and what discovery uses for plain GETs. */
  fetch: (url: string, init: { method?: string; headers?: Record<string, string> | Headers; body?: string | URLSearchParams | null; signal?: AbortSignal }) => Promise<Response>;
  /** The options every oauth4webapi request function takes for `url`: this fetch, and plain http only where allowed. */
  options: (url: URL, signal?: AbortSignal) => { [customFetch]: OAuthHttp['fetch']; [allowInsecureRequests]: boolean; signal?: AbortSignal };
}

/**
 * Plain http:// is allowed for a loopback host (a local authorization server, RFC 8252 §8.3 keeps
 * loopback traffic on the machine) and when the user passed --allow-http; https:// otherwise, as
 * OAuth 2.1 §1.5 requires.
 */
export function createOAuthHttp(dispatcher: Dispatcher, allowHttp: boolean): OAuthHttp {
  const http: OAuthHttp = {
    fetch: async (url, init) => {
      const target = new URL(url);
      const signals = [AbortSignal.timeout(OAUTH_REQUEST_TIMEOUT_MS), ...(init.signal === undefined ? [] : [init.signal])];
      const headers: Record<string, string> = {};
      new Headers(init.headers).forEach((value, name) => (headers[name] = value));
      const body = init.body === undefined || init.body === null ? undefined : init.body.toString();
      const response = await dispatcher.request({
        origin: target.origin,
        path: `${target.pathname}${target.search}`,
        method: init.method ?? 'GET',
        headers,
        ...(body === undefined ? {} : { body }),
        signal: AbortSignal.any(signals),
      });
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of response.body as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > MAX_OAUTH_RESPONSE_BYTES) {
          response.body.destroy();
          throw new Error(`the response from ${target.origin}${target.pathname} is larger than ${MAX_OAUTH_RESPONSE_BYTES} bytes`);
        }
        chunks.push(chunk);
      }
      const responseHeaders = new Headers();
      for (const [name, value] of Object.entries(response.headers)) {
        if (value === undefined) continue;
        for (const one of Array.isArray(value) ? value : [value]) responseHeaders.append(name, one);
      }
      const status = response.statusCode;
      return new Response(NULL_BODY_STATUSES.has(status) ? null : Buffer.concat(chunks), { status, headers: responseHeaders });
    },
    options: (url, signal) => {
      const insecure = url.protocol === 'http:' && (allowHttp || isLoopbackHost(url.hostname));
      return { [customFetch]: http.fetch, [allowInsecureRequests]: insecure, ...(signal === undefined ? {} : { signal }) };
    },
  };
  return http;
}
