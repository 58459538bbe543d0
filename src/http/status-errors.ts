// Turns an HTTP error status without a JSON-RPC answer into the BridgeError the request gets.

import type { TransportMode } from '../config/config.js';
import { BridgeError } from '../core/errors.js';
import { isJsonObject } from '../core/json-rpc.js';
import type { Redactor } from '../logging/redactor.js';
import { type HttpExchange } from './send.js';
import { headerValue } from './header-values.js';
import { excerptOf } from '../logging/outgoing-text.js';

export interface StatusContext {
  /** The error body as read (at most ERROR_BODY_MAX_BYTES), and its JSON if it parsed. */
  body: string;
  parsed: unknown;
  redact: Redactor;
  /** Where the token comes from, for the 401 hint (`env FENBS_TOKEN`). */
  tokenSource: string;
  tokenSet: boolean;
  /** The variable a token would be read from (`FENBS_TOKEN`), for the 401 that came with none. */
  tokenEnv?: string;
  hadSession: boolean;
  /** A 2025-era request sent before any initialize completed: a session the server wants does not exist yet. */
  beforeInitialize?: boolean;
  /** Where the request went, and the --transport it went with: an old `/sse` URL gets a hint of its own. */
  url?: URL;
  transport?: TransportMode;
}

/**
 * The error names the status, carries a short excerpt of the body (secrets masked), the server's
 * own id-less JSON-RPC error when it sent one, `WWW-Authenticate` when present, and a hint
 * (the status, an excerpt and a hint are what lets a user act on it).
 */
export function statusError(method: string, exchange: HttpExchange, context: StatusContext): BridgeError {
  const { status } = exchange;
  const serverError = isJsonObject(context.parsed) && isJsonObject(context.parsed.error) ? context.parsed.error : undefined;
  const wwwAuthenticate = headerValue(exchange.headers, 'www-authenticate');
  const data = {
    status,
    bodyExcerpt: excerptOf(context.body, context.redact),
    ...(serverError === undefined ? {} : { serverError }),
    ...(wwwAuthenticate === undefined ? {} : { wwwAuthenticate }),
  };
  if (status === 401 || status === 403) {
    // A static-token bridge cannot run OAuth: it reports the challenge (authorization §Error Handling).
    const insufficientScope = wwwAuthenticate !== undefined && /insufficient_scope/i.test(wwwAuthenticate);
    if (status === 401 && !context.tokenSet) {
      // Nothing was sent to reject: the server wants a token, and by now the OAuth sign-in (which a
      // 401 starts when no token is set) has found none to offer.
      return new BridgeError('REMOTE_AUTH', `the server wants a token for ${method} (401 Unauthorized) and offers no OAuth sign-in`, {
        ...data,
        hint: noTokenHint(context),
      });
    }
    if (status === 403 && !context.tokenSet && !insufficientScope) {
      return new BridgeError('REMOTE_AUTH', `the server refused ${method} without a token: 403 Forbidden`, {
        ...data,
        hint: `${noTokenHint(context)} (or the server refused the Origin)`,
      });
    }
    return new BridgeError('REMOTE_AUTH', `the server refused ${method}: ${status} ${status === 401 ? 'Unauthorized' : 'Forbidden'}`, {
      ...data,
      hint:
        status === 401
          ? `the token was rejected or has expired: check ${context.tokenSource}`
          : insufficientScope
            ? 'the token lacks a scope this call needs (see wwwAuthenticate): ask for a token with that scope'
            : 'the token is valid but not allowed to do this, or the server refused the Origin',
    });
  }
  const sseHint = context.url !== undefined && status >= 400 && status < 500 && looksLikeSseUrl(context.url) ? legacySseHint(context.transport) : undefined;
  return new BridgeError('REMOTE_HTTP_STATUS', `the server answered ${method} with HTTP ${status}`, {
    ...data,
    hint:
      sseHint ??
      (context.beforeInitialize === true && status === 400 && asksForSession(context.body) ? NOT_INITIALIZED_HINT : hintForStatus(status, context.hadSession)),
  });
}

/** What to do when no token went with a refused request: a failed --token-command says so. */
function noTokenHint(context: StatusContext): string {
  if (context.tokenSource === '--token-command') return 'no token is set: check what --token-command prints (run it in a terminal to see its error)';
  return `no token is set: set ${context.tokenEnv ?? 'FENBS_TOKEN'}, --token-file or --token-command`;
}

/**
 * A path ending in `/sse` is, by the convention of the SDKs' examples and hosted servers, the
 * event-stream URL of the 2024-11-05 HTTP+SSE transport, which takes no POST.
 */
export function looksLikeSseUrl(url: URL): boolean {
  return /\/sse\/?$/i.test(url.pathname);
}

/** The hint for a POST to an `/sse` URL refused, by the transport the bridge was told to use. */
export function legacySseHint(transport: TransportMode | undefined): string {
  return transport === 'streamable-http'
    ? 'this looks like an HTTP+SSE (2024-11-05) URL, which takes no POST, and --transport streamable-http does not try that transport: drop --transport (auto falls back to it) or pass --transport sse'
    : "this looks like an HTTP+SSE (2024-11-05) URL, but its GET did not open an event stream that names an endpoint: check the URL against the server's documentation (fenbs-mcp doctor shows both answers)";
}

export const NOT_INITIALIZED_HINT =
  'no session yet: send initialize first (then notifications/initialized); a 2025 server answers nothing else before the handshake';

/**
 * True when a 400 body says a session or the handshake is missing: what 2025 servers answer to a
 * request sent before initialize ("Mcp-Session-Id header is required", "Server not initialized").
 */
function asksForSession(body: string): boolean {
  return /session|not initiali[sz]ed|initiali[sz]e first/i.test(body);
}

/** The hint for an HTTP status without a usable JSON-RPC body: what the status most often means for an MCP endpoint. */
export function hintForStatus(status: number, hadSession: boolean): string {
  switch (status) {
    case 400:
      return 'the server rejected the request as malformed; see bodyExcerpt';
    case 404:
      return hadSession ? 'the session was not found and could not be renewed' : 'nothing at this URL: check --url (the MCP endpoint path, e.g. /mcp)';
    case 405:
      return 'this URL does not accept POST: check --url, it may not be an MCP endpoint';
    case 406:
    case 415:
      return 'the server does not speak MCP Streamable HTTP at this URL: check --url';
    case 408:
    case 504:
      return 'the server or a gateway timed out; retry, or check the server';
    case 409:
      return 'the server reported a conflict; see bodyExcerpt';
    case 413:
      return 'the request is too large for the server or a proxy in front of it';
    case 429:
      return 'rate limited: wait before sending more';
    case 431:
      return 'the request headers are too large for the server (long tool names or mirrored parameters)';
    case 500:
      return 'the server failed internally; check its logs';
    case 502:
    case 503:
      return 'the server or a gateway in front of it is unavailable; retry later';
    default:
      return status >= 500 ? 'the server failed; retry later or check its logs' : 'see bodyExcerpt for what the server said';
  }
}

/**
 * A refusal a new credential may cure: 401, or 403 with `error="insufficient_scope"` (step-up,
 * authorization §Scope Challenge Handling; RFC 6750 §3.1).
 */
export function refusesCredential(reply: { status: number; wwwAuthenticate?: string | undefined }): boolean {
  if (reply.status === 401) return true;
  return reply.status === 403 && reply.wwwAuthenticate !== undefined && /\berror\s*=\s*"?insufficient_scope"?/i.test(reply.wwwAuthenticate);
}
