// `fenbs-mcp doctor`: checks, in order, everything the bridge needs, and says what to fix.

import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { pino } from 'pino';
import type { BridgeConfig } from '../config/config.js';
import { unusedCredentialWarnings } from '../config/credential-spec.js';
import type { Credential } from '../core/credential.js';
import { createCredential } from '../credentials/create-credential.js';
import type { Endpoint } from '../http/endpoint.js';
import { reachServer, type Reach } from '../connection.js';
import { REQUEST_TIMEOUT_MS } from '../config/config.js';
import { BridgeError, isBridgeError } from '../core/errors.js';
import { isJsonObject, type JsonObject } from '../core/json-rpc.js';
import { REDIRECT_HINT } from '../http/redirects.js';
import { readErrorBody, readPrivateResponse } from '../http/reply-reader.js';
import { createRedactor, maskUrl, type Redactor } from '../logging/redactor.js';
import type { Logger } from '../logging/logger.js';
import { TokenCommandCredential } from '../credentials/token-command.js';
import { cachedOAuthCredential, oauthCacheCheck, oauthGrantCheck, oauthSettingsCheck } from './oauth-check.js';
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  MODERN_VERSION,
  MODERN_VERSION_META_KEY,
  SERVER_INFO_META_KEY,
  SESSION_VERSION,
} from '../core/protocol.js';
import { proxyFor, redactUserinfo } from '../http/dispatcher.js';
import { type HttpExchange } from '../http/send.js';
import { headerValue } from '../http/header-values.js';
import { tryTcp, tryTls } from './network-checks.js';
import { caStoreNote, clientCertificateCheck } from './tls-checks.js';
import { checkSseTransport } from './sse-check.js';
import { mayFallBack } from '../transports/automatic.js';
import { legacySseHint, looksLikeSseUrl, statusError } from '../http/status-errors.js';
import { tryParseJson } from '../http/body-text.js';

export interface Check {
  name: string;
  /** False: this check failed and the bridge cannot work so. */
  ok: boolean;
  /** False when nothing was verified (neither passed nor failed): shown as "not checked", never with a ✓. */
  checked?: false;
  /**
   * True when the bridge works so, but not as the user most likely meant (a credential set and
   * shadowed by another, which the bridge warns about and runs with): shown with `!` and its hint,
   * never with a ✓, and no failure of the verdict.
   */
  warns?: true;
  detail: string;
  hint?: string;
}

export interface DoctorReport {
  ok: boolean;
  url: string;
  /** The protocol revision the server speaks, e.g. '2025-06-18' or '2026-07-28', once known. */
  revision?: string;
  /** The transport it answered on: Streamable HTTP, or the 2024-11-05 HTTP+SSE, once known. */
  transport?: 'streamable-http' | 'sse';
  checks: Check[];
}

/** What runDoctor reports as it goes: a check starting (what it is doing), then the check done. */
export type DoctorProgress = { kind: 'start'; name: string; doing: string } | { kind: 'done'; check: Check };

export interface RunDoctorOptions {
  /** Called as each check starts and as it ends, so a terminal shows what is being waited for. */
  onProgress?: (event: DoctorProgress) => void;
  /** The credential to check with; made from the config (and closed after) otherwise. */
  credential?: Credential;
  /** Where the credential logs and registers the secrets it learns (a token command's token). */
  logger?: Logger;
  redact?: Redactor;
}

const CLIENT_INFO = { name: 'fenbs-mcp-doctor', version: '1' };
const LATENCY_SAMPLES = 5;
/**
 * The per-request deadline when --request-timeout is left at the bridge's default: that default
 * (30 min) is sized for long tool calls, and a doctor waiting 30 min on a silent server helps nobody.
 */
export const DOCTOR_REQUEST_TIMEOUT_MS = 15_000;
const NOT_MCP_HINT = 'this URL does not look like an MCP endpoint: it answers, but not as an MCP server does; check --url (the MCP path is often /mcp)';

