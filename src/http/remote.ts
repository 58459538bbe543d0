// The HTTP side: one keep-alive undici dispatcher (proxy and CA aware) and failures classified by err.code.

import { readFileSync } from 'node:fs';
import type { LookupFunction } from 'node:net';
import { createRequire } from 'node:module';
import type * as Tls from 'node:tls';
import { Readable } from 'node:stream';
import { Agent, EnvHttpProxyAgent, type Dispatcher } from './undici-parts.js';
import { BridgeError, isBridgeError } from '../core/errors.js';
import type { RequestBody } from '../core/json-rpc.js';
import { BodyQueue, type ResponseBody } from './body-queue.js';
import { type AbortSource } from '../core/abort.js';

/**
 * Connections to the endpoint at once; further requests wait in undici's queue. Kept well under
 * the 256 open files a macOS GUI app may have, so a burst of lines cannot exhaust descriptors.
 */
export const MAX_CONNECTIONS = 128;

// node:tls costs start-up time and is needed here only with --ca-file;
// undici loads it itself for the first https:// connection.
const requireBuiltin = createRequire(import.meta.url);

export interface RemoteOptions {
  connectTimeoutMs: number;
  caFile?: string | undefined;
  env: Readonly<Record<string, string | undefined>>;
  /** How a direct connection resolves a host name; dns.lookup when absent (tests send every name to loopback). */
  lookup?: LookupFunction | undefined;
}

export type HttpMethod = 'POST' | 'GET' | 'DELETE';

export interface HttpExchange {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Read, drained or destroyed by the reply reader alone. */
  body: ResponseBody;
  /** The Authorization value the request carried (set by Endpoint), for a renewal after a 401. */
  sentAuthorization?: string | undefined;
  /** Set by the forwarder when it answered the request from the whole body the moment it arrived. */
  answeredOnArrival?: boolean | undefined;
}

/**
 * The proxy settings of `env`, read once for both the dispatcher and every answer about it: the
 * lower-case spelling first, an empty value counting as set (`??`, as EnvHttpProxyAgent reads
 * process.env), '' when neither spelling is set.
 */
function proxySettings(env: RemoteOptions['env']): { httpProxy: string; httpsProxy: string; noProxy: string } {
  return {
    httpProxy: env.http_proxy ?? env.HTTP_PROXY ?? '',
    httpsProxy: env.https_proxy ?? env.HTTPS_PROXY ?? '',
    noProxy: env.no_proxy ?? env.NO_PROXY ?? '',
  };
}

const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443 };

/**
 * The proxy requests to `url` go through, or undefined when they go direct: the one rule that the
 * bridge's dispatcher (EnvHttpProxyAgent, given the same settings) applies, and that doctor and
 * the failure messages ask. It is that agent's own, step for step (undici
 * lib/dispatcher/env-http-proxy-agent.js, checked against it by test/remote.test.ts): NO_PROXY
 * entries split at commas and whitespace, empty ones skipped; the whole value `*` means none
 * (`*` as one entry of a list, or with spaces around it, matches no host); an entry is a host,
 * lower-cased, a leading `.` or `*.` dropped, optionally with `:port` (the URL's port, or its
 * scheme's default, must then equal it), matching that host and every subdomain of it; an IPv6
 * host matches only in brackets (`[::1]`).
 */
export function proxyFor(url: URL, env: RemoteOptions['env']): string | undefined {
  const { httpProxy, httpsProxy, noProxy } = proxySettings(env);
  // An empty HTTPS proxy falls back to the HTTP one, as EnvHttpProxyAgent's does.
  const proxy = url.protocol === 'https:' ? httpsProxy || httpProxy : httpProxy;
  if (proxy === '') return undefined;
  if (noProxy === '*') return undefined;
  // url.host, not url.hostname: an IPv6 address keeps its brackets.
  const hostname = url.host.replace(/:\d*$/, '').toLowerCase();
  const port = Number.parseInt(url.port, 10) || DEFAULT_PORTS[url.protocol] || 0;
  for (const entry of noProxy.split(/[,\s]/)) {
    if (entry === '') continue;
    const parsed = /^(.+):(\d+)$/.exec(entry);
    const host = (parsed?.[1] ?? entry).replace(/^\*?\./, '').toLowerCase();
    if (parsed !== null && Number.parseInt(parsed[2]!, 10) !== port) continue;
    if (hostname === host || hostname.endsWith(`.${host}`)) return undefined;
  }
  return proxy;
}

