// `fenbs-mcp doctor`: checks, in order, everything the bridge needs, and says what to fix.

import { lookup } from 'node:dns/promises';
import { isIP, connect as connectTcp } from 'node:net';
import { connect as connectTls, type ConnectionOptions } from 'node:tls';
import type { BridgeConfig } from './config.js';
import { Endpoint } from './endpoint.js';
import { isBridgeError } from './errors.js';
import { isJsonObject, MODERN_VERSION_META_KEY, type JsonObject } from './json-rpc.js';
import { headerValue, readErrorBody, readPrivateResponse } from './reply-reader.js';
import { createDispatcher, proxyFromEnv, redactUserinfo, trustedCas } from './remote.js';
import { maskUrl, type Redactor } from './secrets.js';

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
  hint?: string;
}

export interface DoctorReport {
  ok: boolean;
  url: string;
  era?: 'legacy' | 'modern';
  checks: Check[];
}

const MODERN_VERSION = '2026-07-28';
const LEGACY_VERSION = '2025-06-18';
const CLIENT_INFO = { name: 'fenbs-mcp-doctor', version: '1' };
const LATENCY_SAMPLES = 5;

/** Runs every check in order; a failed check stops the ones that depend on it. */
export async function runDoctor(config: BridgeConfig, env: Readonly<Record<string, string | undefined>>): Promise<DoctorReport> {
  const checks: Check[] = [];
  const report: DoctorReport = { ok: false, url: maskUrl(config.url), checks };
  const add = (check: Check) => (checks.push(check), check.ok);

  add({ name: 'url', ok: true, detail: maskUrl(config.url) });
  const proxy = proxyFromEnv(env, config.url.protocol) || undefined;
  const host = config.url.hostname.replace(/^\[|\]$/g, '');
  const port = Number(config.url.port || (config.url.protocol === 'https:' ? 443 : 80));

  if (proxy !== undefined && !bypassesProxy(host, env)) {
    add({ name: 'network', ok: true, detail: `through the proxy ${redactUserinfo(proxy)} (DNS, TCP and TLS are checked by the request below)` });
  } else {
    if (isIP(host) === 0) {
      const resolved = await lookup(host, { all: true }).then(
        (addresses) => ({ ok: true as const, detail: addresses.map((a) => a.address).join(', ') }),
        (error: NodeJS.ErrnoException) => ({ ok: false as const, detail: `${host}: ${error.code ?? error.message}` }),
      );
      const hint = 'check the host name in --url and your DNS; behind a corporate proxy set HTTPS_PROXY';
      if (!add({ name: 'dns', ...resolved, ...(resolved.ok ? {} : { hint }) })) return report;
    }
    const tcp = await tryTcp(host, port, config.connectTimeoutMs);
    if (!add({ name: 'tcp', ok: tcp.ok, detail: tcp.detail, ...(tcp.ok ? {} : { hint: tcp.hint }) })) return report;
    if (config.url.protocol === 'https:') {
      const tls = await tryTls(host, port, config, env);
      if (!add({ name: 'tls', ok: tls.ok, detail: tls.detail, ...(tls.ok ? {} : { hint: tls.hint }) })) return report;
    }
  }

  const dispatcher = createDispatcher({ connectTimeoutMs: config.connectTimeoutMs, caFile: config.caFile, env });
  const endpoint = new Endpoint(config, dispatcher, env);
  try {
    await probe(endpoint, config, report, add);
  } finally {
    await dispatcher.close().catch(() => undefined);
  }
  report.ok = checks.every((check) => check.ok);
  return report;
}

type Add = (check: Check) => boolean;

let privateIds = 0;
function request(method: string, params: JsonObject): JsonObject & { id: string } {
  return { jsonrpc: '2.0', id: `fenbs-mcp-doctor-${++privateIds}`, method, params };
}