/** The deadline of each doctor request: --request-timeout when set, 0 = none, as for the bridge. */
export function doctorRequestTimeoutMs(config: BridgeConfig): number {
  return config.requestTimeoutMs === REQUEST_TIMEOUT_MS ? DOCTOR_REQUEST_TIMEOUT_MS : config.requestTimeoutMs;
}

/** Runs every check in order; a failed check stops the ones that depend on it. */
export async function runDoctor(
  config: BridgeConfig,
  env: Readonly<Record<string, string | undefined>>,
  options: RunDoctorOptions = {},
): Promise<DoctorReport> {
  const checks: Check[] = [];
  const report: DoctorReport = { ok: false, url: maskUrl(config.url), checks };
  const onProgress = options.onProgress ?? (() => undefined);
  const add = (check: Check) => (checks.push(check), onProgress({ kind: 'done', check }), check.ok);
  const begin = (name: string, doing: string) => onProgress({ kind: 'start', name, doing });

  add({ name: 'url', ok: true, detail: maskUrl(config.url) });
  if (config.credential.kind === 'command') begin('credential', 'running --token-command');
  // Which credential the bridge would send, and that it can be had; the run goes on either way.
  const redact = options.redact ?? createRedactor([]);
  const credential =
    options.credential ??
    cachedOAuthCredential(config, env, (secret) => void redact.add(secret)) ??
    (await createCredential(config, {
      env,
      logger: options.logger ?? silentLogger(),
      redact,
      // The credential check below says it, once.
      warn: () => undefined,
    }));
  add(credentialCheck(credential, unusedCredentialWarnings(config.credential)));
  const oauth = oauthCacheCheck(config, env);
  if (oauth !== undefined) add(oauth);
  const settings = oauthSettingsCheck(config);
  if (settings !== undefined) add(settings);
  // Its own line only with a client certificate; the CA store is named on the tls line.
  const client = clientCertificateCheck(config, Date.now());
  if (client !== undefined) add(client);
  if (config.credential.kind === 'none' && config.oauth.grant !== 'authorization-code')
    begin('oauth grant', 'checking the OAuth grant with the authorization server');
  const grant = await oauthGrantCheck(config, env, redact);
  if (grant !== undefined) add(grant);
  try {
    await checkConnection(config, env, credential, report, add, begin, redact);
  } finally {
    if (options.credential === undefined) await credential.close?.();
  }
  report.ok = checks.every((check) => check.ok);
  return report;
}

/** DNS, TCP and TLS (or the proxy), then the requests; a failed check stops the ones after it. */
async function checkConnection(
  config: BridgeConfig,
  env: Readonly<Record<string, string | undefined>>,
  credential: Credential,
  report: DoctorReport,
  add: Add,
  begin: Begin,
  redact: Redactor,
): Promise<void> {
  // The bridge's own rule: doctor checks the path the bridge's requests take.
  const proxy = proxyFor(config.url, env);
  const host = config.url.hostname.replace(/^\[|\]$/g, '');
  const port = Number(config.url.port || (config.url.protocol === 'https:' ? 443 : 80));

  if (proxy !== undefined) {
    add({
      name: 'network',
      ok: true,
      detail: `through the proxy ${redactUserinfo(proxy)} (DNS, TCP and TLS are checked by the request below)${config.url.protocol === 'https:' ? caStoreNote(config, env) : ''}`,
    });
  } else {
    if (isIP(host) === 0) {
      begin('dns', `resolving ${host}`);
      const resolved = await lookup(host, { all: true }).then(
        (addresses) => ({ ok: true as const, detail: addresses.map((a) => a.address).join(', ') }),
        (error: NodeJS.ErrnoException) => ({ ok: false as const, detail: `${host}: ${error.code ?? error.message}` }),
      );
      const hint = 'check the host name in --url and your DNS; behind a corporate proxy set HTTPS_PROXY';
      if (!add({ name: 'dns', ...resolved, ...(resolved.ok ? {} : { hint }) })) return;
    }
    begin('tcp', `connecting to ${host}:${port} (--connect-timeout ${config.connectTimeoutMs} ms)`);
    const tcp = await tryTcp(host, port, config.connectTimeoutMs);
    if (!add({ name: 'tcp', ok: tcp.ok, detail: tcp.detail, ...(tcp.ok ? {} : { hint: tcp.hint }) })) return;
    if (config.url.protocol === 'https:') {
      begin('tls', `TLS handshake with ${host}:${port}`);
      const tls = await tryTls(host, port, config, env);
      if (!add({ name: 'tls', ok: tls.ok, detail: `${tls.detail}${caStoreNote(config, env)}`, ...(tls.ok ? {} : { hint: tls.hint }) })) return;
    }
  }

  const reach = await reachServer(config, { env, logger: silentLogger(), redact, credential });
  try {
    await probe(reach, config, report, add, begin, redact);
  } finally {
    await reach.close();
  }
}