/** The CA list to pass as `ca`, or undefined for Node's own store. */
export function trustedCas(options: Pick<RemoteOptions, 'caFile' | 'env'>): string[] | undefined {
  if (options.caFile === undefined) return undefined; // Node's defaults, NODE_EXTRA_CA_CERTS included
  // An explicit `ca` replaces Node's store, so rebuild it: bundled roots, the extra file Node
  // would have added, and the user's file.
  const { rootCertificates } = requireBuiltin('node:tls') as typeof Tls;
  const cas = [...rootCertificates];
  const extra = options.env.NODE_EXTRA_CA_CERTS;
  if (extra !== undefined && extra !== '') {
    try {
      cas.push(readFileSync(extra, 'utf8'));
    } catch {
      // Node itself only warns about an unreadable NODE_EXTRA_CA_CERTS; do the same by ignoring it.
    }
  }
  cas.push(readFileSync(options.caFile, 'utf8'));
  return cas;
}

/**
 * One dispatcher for the whole run. HTTPS_PROXY / HTTP_PROXY / NO_PROXY (either case) are honoured
 * by EnvHttpProxyAgent; with neither proxy variable set it would send everything to a plain Agent
 * anyway, after parsing each request's origin into a URL to look for a proxy that cannot apply,
 * so then the Agent is used directly. undici's own 300 s headers and body timeouts are switched
 * off: a JSON reply to a long tool call sends its headers only when the call is done, and a quiet
 * SSE stream is alive; the bridge's request deadline and stream-idle limit govern instead.
 */
export function createDispatcher(options: RemoteOptions): Dispatcher {
  const ca = trustedCas(options);
  const tls = ca === undefined ? {} : { ca };
  const agentOptions = {
    connect: { timeout: options.connectTimeoutMs, ...tls, ...(options.lookup === undefined ? {} : { lookup: options.lookup }) },
    headersTimeout: 0,
    bodyTimeout: 0,
    keepAliveTimeout: 30_000,
    // Each in-flight request holds its own connection (HTTP/1.1, no pipelining); the cap keeps a
    // flood of lines from opening thousands of sockets, and is high enough that slow calls and
    // open streams do not hold up the lines after them.
    connections: MAX_CONNECTIONS,
  };
  // Read from the injected environment (the CLI passes process.env) so tests can set them; given
  // explicitly, the agent never reads process.env, and proxyFor sees exactly what it sees.
  const { httpProxy, httpsProxy, noProxy } = proxySettings(options.env);
  if (httpProxy === '' && httpsProxy === '') return new Agent(agentOptions);
  return new EnvHttpProxyAgent({
    ...agentOptions,
    requestTls: { timeout: options.connectTimeoutMs, ...tls },
    proxyTls: { timeout: options.connectTimeoutMs, ...tls },
    httpProxy,
    httpsProxy,
    noProxy,
  });
}

/**
 * A request body longer than this many characters is encoded slice by slice as undici sends it,
 * instead of being copied whole into a Buffer first: a 50 MiB line then costs its text and its
 * parsed tree, not a third full copy.
 */
export const LARGE_BODY_CHARS = 1024 * 1024;
/** The characters encoded at a time for such a body. */
const BODY_SLICE_CHARS = 64 * 1024;

/**
 * The UTF-8 bytes of `text`, a slice at a time; iterable again for a retry. A slice never ends
 * between the two halves of a surrogate pair, so the bytes are exactly those of the whole text
 * (the text was decoded from valid UTF-8, so it holds no lone surrogate).
 */
export function utf8Slices(text: string, sliceChars = BODY_SLICE_CHARS): Iterable<Buffer> {
  return {
    *[Symbol.iterator]() {
      for (let start = 0; start < text.length; ) {
        let end = Math.min(start + sliceChars, text.length);
        const last = text.charCodeAt(end - 1);
        if (end < text.length && last >= 0xd800 && last <= 0xdbff) end++;
        yield Buffer.from(text.slice(start, end), 'utf8');
        start = end;
      }
    },
  };
}

export interface SendOptions {
  method: HttpMethod;
  url: URL;
  headers: Record<string, string>;
  /** Text, or bytes in pieces (a large stdin line as it came). */
  body?: RequestBody | undefined;
  signal: AbortSource;
  /** What a failure before the headers (the abort reason included) is rejected with; undici's own error when absent. */
  toFailure?: (error: unknown) => Error;
  /**
   * Called from undici's own callback the moment the body's last byte arrived, with the exchange
   * the promise resolved with: a reader may look at the whole body (`body.arrived()`) before the
   * promise chain that reads it has run. It must not throw.
   */
  onArrived?: ((exchange: HttpExchange) => void) | undefined;
}

