// The one keep-alive undici dispatcher of a run: direct or through the environment's proxy, with the CAs the run trusts.

import { readFileSync } from 'node:fs';
import type { LookupFunction } from 'node:net';
import { createRequire } from 'node:module';
import type * as Tls from 'node:tls';
import { Agent, EnvHttpProxyAgent, type Dispatcher } from './undici-parts.js';

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