/**
 * Which credential the bridge would send, by its source; never its value. One set but shadowed by
 * it (the bridge's own warning, `unused`) is no pass: the user most likely meant the other one.
 */
function credentialCheck(credential: Credential, unused: readonly string[]): Check {
  const failure = credential instanceof TokenCommandCredential ? credential.lastFailure : undefined;
  if (failure !== undefined) return { name: 'credential', ok: false, detail: failure.message, hint: failure.context.hint ?? '' };
  // The bridge runs with the first one and warns: the same here, not a failure it does not have.
  if (unused.length > 0) {
    return {
      name: 'credential',
      ok: true,
      warns: true,
      detail: `${credential.source} is sent; ${unused.join('; ')}`,
      hint: 'set only the credential you mean: unset or remove the others, or the bridge keeps sending the first',
    };
  }
  // No credential is a fact, not a pass: whether the server needs one is the token check's to say.
  if (credential.source === 'none') return { name: 'credential', ok: true, checked: false, detail: 'none set: requests go without Authorization' };
  return {
    name: 'credential',
    ok: true,
    detail: credential instanceof TokenCommandCredential ? `${credential.source} (ran, and printed a token)` : credential.source,
  };
}

type Add = (check: Check) => boolean;
type Begin = (name: string, doing: string) => void;

let privateIds = 0;
function request(method: string, params: JsonObject): JsonObject & { id: string } {
  return { jsonrpc: '2.0', id: `fenbs-mcp-doctor-${++privateIds}`, method, params };
}

const modernMeta = { [MODERN_VERSION_META_KEY]: MODERN_VERSION, [CLIENT_CAPABILITIES_META_KEY]: {}, [CLIENT_INFO_META_KEY]: CLIENT_INFO };
const modernHeaders = (method: string) => ({ 'mcp-protocol-version': MODERN_VERSION, 'mcp-method': method });

/** What the checks after the first request share. */
interface Probe {
  endpoint: Endpoint;
  /** The run's mask: what a refusal quotes is masked before it is cut. */
  redact: Redactor;
  add: Add;
  begin: Begin;
  /** A fresh deadline for each exchange, whose reason says which request and which option. */
  signal: (method: string) => AbortSignal;
  maxMessageBytes: number;
  /**
   * --transport auto: tries the 2024-11-05 HTTP+SSE stream after a refused initialize, as the bridge
   * does; true when it answered there (and its checks are added).
   */
  fallBack?: () => Promise<boolean>;
  /** The hint a refused POST to an `/sse` URL gets instead of the generic one. */
  sseUrlHint?: string;
}

/** A check that failed: what was seen, and what to do. */
class CheckFailure extends Error {
  constructor(
    message: string,
    readonly hint: string,
  ) {
    super(message);
  }
}

function deadlineFor(timeoutMs: number): (method: string) => AbortSignal {
  return (method) => {
    const controller = new AbortController();
    if (timeoutMs > 0) {
      // The reason is a BridgeError so the request's failure names the deadline, not "aborted".
      const reason = new BridgeError('REQUEST_TIMEOUT', `no answer to ${method} within ${timeoutMs} ms (--request-timeout)`, {
        hint: 'the server took the connection but did not answer: check that --url is the MCP endpoint and the server is up, or raise --request-timeout',
      });
      setTimeout(() => controller.abort(reason), timeoutMs).unref();
    }
    return controller.signal;
  };
}