/** The origin and path of the last URL sent to: every POST goes to the same one. */
let lastTarget: { url: URL; href: string; origin: string; path: string } | undefined;

function targetOf(url: URL): { origin: string; path: string } {
  if (lastTarget?.url !== url || lastTarget.href !== url.href) {
    lastTarget = { url, href: url.href, origin: url.origin, path: `${url.pathname}${url.search}` };
  }
  return lastTarget;
}

/**
 * Sends one HTTP request with undici's dispatch() and a handler: no stream object, promise chain
 * or extra listeners per request. Resolves with status, headers and an unread body once the
 * headers arrived; rejects with undici's failure before that, or at once with the signal's reason
 * when it aborts (a request still queued for a connection included).
 */
export function sendHttp(dispatcher: Dispatcher, options: SendOptions): Promise<HttpExchange> {
  const { signal, toFailure, onArrived } = options;
  if (signal.aborted) return Promise.reject(toFailure === undefined ? abortReason(signal) : toFailure(abortReason(signal)));
  const target = targetOf(options.url);
  let headers = options.headers;
  const text = options.body;
  let requestBody: string | Readable | readonly Buffer[] | null = text ?? null;
  if (typeof text === 'string' && text.length > LARGE_BODY_CHARS) {
    headers = { ...headers, 'content-length': String(Buffer.byteLength(text, 'utf8')) };
    requestBody = Readable.from(utf8Slices(text), { objectMode: false });
  } else if (text !== undefined && typeof text !== 'string') {
    // A large line's bytes in the pieces they arrived in: undici writes them one by one, waiting
    // for the socket to drain; nothing is joined or copied. Iterable again for a retry.
    let length = 0;
    for (const piece of text) length += piece.length;
    headers = { ...headers, 'content-length': String(length) };
  }
  return new Promise<HttpExchange>((resolve, reject) => {
    const body = new BodyQueue();
    let exchange: HttpExchange | undefined;
    let controller: Dispatcher.DispatchController | undefined;
    let started = false;
    let settled = false;
    const onAbort = () => {
      const reason = abortReason(signal);
      if (!settled) {
        settled = true;
        reject(toFailure === undefined ? reason : toFailure(reason));
      }
      body.fail(reason);
      if (controller !== undefined && !controller.aborted) controller.abort(reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    const done = () => signal.removeEventListener('abort', onAbort);
    dispatcher.dispatch(
      {
        origin: target.origin,
        path: target.path,
        method: options.method,
        headers,
        // undici sends any iterable of Buffers (its request.js accepts iterables); its types name only Readable.
        body: requestBody as Readable | string | null,
      },
      {
        onRequestStart(dispatchController) {
          controller = dispatchController;
          body.attach(dispatchController);
          // Aborted while it waited for a connection: it never leaves.
          if (signal.aborted) dispatchController.abort(abortReason(signal));
        },
        onResponseStart(_controller, statusCode, headers) {
          // 1xx informational answers come before the real one; undici passes the final status here.
          started = true;
          if (settled) return;
          settled = true;
          exchange = { status: statusCode, headers: headers, body };
          resolve(exchange);
        },
        onResponseData(_controller, chunk) {
          body.push(chunk);
        },
        onResponseEnd() {
          done();
          body.end();
          if (exchange !== undefined) onArrived?.(exchange);
        },
        onResponseError(_controller, error) {
          done();
          if (!started && !settled) {
            settled = true;
            reject(toFailure === undefined ? error : toFailure(error));
            return;
          }
          body.fail(error);
        },
      },
    );
  });
}

function abortReason(signal: AbortSource): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error('aborted', { cause: reason });
}

export interface FailureContext {
  url: URL;
  proxy?: string | undefined;
}

const TLS_CODES = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|SELF_SIGNED_|DEPTH_ZERO_|ERR_OSSL_|HOSTNAME_MISMATCH)/;

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Walks `cause` chains: undici wraps socket and TLS errors. */
function innermost(error: unknown): unknown {
  let current = error;
  for (let depth = 0; depth < 5; depth++) {
    const cause = (current as { cause?: unknown } | null)?.cause;
    if (cause === undefined || cause === null) break;
    current = cause;
  }
  return current;
}

/**
 * Maps a failure to a BridgeError by `err.code`, never by class. An aborted signal's reason wins:
 * the deadline, a cancel or shutdown already said why.
 */
