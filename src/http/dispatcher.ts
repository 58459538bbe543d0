// The one keep-alive undici dispatcher of a run: direct or through the environment's proxy, with the CAs the run trusts and the client certificate.

import { readFileSync } from 'node:fs';
import type { LookupFunction } from 'node:net';
import { createRequire } from 'node:module';
import type * as Tls from 'node:tls';
import { Agent, EnvHttpProxyAgent, type Dispatcher } from './undici-parts.js';
import { alertKeepingConnector } from './alert-connector.js';
import type { BridgeConfig } from '../config/config.js';

/**
 * Connections to the endpoint at once; further requests wait in undici's queue. Kept well under
 * the 256 open files a macOS GUI app may have, so a burst of lines cannot exhaust descriptors.
 */
export const MAX_CONNECTIONS = 128;

// node:tls costs start-up time and is needed here only with --ca-file or --use-system-ca;
// undici loads it itself for the first https:// connection.
const requireBuiltin = createRequire(import.meta.url);

export interface RemoteOptions {
  connectTimeoutMs: number;
  caFile?: string | undefined;
  /** --use-system-ca: the operating system's store joins the list (checked available by the config). */
  useSystemCa?: boolean | undefined;
  /** --client-cert / --client-key: presented to the endpoint's origin, never to a proxy. */
  clientCertificate?: { cert: string; key: string; passphrase: string | undefined } | undefined;
  env: Readonly<Record<string, string | undefined>>;
  /** How a direct connection resolves a host name; dns.lookup when absent (tests send every name to loopback). */
  lookup?: LookupFunction | undefined;
}

/**
 * The dispatcher settings a run's config names. Every dispatcher that reaches the endpoint or its
 * authorization server (the bridge, doctor, login) is made from these, so none of them trusts
 * another store or presents another certificate than the bridge does.
 */
export function remoteOptionsOf(
  config: Pick<BridgeConfig, 'connectTimeoutMs' | 'caFile' | 'useSystemCa' | 'clientCertificate'>,
  env: RemoteOptions['env'],
): RemoteOptions {
  return {
    connectTimeoutMs: config.connectTimeoutMs,
    caFile: config.caFile,
    useSystemCa: config.useSystemCa,
    clientCertificate: config.clientCertificate,
    env,
  };
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

/** tls.getCACertificates (Node 22.15, 23.10): absent from the Node 20 typings this code is checked against. */
interface NewerTls {
  getCACertificates?: (type: 'default' | 'system' | 'bundled' | 'extra') => string[];
}

type CaOptions = Pick<RemoteOptions, 'caFile' | 'useSystemCa' | 'env'>;

/** The stores of a CA list, as doctor names them: "Node's bundled roots + NODE_EXTRA_CA_CERTS + system store + --ca-file". */
export function caStoreName(options: CaOptions): string {
  const parts = ["Node's bundled roots"];
  const extra = options.env.NODE_EXTRA_CA_CERTS;
  if (extra !== undefined && extra !== '') parts.push('NODE_EXTRA_CA_CERTS');
  if (options.useSystemCa === true) parts.push('system store');
  if (options.caFile !== undefined) parts.push('--ca-file');
  return parts.join(' + ');
}

/**
 * The CA list to pass as `ca`, or undefined for Node's own store. An explicit `ca` replaces
 * Node's store, so with --ca-file or --use-system-ca it is rebuilt: every store in use is kept
 * and the user's ones are added (the bundled roots, NODE_EXTRA_CA_CERTS, the system store when
 * asked, then --ca-file).
 */
export function trustedCas(options: CaOptions): string[] | undefined {
  if (options.caFile === undefined && options.useSystemCa !== true) return undefined; // Node's defaults, NODE_EXTRA_CA_CERTS included
  const tls = requireBuiltin('node:tls') as typeof Tls & NewerTls;
  const cas = [...tls.rootCertificates];
  const extra = options.env.NODE_EXTRA_CA_CERTS;
  if (extra !== undefined && extra !== '') {
    if (typeof tls.getCACertificates === 'function') {
      // Node read that file at start (from its own environment); ask it rather than read again.
      cas.push(...tls.getCACertificates('extra'));
    } else {
      try {
        cas.push(readFileSync(extra, 'utf8'));
      } catch {
        // Node itself only warns about an unreadable NODE_EXTRA_CA_CERTS; do the same by ignoring it.
      }
    }
  }
  // The config refused --use-system-ca on a Node without the system store.
  if (options.useSystemCa === true) cas.push(...(tls.getCACertificates?.('system') ?? []));
  if (options.caFile !== undefined) cas.push(readFileSync(options.caFile, 'utf8'));
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
  const client = options.clientCertificate;
  // Only the origin's handshake carries the client certificate: a proxy's TLS is its own (proxyTls below).
  const clientTls =
    client === undefined ? {} : { cert: client.cert, key: client.key, ...(client.passphrase === undefined ? {} : { passphrase: client.passphrase }) };
  const connect = { timeout: options.connectTimeoutMs, ...tls, ...clientTls, ...(options.lookup === undefined ? {} : { lookup: options.lookup }) };
  const agentOptions = {
    // A server that demands or refuses a client certificate says so in an alert after the handshake: keep it (alert-connector.ts).
    connect: alertKeepingConnector(connect),
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
    requestTls: { timeout: options.connectTimeoutMs, ...tls, ...clientTls },
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