/** Sends one request and reads its response; a redirect, a timeout or a missing answer throws. */
async function exchangeOnce(
  probe: Probe,
  message: JsonObject & { id: string },
  headers: Record<string, string>,
): Promise<{ response: JsonObject; headers: HttpExchange['headers'] }> {
  const method = String(message.method);
  const signal = probe.signal(method);
  const exchange = await probe.endpoint.post(JSON.stringify(message), headers, signal);
  await refuseRedirect(probe.endpoint, exchange, method);
  if (exchange.status === 401 || exchange.status === 403) throw await refusalOf(probe.endpoint, exchange, method, probe.redact);
  const response = await readPrivateResponse(exchange, message.id, { maxMessageBytes: probe.maxMessageBytes, mask: probe.redact, signal });
  return { response, headers: exchange.headers };
}

/** A 401 or 403, judged by the rule every command's refusal is judged by: what to do is the bridge's own hint. */
async function refusalOf(endpoint: Endpoint, exchange: HttpExchange, method: string, redact: Redactor): Promise<BridgeError> {
  const text = await readErrorBody(exchange);
  return statusError(method, exchange, { body: text, parsed: tryParseJson(text), redact, ...endpoint.refusalContext(exchange), hadSession: false });
}

/** A 3xx the endpoint did not follow is refused, as by the bridge; the failure names where it pointed (masked). */
async function refuseRedirect(endpoint: Endpoint, exchange: HttpExchange, method: string): Promise<void> {
  if (exchange.status < 300 || exchange.status >= 400) return;
  await readErrorBody(exchange).catch(() => undefined);
  const raw = headerValue(exchange.headers, 'location');
  const location = raw === undefined ? '(no Location)' : maskUrl(URL.canParse(raw, endpoint.url.href) ? new URL(raw, endpoint.url) : raw);
  throw new CheckFailure(
    `the server redirected ${method} (${exchange.status}) to ${location}; doctor, like the bridge, follows only a 307 or 308 to the same origin`,
    REDIRECT_HINT,
  );
}

function failureOf(endpoint: Endpoint, error: unknown): { detail: string; hint?: string } {
  if (error instanceof CheckFailure) return { detail: error.message, hint: error.hint };
  const failure = isBridgeError(error) ? error : endpoint.failure(error, undefined);
  return { detail: failure.message, ...(failure.context.hint === undefined ? {} : { hint: failure.context.hint }) };
}