export function toBridgeError(error: unknown, signal: AbortSource | undefined, context: FailureContext): BridgeError {
  if (isBridgeError(error)) return error;
  if (signal?.aborted === true && isBridgeError(signal.reason)) return signal.reason;
  const inner = innermost(error);
  const code = codeOf(inner) ?? codeOf(error);
  const detail = (inner instanceof Error ? inner.message : String(inner)) || String(error);
  const where = context.url.host;
  const proxyNote = context.proxy === undefined ? '' : ` (through the proxy ${redactUserinfo(context.proxy)})`;
  const base = { cause: code ?? detail };

  if (code !== undefined && TLS_CODES.test(code)) {
    return new BridgeError('REMOTE_TLS', `TLS with ${where} failed: ${detail}`, {
      ...base,
      hint: 'the server certificate is not trusted: pass --ca-file <pem> with your CA (or set NODE_EXTRA_CA_CERTS), or check the host name in --url',
    });
  }
  if (context.proxy !== undefined && /\(407\)/.test(detail)) {
    return new BridgeError('PROXY_FAILED', `the proxy ${redactUserinfo(context.proxy)} wants credentials (407 Proxy Authentication Required)`, {
      ...base,
      hint: 'put the proxy user and password in the proxy URL: HTTPS_PROXY=http://user:password@proxy:port (or ask for a host to be added to NO_PROXY)',
    });
  }
  if (/proxy/i.test(detail) && code === 'UND_ERR_ABORTED') {
    return new BridgeError('PROXY_FAILED', `the proxy refused the tunnel to ${where}: ${detail}`, {
      ...base,
      hint: 'check HTTPS_PROXY / HTTP_PROXY (and credentials), or add the host to NO_PROXY',
    });
  }
  switch (code) {
    case 'EMFILE':
    case 'ENFILE':
      // Out of file descriptors while opening the socket: nothing was sent, so a retry is safe.
      return new BridgeError('REMOTE_UNREACHABLE', `could not open a connection to ${where}: too many open files`, {
        ...base,
        neverSent: true,
        hint: 'too many connections at once: send fewer requests in parallel, or raise the open-files limit (ulimit -n)',
      });
    case 'ECONNREFUSED':
      // Through a proxy, the bridge connects to the proxy only: a refusal is the proxy's.
      if (context.proxy !== undefined) {
        return new BridgeError('PROXY_FAILED', `the proxy ${redactUserinfo(context.proxy)} is unreachable: nothing is listening there`, {
          ...base,
          neverSent: true,
          hint: 'check HTTPS_PROXY / HTTP_PROXY (host and port), or add the host to NO_PROXY if it needs no proxy',
        });
      }
      return new BridgeError('REMOTE_UNREACHABLE', `nothing is listening at ${where}`, {
        ...base,
        neverSent: true,
        hint: `nothing is listening at ${where}: check --url (host and port), or start the server`,
      });
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_FAIL':
      return new BridgeError('REMOTE_UNREACHABLE', `the host name ${where} could not be resolved`, {
        ...base,
        neverSent: true,
        hint: 'check the host name in --url, your DNS, or set HTTPS_PROXY if this network needs a proxy',
      });
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'ETIMEDOUT':
    case 'ENETUNREACH':
    case 'EHOSTUNREACH':
      return new BridgeError('REMOTE_UNREACHABLE', `could not connect to ${where}${proxyNote}: ${detail}`, {
        ...base,
        neverSent: true,
        hint: 'the network path is blocked or slow: check firewalls and proxies (HTTPS_PROXY), or raise --connect-timeout',
      });
    case 'ECONNRESET':
    case 'EPIPE':
    case 'UND_ERR_SOCKET':
    case 'UND_ERR_CLOSED':
    case 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH':
    case 'ERR_STREAM_PREMATURE_CLOSE':
      return new BridgeError('REMOTE_CONNECTION_LOST', `the connection to ${where} broke: ${detail}`, {
        ...base,
        hint: 'the server or a proxy closed the connection; retry, and check the server logs',
      });
    case 'Z_DATA_ERROR':
    case 'Z_BUF_ERROR':
    case 'ERR_PADDING_1':
    case 'ERR__ERROR_FORMAT_PADDING_1':
      return new BridgeError('REMOTE_BAD_REPLY', `the reply from ${where} could not be decompressed: ${detail}`, base);
    default:
      return new BridgeError('REMOTE_CONNECTION_LOST', `the exchange with ${where} failed: ${detail}`, base);
  }
}

export function redactUserinfo(proxy: string): string {
  try {
    const url = new URL(proxy);
    if (url.username !== '' || url.password !== '') {
      url.username = '';
      url.password = '';
    }
    return url.origin;
  } catch {
    return '(unparseable proxy URL)';
  }
}