const modernMeta = { [MODERN_VERSION_META_KEY]: MODERN_VERSION, 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': CLIENT_INFO };
const modernHeaders = (method: string) => ({ 'mcp-protocol-version': MODERN_VERSION, 'mcp-method': method });

async function probe(endpoint: Endpoint, config: BridgeConfig, report: DoctorReport, add: Add): Promise<void> {
  const signal = () => AbortSignal.timeout(Math.max(config.connectTimeoutMs * 2, 15_000));
  // Era: probe server/discover first, as dual-era clients do (2026-07-28 versioning §Backward Compatibility).
  const discover = request('server/discover', { _meta: modernMeta });
  let exchange;
  try {
    exchange = await endpoint.post(JSON.stringify(discover), modernHeaders('server/discover'), signal());
  } catch (error) {
    const failure = isBridgeError(error) ? error : endpoint.failure(error, undefined);
    add({ name: 'connect', ok: false, detail: failure.message, ...(failure.context.hint === undefined ? {} : { hint: failure.context.hint }) });
    return;
  }
  if (exchange.status === 401 || exchange.status === 403) {
    const www = headerValue(exchange.headers, 'www-authenticate');
    await readErrorBody(exchange);
    add({
      name: 'token',
      ok: false,
      detail: `${exchange.status} ${config.token === undefined ? 'and no token is set' : `with the token from ${config.tokenSource}`}${www === undefined ? '' : `; WWW-Authenticate: ${www}`}`,
      hint: exchange.status === 401 ? `the token was rejected or has expired: set a valid one in ${config.tokenSource}` : 'the token lacks the permission or scope this server needs',
    });
    return;
  }
  add({ name: 'token', ok: true, detail: config.token === undefined ? 'none set, and the server did not ask for one' : `accepted (from ${config.tokenSource})` });

  let discovered: JsonObject | undefined;
  try {
    const response = await readPrivateResponse(exchange, discover.id, config.maxMessageBytes);
    if (isJsonObject(response.result) && Array.isArray(response.result.supportedVersions)) discovered = response.result;
  } catch {
    // Not a modern server: fall back to the legacy handshake.
  }
  const probe: Probe = { endpoint, add, signal, maxMessageBytes: config.maxMessageBytes };
  if (discovered !== undefined) await checkModern(probe, discovered, report);
  else await checkLegacy(probe, report);
}

/** What the checks after the first request share. */
interface Probe {
  endpoint: Endpoint;
  add: Add;
  /** A fresh deadline for each exchange. */
  signal: () => AbortSignal;
  maxMessageBytes: number;
}

async function checkModern(probe: Probe, discovered: JsonObject, report: DoctorReport): Promise<void> {
  const { add } = probe;
  report.era = 'modern';
  const info = isJsonObject(discovered._meta) && isJsonObject(discovered._meta['io.modelcontextprotocol/serverInfo']) ? discovered._meta['io.modelcontextprotocol/serverInfo'] : {};
  add({
    name: 'protocol',
    ok: true,
    detail: `2026-07-28 era; versions ${(discovered.supportedVersions as unknown[]).join(', ')}; server ${describeServer(info)}; capabilities ${Object.keys(isJsonObject(discovered.capabilities) ? discovered.capabilities : {}).join(', ') || 'none'}`,
  });
  await countToolsAndTime(probe, (params) => ({ message: request('tools/list', { ...params, _meta: modernMeta }), headers: modernHeaders('tools/list') }));
}

async function checkLegacy(probe: Probe, report: DoctorReport): Promise<void> {
  const { endpoint, add, signal } = probe;
  report.era = 'legacy';
  const initialize = request('initialize', { protocolVersion: LEGACY_VERSION, capabilities: {}, clientInfo: CLIENT_INFO });
  let sessionHeaders: Record<string, string> = {};
  try {
    const exchange = await endpoint.post(JSON.stringify(initialize), { 'mcp-method': 'initialize' }, signal());
    const response = await readPrivateResponse(exchange, initialize.id, probe.maxMessageBytes);
    if (!isJsonObject(response.result)) throw new Error(`initialize failed: ${JSON.stringify(response.error)}`);
    const result = response.result;
    const sessionId = headerValue(exchange.headers, 'mcp-session-id');
    const version = typeof result.protocolVersion === 'string' ? result.protocolVersion : LEGACY_VERSION;
    sessionHeaders = { 'mcp-protocol-version': version, ...(sessionId === undefined ? {} : { 'mcp-session-id': sessionId }) };
    add({
      name: 'protocol',
      ok: true,
      detail: `${version} (legacy era, initialize handshake${sessionId === undefined ? ', no session' : ', with a session'}); server ${describeServer(isJsonObject(result.serverInfo) ? result.serverInfo : {})}; capabilities ${Object.keys(isJsonObject(result.capabilities) ? result.capabilities : {}).join(', ') || 'none'}`,
    });
    const initialized = await endpoint.post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), { ...sessionHeaders, 'mcp-method': 'notifications/initialized' }, signal());
    await readErrorBody(initialized);
  } catch (error) {
    const failure = isBridgeError(error) ? error : endpoint.failure(error, undefined);
    add({ name: 'protocol', ok: false, detail: `neither server/discover nor initialize worked: ${failure.message}`, hint: 'this URL may not be an MCP Streamable HTTP endpoint: check --url' });
    return;
  }
  try {
    await countToolsAndTime(probe, (params) => ({ message: request('tools/list', params), headers: { ...sessionHeaders, 'mcp-method': 'tools/list' } }));
  } finally {
    if (sessionHeaders['mcp-session-id'] !== undefined) {
      // Leave no probe session behind: the server keeps a session until it is DELETEd (2025-06-18 transports §Session Management).
      await endpoint.delete(sessionHeaders, signal()).then((exchange) => readErrorBody(exchange), () => undefined);
    }
  }
}