async function probe(reach: Reach, config: BridgeConfig, report: DoctorReport, add: Add, begin: Begin, redact: Redactor): Promise<void> {
  const { endpoint } = reach;
  const signal = deadlineFor(doctorRequestTimeoutMs(config));
  const overSse = () =>
    checkSseTransport({
      config,
      reach,
      redact,
      timeoutMs: doctorRequestTimeoutMs(config),
      add,
      begin,
      onRevision: (revision) => {
        report.revision = revision;
        report.transport = 'sse';
      },
    });
  if (config.transport === 'sse') {
    // --transport sse: no POST first, as in the bridge.
    const sse = await overSse();
    if (!sse.ok) {
      const failure = sse.error;
      add({
        name: failure?.code === 'REMOTE_AUTH' ? 'token' : 'transport',
        ok: false,
        detail: failure?.message ?? 'the HTTP+SSE event stream did not open',
        ...(failure?.context.hint === undefined ? {} : { hint: failure.context.hint }),
      });
    }
    return;
  }
  // Which revision: probe server/discover first, as dual-revision clients do (2026-07-28 versioning §Backward Compatibility).
  const discover = request('server/discover', { _meta: modernMeta });
  begin('token', `POST server/discover to ${maskUrl(config.url)}`);
  let exchange;
  const discoverSignal = signal('server/discover');
  try {
    exchange = await endpoint.post(JSON.stringify(discover), modernHeaders('server/discover'), discoverSignal);
    await refuseRedirect(endpoint, exchange, 'server/discover');
  } catch (error) {
    add({ name: 'connect', ok: false, ...failureOf(endpoint, error) });
    return;
  }
  const { credential } = endpoint;
  const sent = exchange.sentAuthorization !== undefined;
  // Where a token comes from, or where to set one when none is set.
  const source = credential.source === 'none' ? config.tokenSource : credential.source;
  if (exchange.status === 401 || exchange.status === 403) {
    const www = headerValue(exchange.headers, 'www-authenticate');
    const refusal = await refusalOf(endpoint, exchange, 'server/discover', redact);
    add({
      name: 'token',
      ok: false,
      detail: `${exchange.status} ${sent ? `with the token from ${source}` : 'and no token is set'}${www === undefined ? '' : `; WWW-Authenticate: ${www}`}`,
      hint: refusal.context.hint ?? '',
    });
    return;
  }
  // The token passes only when the server answered with JSON-RPC: an HTML page, a 404 or a 405 comes
  // from something that never looked at the request, so it says nothing about the token.
  let discoverAnswer: JsonObject | undefined;
  try {
    discoverAnswer = await readPrivateResponse(exchange, discover.id, { maxMessageBytes: config.maxMessageBytes, mask: redact, signal: discoverSignal });
  } catch {
    // No 2026-07-28 server: the 2025-06-18 initialize handshake below decides.
  }
  const settleToken = tokenSettler(add, sent, source, exchange.status);
  if (discoverAnswer !== undefined) settleToken('server/discover');
  if (endpoint.url.href !== config.url.href) {
    // The endpoint followed a same-origin 307/308, as the bridge does: said, so --url can skip the hop.
    add({
      name: 'redirect',
      ok: true,
      detail: `the server moved ${maskUrl(config.url)} to ${maskUrl(endpoint.url)} (same origin: followed, as the bridge does); --url ${maskUrl(endpoint.url)} saves the extra round trip`,
    });
  }

  // A discover result names the revisions the server speaks (2026-07-28 lifecycle §Discovery).
  const result = discoverAnswer?.result;
  const discovered = isJsonObject(result) && Array.isArray(result.supportedVersions) ? result : undefined;
  const probe: Probe = {
    endpoint,
    redact,
    add,
    begin,
    signal,
    maxMessageBytes: config.maxMessageBytes,
    ...(config.transport === 'auto' ? { fallBack: async () => (await overSse()).ok } : {}),
    ...(looksLikeSseUrl(config.url) ? { sseUrlHint: legacySseHint(config.transport) } : {}),
  };
  if (discovered !== undefined) await checkModern(probe, discovered, report);
  else await checkSessionRevision(probe, report, discoverAnswer === undefined ? settleToken : undefined);
}

/** Says how the token fared, once: accepted when `answeredBy` names the request the server answered, not checked otherwise. */
/** Settles the token line once: accepted by the request named, refused at initialize, or not checked. */
type TokenSettler = (answeredBy: string | undefined, refused?: { status: number; hint: string }) => void;

function tokenSettler(add: Add, sent: boolean, source: string, discoverStatus: number): TokenSettler {
  let settled = false;
  return (answeredBy, refused) => {
    if (settled) return;
    settled = true;
    if (refused !== undefined) {
      add({
        name: 'token',
        ok: false,
        detail: `${refused.status} to initialize ${sent ? `with the token from ${source}` : 'and no token is set'}`,
        hint: refused.hint,
      });
      return;
    }
    if (answeredBy !== undefined) {
      add({
        name: 'token',
        ok: true,
        detail: sent ? `accepted (from ${source}): the server answered ${answeredBy}` : `none needed: the server answered ${answeredBy} without asking for one`,
      });
      return;
    }
    add({
      name: 'token',
      ok: true,
      checked: false,
      detail: `not checked: the server answered ${discoverStatus} and no MCP request, so nothing shows it ${sent ? `read the token from ${source}` : 'needs no token'}`,
    });
  };
}

