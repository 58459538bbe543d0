// The fetch oauth4webapi calls: one request through the bridge's undici dispatcher, bounded in size and time.

import { allowInsecureRequests, customFetch } from 'oauth4webapi';
import type { Dispatcher } from '../../http/undici-parts.js';
import { isServerLoopbackHost } from '../../core/hosts.js';
import { BridgeError } from '../../core/errors.js';
import { RefusedAddressError, type AddressGuard } from './address-guard.js';
import { maskUrl } from '../../logging/redactor.js';
import { toTerminalLine } from '../../core/terminal-text.js';

/** The largest metadata, registration or token response read; real ones are a few KB. */
export const MAX_OAUTH_RESPONSE_BYTES = 1024 * 1024;
/** How long one request to the authorization server or a metadata URL may take. */
export const OAUTH_REQUEST_TIMEOUT_MS = 30_000;

/** Responses that by definition carry no body (the Response constructor refuses one for them). */
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

/** An OAuth request the bridge will not make: refused before any connection is opened. */
export class RefusedOAuthUrlError extends BridgeError {}

/**
 * Why the bridge will not send an OAuth request to `url`, or undefined when it may: the one rule
 * for every request it makes itself (protected-resource and authorization-server metadata,
 * registration, token, revocation). Every authorization server endpoint is https (MCP
 * authorization §Communication Security, OAuth 2.1 §1.5); plain http is allowed to a host that is
 * surely this machine (isServerLoopbackHost, RFC 8252 §8.3: the traffic stays here, a local
 * development server) and elsewhere only with --allow-http, the user's own statement that the
 * network between is trusted.
 */
export function oauthUrlProblem(url: URL, allowHttp: boolean): string | undefined {
  if (url.protocol === 'https:') return undefined;
  if (url.protocol !== 'http:') return `its scheme is ${url.protocol}: OAuth requests go over https only`;
  if (isServerLoopbackHost(url.hostname) || allowHttp) return undefined;
  return 'plain http:// to a host other than this machine: OAuth requests go over https (or http to loopback) unless --allow-http says the network is trusted';
}

/** The refusal of `url`, naming it masked and on one line, or undefined when it may be fetched. */
export function oauthUrlRefusal(url: URL, allowHttp: boolean, subject = 'an OAuth request to'): RefusedOAuthUrlError | undefined {
  const problem = oauthUrlProblem(url, allowHttp);
  if (problem === undefined) return undefined;
  const named = toTerminalLine(maskUrl(url));
  return new RefusedOAuthUrlError('AUTH_REQUIRED', `refused ${subject} ${named}: ${problem}`, {
    url: named,
    hint:
      url.protocol === 'http:'
        ? 'the server or its authorization server names a plain http:// URL; ask its operator for https, or pass --allow-http if this network is trusted'
        : 'the server or its authorization server names a URL that is not https; contact its operator',
  });
}

export interface OAuthHttp {
  /** Whether plain http to other hosts was allowed by --allow-http (oauthUrlProblem). */
  allowHttp: boolean;
  /** The address guard every request goes through, for checks made before a request (metadata as it is accepted). */
  guard: AddressGuard | undefined;
  /** Fetch-shaped: what oauth4webapi's `customFetch` takes, and what discovery uses for plain GETs. */
  fetch: (
    url: string,
    init: { method?: string; headers?: Record<string, string> | Headers; body?: string | URLSearchParams | null; signal?: AbortSignal },
  ) => Promise<Response>;
  /** The options every oauth4webapi request function takes for `url`: this fetch, and plain http only where allowed. */
  options: (url: URL, signal?: AbortSignal) => { [customFetch]: OAuthHttp['fetch']; [allowInsecureRequests]: boolean; signal?: AbortSignal };
}

/**
 * Every OAuth request goes through this fetch, which refuses one oauthUrlProblem names before
 * connecting. The dispatcher follows no redirect: a 3xx comes back as it is, and oauth4webapi and
 * discovery treat it as a failure, so no answer can move a request to another host or to http.
 */
/**
 * `guard`, when given, keeps every request off the addresses the server may not point the bridge
 * at: an IP address in the URL is checked here, before connecting; a name, where `dispatcher`
 * resolves it at connect time (a dispatcher made with the guard's lookup).
 */
export function createOAuthHttp(dispatcher: Dispatcher, allowHttp: boolean, guard?: AddressGuard): OAuthHttp {
  const http: OAuthHttp = {
    allowHttp,
    guard,
    fetch: async (url, init) => {
      const target = new URL(url);
      const refused = oauthUrlRefusal(target, allowHttp);
      if (refused !== undefined) throw refused;
      await guard?.checkUrl(target);
      const signals = [AbortSignal.timeout(OAUTH_REQUEST_TIMEOUT_MS), ...(init.signal === undefined ? [] : [init.signal])];
      const headers: Record<string, string> = {};
      new Headers(init.headers).forEach((value, name) => (headers[name] = value));
      const body = init.body === undefined || init.body === null ? undefined : init.body.toString();
      const response = await dispatcher
        .request({
          origin: target.origin,
          path: `${target.pathname}${target.search}`,
          method: init.method ?? 'GET',
          headers,
          ...(body === undefined ? {} : { body }),
          signal: AbortSignal.any(signals),
        })
        .catch((error: unknown) => {
          // A refusal from the guard's lookup, at connect time, is the answer, not a network failure.
          throw refusalIn(error) ?? error;
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
      // oauth4webapi's own https check, told the same rule as the fetch.
      const insecure = url.protocol === 'http:' && oauthUrlProblem(url, allowHttp) === undefined;
      return { [customFetch]: http.fetch, [allowInsecureRequests]: insecure, ...(signal === undefined ? {} : { signal }) };
    },
  };
  return http;
}

/** The guard's refusal in an error or its causes, if it is one. */
function refusalIn(error: unknown): RefusedAddressError | undefined {
  for (let cause = error, depth = 0; cause !== undefined && cause !== null && depth < 8; cause = (cause as { cause?: unknown }).cause, depth++) {
    if (cause instanceof RefusedAddressError) return cause;
  }
  return undefined;
}