async function countToolsAndTime(probe: Probe, build: (params: JsonObject) => { message: JsonObject & { id: string }; headers: Record<string, string> }): Promise<void> {
  const { endpoint, add, signal, maxMessageBytes } = probe;
  let tools = 0;
  let cursor: string | undefined;
  const timings: number[] = [];
  try {
    for (let page = 0; page < 50; page++) {
      const { message, headers } = build(cursor === undefined ? {} : { cursor });
      const started = performance.now();
      const exchange = await endpoint.post(JSON.stringify(message), headers, signal());
      const response = await readPrivateResponse(exchange, message.id, maxMessageBytes);
      timings.push(performance.now() - started);
      if (!isJsonObject(response.result)) throw new Error(`tools/list failed: ${JSON.stringify(response.error)}`);
      tools += Array.isArray(response.result.tools) ? response.result.tools.length : 0;
      cursor = typeof response.result.nextCursor === 'string' ? response.result.nextCursor : undefined;
      if (cursor === undefined) break;
    }
    add({ name: 'tools', ok: true, detail: `${tools} tool${tools === 1 ? '' : 's'} listed` });
    while (timings.length < LATENCY_SAMPLES) {
      const { message, headers } = build({});
      const started = performance.now();
      const exchange = await endpoint.post(JSON.stringify(message), headers, signal());
      await readPrivateResponse(exchange, message.id, maxMessageBytes);
      timings.push(performance.now() - started);
    }
    timings.sort((a, b) => a - b);
    add({ name: 'latency', ok: true, detail: `tools/list round trip: median ${timings[Math.floor(timings.length / 2)]!.toFixed(1)} ms over ${timings.length} calls` });
  } catch (error) {
    add({ name: 'tools', ok: false, detail: error instanceof Error ? error.message : String(error), hint: 'the server answered the handshake but not tools/list; check its logs' });
  }
}

function describeServer(info: JsonObject): string {
  const name = typeof info.name === 'string' ? info.name : 'unnamed';
  return typeof info.version === 'string' ? `${name} ${info.version}` : name;
}