async function checkModern(probe: Probe, discovered: JsonObject, report: DoctorReport): Promise<void> {
  const { add } = probe;
  report.revision = MODERN_VERSION;
  const info = isJsonObject(discovered._meta) && isJsonObject(discovered._meta[SERVER_INFO_META_KEY]) ? discovered._meta[SERVER_INFO_META_KEY] : {};
  add({
    name: 'protocol',
    ok: true,
    detail: `${MODERN_VERSION} (server/discover, no handshake); versions ${(discovered.supportedVersions as unknown[]).join(', ')}; server ${describeServer(info)}; capabilities ${Object.keys(isJsonObject(discovered.capabilities) ? discovered.capabilities : {}).join(', ') || 'none'}; transport Streamable HTTP`,
  });
  report.transport = 'streamable-http';
  await countToolsAndTime(probe, (params) => ({ message: request('tools/list', { ...params, _meta: modernMeta }), headers: modernHeaders('tools/list') }));
}

/**
 * What an initialize result lacks of the shape 2025-06-18 lifecycle §Initialization gives it:
 * `protocolVersion` (string), `capabilities` (object), `serverInfo` (object with a name).
 */
function missingFromInitialize(result: JsonObject): string[] {
  const missing: string[] = [];
  if (typeof result.protocolVersion !== 'string') missing.push('protocolVersion');
  if (!isJsonObject(result.capabilities)) missing.push('capabilities');
  if (!isJsonObject(result.serverInfo) || typeof result.serverInfo.name !== 'string') missing.push('serverInfo.name');
  return missing;
}

async function checkSessionRevision(probe: Probe, report: DoctorReport, settleToken?: TokenSettler): Promise<void> {
  const { endpoint, add, begin, signal } = probe;
  const initialize = request('initialize', { protocolVersion: SESSION_VERSION, capabilities: {}, clientInfo: CLIENT_INFO });
  let sessionHeaders: Record<string, string> = {};
  begin('protocol', `initialize (${SESSION_VERSION})`);
  try {
    let answered;
    try {
      answered = await exchangeOnce(probe, initialize, { 'mcp-method': 'initialize' });
    } catch (error) {
      if (error instanceof CheckFailure) {
        settleToken?.(undefined);
        throw error;
      }
      const { detail, hint } = failureOf(endpoint, error);
      if (isBridgeError(error) && error.code === 'REMOTE_AUTH' && settleToken !== undefined) {
        // A 2025 server that refuses the credential (or its absence) at initialize: that is the
        // token's failure, said as the bridge says it, and the revision stays unknown behind it.
        settleToken(undefined, { status: Number(error.context.status), hint: hint ?? '' });
        add({ name: 'protocol', ok: true, checked: false, detail: 'not checked: the server refused initialize before the handshake (see token)' });
        return;
      }
      // The bridge's own rule for falling back (transports §Backwards Compatibility), on the
      // status and body of the refused initialize.
      const status = isBridgeError(error) ? error.context.status : undefined;
      const excerpt = isBridgeError(error) ? error.context.bodyExcerpt : undefined;
      if (
        probe.fallBack !== undefined &&
        typeof status === 'number' &&
        mayFallBack(status, typeof excerpt === 'string' ? tryParseJson(excerpt) : undefined) &&
        (await probe.fallBack())
      ) {
        // The token went on the stream's GET and on the initialize posted to its endpoint: it is
        // verified only if that initialize was answered (the SSE check then named the revision).
        settleToken?.(report.revision === undefined ? undefined : 'initialize over HTTP+SSE');
        return;
      }
      settleToken?.(undefined);
      throw new CheckFailure(
        `neither server/discover nor initialize worked: ${detail}`,
        isBridgeError(error) && error.code === 'REQUEST_TIMEOUT' && hint !== undefined ? hint : (probe.sseUrlHint ?? NOT_MCP_HINT),
      );
    }
    const { response } = answered;
    settleToken?.(isJsonObject(response.result) && missingFromInitialize(response.result).length === 0 ? 'initialize' : undefined);
    if (!isJsonObject(response.result)) throw new CheckFailure(`initialize failed: ${JSON.stringify(response.error ?? response)}`, NOT_MCP_HINT);
    const result = response.result;
    const missing = missingFromInitialize(result);
    if (missing.length > 0) throw new CheckFailure(`the initialize result has no ${missing.join(', ')}: not an MCP initialize result`, NOT_MCP_HINT);
    const sessionId = headerValue(answered.headers, 'mcp-session-id');
    const version = result.protocolVersion as string;
    report.revision = version;
    sessionHeaders = { 'mcp-protocol-version': version, ...(sessionId === undefined ? {} : { 'mcp-session-id': sessionId }) };
    add({
      name: 'protocol',
      ok: true,
      detail: `${version} (initialize handshake, ${sessionId === undefined ? 'no session' : 'with a session'}); server ${describeServer(result.serverInfo as JsonObject)}; capabilities ${Object.keys(result.capabilities as JsonObject).join(', ') || 'none'}; transport Streamable HTTP`,
    });
    report.transport = 'streamable-http';
    const initialized = await endpoint.post(
      JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      { ...sessionHeaders, 'mcp-method': 'notifications/initialized' },
      signal('notifications/initialized'),
    );
    await readErrorBody(initialized);
  } catch (error) {
    if (!report.checks.some((check) => check.name === 'protocol')) {
      add({ name: 'protocol', ok: false, ...failureOf(endpoint, error) });
      return;
    }
  }
  try {
    await countToolsAndTime(probe, (params) => ({ message: request('tools/list', params), headers: { ...sessionHeaders, 'mcp-method': 'tools/list' } }));
  } finally {
    if (sessionHeaders['mcp-session-id'] !== undefined) {
      // Leave no probe session behind: the server keeps a session until it is DELETEd (2025-06-18 transports §Session Management).
      await endpoint.delete(sessionHeaders, signal('DELETE')).then(
        (exchange) => readErrorBody(exchange),
        () => undefined,
      );
    }
  }
}

async function countToolsAndTime(
  probe: Probe,
  build: (params: JsonObject) => { message: JsonObject & { id: string }; headers: Record<string, string> },
): Promise<void> {
  const { endpoint, add, begin } = probe;
  let tools = 0;
  let cursor: string | undefined;
  const timings: number[] = [];
  begin('tools', 'tools/list');
  try {
    for (let page = 0; page < 50; page++) {
      const { message, headers } = build(cursor === undefined ? {} : { cursor });
      const started = performance.now();
      const { response } = await exchangeOnce(probe, message, headers);
      timings.push(performance.now() - started);
      if (!isJsonObject(response.result))
        throw new CheckFailure(
          `tools/list failed: ${JSON.stringify(response.error ?? response)}`,
          'the server answered the handshake but not tools/list; check its logs',
        );
      // A tools/list result carries a `tools` array (2025-06-18 server/tools §Listing Tools).
      if (!Array.isArray(response.result.tools)) throw new CheckFailure('the tools/list result has no tools array: not an MCP tools/list result', NOT_MCP_HINT);
      tools += response.result.tools.length;
      cursor = typeof response.result.nextCursor === 'string' ? response.result.nextCursor : undefined;
      if (cursor === undefined) break;
    }
    add({ name: 'tools', ok: true, detail: `${tools} tool${tools === 1 ? '' : 's'} listed` });
  } catch (error) {
    const failure = failureOf(endpoint, error);
    add({ name: 'tools', ok: false, detail: failure.detail, hint: failure.hint ?? 'the server answered the handshake but not tools/list; check its logs' });
    return;
  }
  begin('latency', `timing ${LATENCY_SAMPLES} tools/list round trips`);
  try {
    while (timings.length < LATENCY_SAMPLES) {
      const { message, headers } = build({});
      const started = performance.now();
      await exchangeOnce(probe, message, headers);
      timings.push(performance.now() - started);
    }
    timings.sort((a, b) => a - b);
    add({
      name: 'latency',
      ok: true,
      detail: `tools/list round trip: median ${timings[Math.floor(timings.length / 2)]!.toFixed(1)} ms over ${timings.length} calls`,
    });
  } catch (error) {
    add({ name: 'latency', ok: false, ...failureOf(endpoint, error) });
  }
}

function describeServer(info: JsonObject): string {
  const name = typeof info.name === 'string' ? info.name : 'unnamed';
  return typeof info.version === 'string' ? `${name} ${info.version}` : name;
}

/** Doctor says everything in its report; the bridge's own log lines would only repeat it. */
function silentLogger(): Logger {
  return pino({ level: 'silent' }, { write: () => undefined });
}