function bypassesProxy(host: string, env: Readonly<Record<string, string | undefined>>): boolean {
  const noProxy = (env.no_proxy ?? env.NO_PROXY ?? '').split(/[,\s]+/).filter(Boolean);
  return noProxy.some((entry) => entry === '*' || host === entry.replace(/^\./, '') || host.endsWith(entry.startsWith('.') ? entry : `.${entry}`));
}

function tryTcp(host: string, port: number, timeoutMs: number): Promise<{ ok: boolean; detail: string; hint: string }> {
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = connectTcp({ host, port, timeout: timeoutMs });
    socket.once('connect', () => {
      resolve({ ok: true, detail: `${host}:${port} in ${(performance.now() - started).toFixed(1)} ms`, hint: '' });
      socket.destroy();
    });
    socket.once('timeout', () => {
      resolve({ ok: false, detail: `${host}:${port}: no answer within ${timeoutMs} ms`, hint: 'a firewall or proxy may block it: set HTTPS_PROXY if you need one, or raise --connect-timeout' });
      socket.destroy();
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      resolve({
        ok: false,
        detail: `${host}:${port}: ${error.code ?? error.message}`,
        hint: error.code === 'ECONNREFUSED' ? 'nothing is listening there: check the port in --url, or start the server' : 'check --url and your network',
      });
    });
  });
}

function tryTls(host: string, port: number, config: BridgeConfig, env: Readonly<Record<string, string | undefined>>): Promise<{ ok: boolean; detail: string; hint: string }> {
  const ca = trustedCas({ caFile: config.caFile, env });
  return new Promise((resolve) => {
    const options: ConnectionOptions = { host, port, timeout: config.connectTimeoutMs };
    if (isIP(host) === 0) options.servername = host;
    if (ca !== undefined) options.ca = ca;
    const socket = connectTls(options);
    socket.once('secureConnect', () => {
      const cert = socket.getPeerCertificate();
      const subject = String(cert.subject?.CN ?? host);
      const issuer = String(cert.issuer?.CN ?? cert.issuer?.O ?? 'unknown');
      resolve({ ok: true, detail: `${socket.getProtocol() ?? 'TLS'}; certificate for ${subject}, issued by ${issuer}, valid until ${cert.valid_to}`, hint: '' });
      socket.destroy();
    });
    socket.once('timeout', () => {
      resolve({ ok: false, detail: 'TLS handshake timed out', hint: 'raise --connect-timeout, or check proxies' });
      socket.destroy();
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      resolve({
        ok: false,
        detail: `${error.code ?? 'TLS error'}: ${error.message}`,
        hint: 'the server certificate is not trusted here: pass --ca-file <your-ca.pem> (or set NODE_EXTRA_CA_CERTS); a corporate TLS proxy needs its CA',
      });
    });
  });
}

/**
 * The report with the run's secrets masked in every text a server or the network could have put
 * there (server names, error bodies, WWW-Authenticate), for both the text and the JSON form.
 */
export function redactReport(report: DoctorReport, redact: Redactor): DoctorReport {
  return {
    ...report,
    url: redact(report.url),
    checks: report.checks.map((check) => ({ ...check, name: redact(check.name), detail: redact(check.detail), ...(check.hint === undefined ? {} : { hint: redact(check.hint) }) })),
  };
}

/** The human form: one line per check with ✓ or ✗, and the hint under a failure. */
export function formatReport(report: DoctorReport): string {
  const width = Math.max(...report.checks.map((check) => check.name.length));
  const lines = report.checks.map((check) => {
    const line = `${check.ok ? '✓' : '✗'} ${check.name.padEnd(width)}  ${check.detail}`;
    return check.ok || check.hint === undefined ? line : `${line}\n  ${' '.repeat(width)}  hint: ${check.hint}`;
  });
  lines.push(report.ok ? 'fenbs-mcp can bridge to this server.' : 'fenbs-mcp cannot work with these settings yet: fix the first ✗ above.');
  return `${lines.join('\n')}\n`;
}
