// Options and environment → one validated, frozen BridgeConfig; pure, throws UsageError.

import { X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { LOG_LEVELS } from './logger.js';
import { maskUrl } from './secrets.js';
import { parseOAuthSettings, type OAuthRawOptions, type OAuthSettings } from './oauth/settings.js';
import type { LevelWithSilent } from 'pino';

export const DEFAULT_URL = 'https://fenbs.ai/api/mcp';
export const DEFAULT_TOKEN_ENV = 'FENBS_TOKEN';
/** Long tool calls are normal; a fixed 60 s is the complaint users have about other bridges. */
export const REQUEST_TIMEOUT_MS = 30 * 60_000;
export const CONNECT_TIMEOUT_MS = 10_000;
/** 0 = off: a quiet but alive stream is bounded by the request deadline, never killed for silence. */
export const STREAM_IDLE_TIMEOUT_MS = 0;
export const MAX_LINE_BYTES = 64 * 1024 * 1024;
export const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
/**
 * The longest timer Node keeps (2^31 - 1 ms, about 24.8 days): a larger delay fires after 1 ms
 * with a TimeoutOverflowWarning, so larger timeouts are refused at start.
 */
export const MAX_TIMEOUT_MS = 2_147_483_647;
/** A token file holds one token; anything larger is the wrong file, and is not read whole. */
export const MAX_TOKEN_FILE_BYTES = 64 * 1024;
/** Room for a full CA bundle (Mozilla's is about 250 KB) and more; a larger file is the wrong one. */
export const MAX_CA_FILE_BYTES = 16 * 1024 * 1024;
/** How long shutdown work (session DELETE) may take before the process goes anyway. */
export const SHUTDOWN_GRACE_MS = 800;

/** The proxy variables undici's EnvHttpProxyAgent reads, in either case. */
const PROXY_VARIABLES = ['https_proxy', 'HTTPS_PROXY', 'http_proxy', 'HTTP_PROXY'] as const;

export const LOG_FORMATS = ['json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export interface BridgeConfig {
  readonly url: URL;
  readonly token: string | undefined;
  /** Where the token came from, for messages: `env FENBS_TOKEN` or `file …`. */
  readonly tokenSource: string;
  readonly extraHeaders: readonly (readonly [string, string])[];
  readonly requestTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly streamIdleTimeoutMs: number;
  readonly maxLineBytes: number;
  readonly maxMessageBytes: number;
  readonly shutdownGraceMs: number;
  readonly caFile: string | undefined;
  readonly allowHttp: boolean;
  readonly logLevel: LevelWithSilent;
  /** How stderr shows the logs; undefined = readable lines on a terminal, JSON otherwise. */
  readonly logFormat: LogFormat | undefined;
  readonly logFile: string | undefined;
  /** The OAuth sign-in options, used when no other credential is set. */
  readonly oauth: OAuthSettings;
}

/** What commander hands over: every value still a string or a flag. */
export interface RawOptions extends OAuthRawOptions {
  url?: string | undefined;
  tokenEnv?: string | undefined;
  tokenFile?: string | undefined;
  header?: string[] | undefined;
  requestTimeout?: string | undefined;
  connectTimeout?: string | undefined;
  streamIdleTimeout?: string | undefined;
  maxLineBytes?: string | undefined;
  maxMessageBytes?: string | undefined;
  caFile?: string | undefined;
  allowHttp?: boolean | undefined;
  logLevel?: string | undefined;
  logFormat?: string | undefined;
  logFile?: string | undefined;
}

/** Thrown by a `readTextFile` when the file holds more than the bytes the caller allows. */
export class FileTooLargeError extends Error {
  override readonly name = 'FileTooLargeError';
  constructor(
    readonly path: string,
    readonly maxBytes: number,
  ) {
    super(`${path} is larger than ${maxBytes} bytes`);
  }
}

/** A mistake in how the bridge was started: one message on stderr and exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  /** The one line to run instead, when there is one. */
  readonly fix: string | undefined;
  constructor(message: string, fix?: string) {
    super(message);
    this.fix = fix;
  }
}

/**
 * Headers the bridge sets itself from the message and its state. A user value would contradict
 * the protocol (the Streamable HTTP transport has the client set Accept, Content-Type, the session
 * and version headers, and the 2026-07-28 Mcp-* headers from each message) or carry a credential into argv, where process lists and
 * shell history show it.
 */
const OWNED_HEADERS = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'content-type',
  'content-length',
  'accept',
  'accept-encoding',
  'mcp-protocol-version',
  'mcp-method',
  'mcp-name',
  'mcp-session-id',
  'last-event-id',
  'host',
  'connection',
  'transfer-encoding',
]);

const CREDENTIAL_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie']);
const TOKEN_CHARS = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * What an HTTP field value may hold (RFC 9110 §5.5: VCHAR, obs-text, SP, HTAB), as one character
 * per byte: undici (like Node's http) refuses anything else, so such a value would fail every
 * request. Characters above U+00FF have no single byte; control characters are never allowed.
 */
const FIELD_VALUE_CHAR = /^[\t\x20-\x7E\x80-\xFF]$/;

/** Why `value` cannot be sent as a header value, or undefined when it can; never repeats the value. */
function fieldValueProblem(value: string): string | undefined {
  for (const char of value) {
    if (FIELD_VALUE_CHAR.test(char)) continue;
    const code = char.codePointAt(0)!;
    if (code === 0x0a || code === 0x0d) return 'a line break';
    if (code < 0x20 || code === 0x7f) return 'a control character';
    return 'a character outside Latin-1 (HTTP header values are bytes; send such text encoded)';
  }
  return undefined;
}

function parseHeader(raw: string, tokenEnv: string): readonly [string, string] {
  const colon = raw.indexOf(':');
  const name = colon === -1 ? '' : raw.slice(0, colon).trim();
  const value = colon === -1 ? '' : raw.slice(colon + 1).trim();
  if (colon === -1 || !TOKEN_CHARS.test(name)) {
    // The text is not repeated: without a colon it may be "Authorization Bearer <token>".
    throw new UsageError(
      colon === -1 ? '-H expects "Name: value" with a colon after the name' : '-H expects "Name: value"; the name may hold only letters, digits and !#$%&\'*+-.^_`|~',
      `fenbs-mcp -H "X-Team: platform"`,
    );
  }
  const lower = name.toLowerCase();
  if (CREDENTIAL_HEADERS.has(lower)) {
    // Never echo the value: it is the secret we are refusing to take from argv.
    throw new UsageError(
      `-H ${name} is refused: credentials on the command line show up in process lists and shell history`,
      `put the token in the environment instead: ${tokenEnv}=<token> fenbs-mcp (or --token-file <path>)`,
    );
  }
  if (OWNED_HEADERS.has(lower) || lower.startsWith('mcp-param-')) {
    throw new UsageError(`-H ${name} is refused: the bridge sets that header itself for every message`);
  }
  const problem = fieldValueProblem(value);
  if (problem !== undefined) throw new UsageError(`-H ${name}: the value contains ${problem}, which no HTTP request can carry`);
  return [name, value] as const;
}

function parseNonNegativeInteger(raw: string | undefined, fallback: number, option: string): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new UsageError(`${option} expects a whole number, got "${raw}"`);
  const value = Number(raw.trim());
  if (!Number.isSafeInteger(value)) throw new UsageError(`${option} is too large: ${raw}`);
  return value;
}

function parsePositiveInteger(raw: string | undefined, fallback: number, option: string): number {
  const value = parseNonNegativeInteger(raw, fallback, option);
  if (value === 0) throw new UsageError(`${option} must be at least 1`);
  return value;
}

/** A timeout in ms; 0 means none when `zeroMeansNone`, else the value must be at least 1. */
function parseTimeout(raw: string | undefined, fallback: number, option: string, zeroMeansNone: boolean): number {
  const value = zeroMeansNone ? parseNonNegativeInteger(raw, fallback, option) : parsePositiveInteger(raw, fallback, option);
  if (value > MAX_TIMEOUT_MS) {
    throw new UsageError(
      `${option} is at most ${MAX_TIMEOUT_MS} ms (about 24.8 days, the longest timer Node keeps), got ${raw ?? value}${zeroMeansNone ? '; 0 means no deadline' : ''}`,
      zeroMeansNone ? `fenbs-mcp ${option} 0` : undefined,
    );
  }
  return value;
}

export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}

/**
 * A URL typed without its scheme (`localhost:3000/mcp`, `127.0.0.1:3000`) as the user most likely
 * meant it: http:// for a loopback host (local servers rarely have TLS), https:// otherwise.
 */
export function withLikelyScheme(raw: string): string | undefined {
  const text = raw.trim();
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text) || text === '') return undefined;
  const candidate = `http://${text}`;
  if (!URL.canParse(candidate)) return undefined;
  const url = new URL(candidate);
  // Only what looks like a host: a name with a dot, an address, a port, or localhost.
  if (!/[.:]/.test(url.host) && url.hostname !== 'localhost') return undefined;
  return isLoopbackHost(url.hostname) ? candidate : `https://${text}`;
}

/** `source` names where the URL came from (`--url`, `FENBS_MCP_URL`), so the message points at it. */
function parseUrl(raw: string, source: string, allowHttp: boolean, hasToken: boolean): URL {
  const likely = withLikelyScheme(raw);
  const fix = likely === undefined ? 'fenbs-mcp --url https://example.com/mcp' : source === '--url' ? `fenbs-mcp --url ${maskUrl(likely)}` : `${source}=${maskUrl(likely)}`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    // Masked: a URL that does not parse may still carry a password or an API key.
    throw new UsageError(`${source}: invalid URL "${maskUrl(raw)}"${likely === undefined ? '' : ' (no http:// or https:// in front)'}`, fix);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new UsageError(`${source}: the URL must start with https:// or http://, got "${maskUrl(raw)}"`, fix);
  }
  if (url.username !== '' || url.password !== '') {
    throw new UsageError(`${source}: the URL must not carry a user name or password; give the token through the environment`);
  }
  if (url.protocol === 'http:' && hasToken && !allowHttp && !isLoopbackHost(url.hostname)) {
    throw new UsageError(
      `refusing to send the token over plain http:// to ${url.host}: anyone on the network path could read it`,
      'use an https:// URL, or pass --allow-http if this network is trusted',
    );
  }
  return url;
}

export interface ConfigInputs {
  options: RawOptions;
  env: Readonly<Record<string, string | undefined>>;
  /**
   * Reads a text file (injected so this module stays pure); throws `FileTooLargeError` rather
   * than read more than `maxBytes`.
   */
  readTextFile: (path: string, maxBytes: number) => string;
}

function readOptionFile(readTextFile: ConfigInputs['readTextFile'], option: string, path: string, maxBytes: number, fix?: string): string {
  try {
    return readTextFile(path, maxBytes);
  } catch (error) {
    if (error instanceof FileTooLargeError) {
      throw new UsageError(`${option} ${path} is larger than ${maxBytes} bytes: it cannot be the right file`, fix);
    }
    throw new UsageError(`cannot read ${option} ${path}: ${(error as Error).message}`, fix);
  }
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/** How many PEM blocks of `pem` hold a certificate that parses. */
function countCertificates(pem: string): number {
  let loaded = 0;
  for (const [block] of pem.matchAll(PEM_CERTIFICATE)) {
    try {
      new X509Certificate(block);
      loaded++;
    } catch {
      // A damaged block; counted out, and refused below if no block is left.
    }
  }
  return loaded;
}

export function createConfig({ options, env, readTextFile }: ConfigInputs): BridgeConfig {
  const tokenEnv = options.tokenEnv ?? DEFAULT_TOKEN_ENV;
  if (!TOKEN_CHARS.test(tokenEnv)) throw new UsageError(`--token-env expects a variable name, got "${tokenEnv}"`);
  let token: string | undefined;
  let tokenSource = `env ${tokenEnv}`;
  if (options.tokenFile !== undefined) {
    tokenSource = `file ${options.tokenFile}`;
    token = readOptionFile(readTextFile, '--token-file', options.tokenFile, MAX_TOKEN_FILE_BYTES).trim();
    // The user named a file, so an empty one is a mistake, not "no token".
    if (token === '') throw new UsageError(`--token-file ${options.tokenFile} is empty: it must hold the bearer token`);
  } else {
    token = env[tokenEnv]?.trim();
  }
  if (token === '') token = undefined;
  // Sent as `Authorization: Bearer <token>`, so it must be a valid header value; never repeated.
  const tokenProblem = token === undefined ? undefined : fieldValueProblem(token);
  if (tokenProblem !== undefined) throw new UsageError(`the token from ${tokenSource} contains ${tokenProblem}, so it cannot be sent in an Authorization header`);

  if (options.caFile !== undefined) {
    // Checked here, like --token-file: a missing or wrong file is a usage mistake (exit 2), not a
    // TLS failure on every request.
    const fix = 'fenbs-mcp --ca-file /path/to/your-ca.pem';
    const pem = readOptionFile(readTextFile, '--ca-file', options.caFile, MAX_CA_FILE_BYTES, fix);
    if (!pem.includes('-----BEGIN CERTIFICATE-----')) {
      throw new UsageError(`--ca-file ${options.caFile} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`, fix);
    }
    if (countCertificates(pem) === 0) {
      throw new UsageError(`--ca-file ${options.caFile} holds no usable certificate: no PEM block in it parses as X.509`, fix);
    }
  }

  const allowHttp = options.allowHttp === true;
  // A proxy URL undici cannot use would fail the start with "Invalid URL": refused here, naming
  // the variable.
  for (const name of PROXY_VARIABLES) {
    const value = env[name];
    if (value === undefined || value.trim() === '') continue;
    const protocol = URL.canParse(value) ? new URL(value).protocol : undefined;
    if (protocol !== 'http:' && protocol !== 'https:') {
      // The value is not repeated: proxy settings often carry a password, in forms no masking can tell.
      throw new UsageError(`${name} is not an http:// or https:// proxy URL`, `${name}=http://proxy.example.com:3128 (or unset it)`);
    }
  }

  // An empty variable is unset: a desktop config may pass an optional setting left blank.
  const envUrl = env.FENBS_MCP_URL?.trim() === '' ? undefined : env.FENBS_MCP_URL;
  const [rawUrl, urlSource] = options.url !== undefined ? [options.url, '--url'] : envUrl !== undefined ? [envUrl, 'FENBS_MCP_URL'] : [DEFAULT_URL, 'the default URL'];
  const url = parseUrl(rawUrl, urlSource, allowHttp, token !== undefined);

  const envLevel = env.FENBS_MCP_LOG_LEVEL?.trim() === '' ? undefined : env.FENBS_MCP_LOG_LEVEL;
  const levelSource = options.logLevel !== undefined ? '--log-level' : 'FENBS_MCP_LOG_LEVEL';
  const logLevel = (options.logLevel ?? envLevel ?? 'info').toLowerCase();
  if (!LOG_LEVELS.includes(logLevel as LevelWithSilent)) {
    throw new UsageError(`${levelSource} must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const logFormat = options.logFormat?.toLowerCase();
  if (logFormat !== undefined && !(LOG_FORMATS as readonly string[]).includes(logFormat)) {
    throw new UsageError(`--log-format must be json or pretty, got "${logFormat}"`);
  }

  return Object.freeze({
    url,
    token,
    tokenSource,
    extraHeaders: Object.freeze((options.header ?? []).map((raw) => parseHeader(raw, tokenEnv))),
    requestTimeoutMs: parseTimeout(options.requestTimeout, REQUEST_TIMEOUT_MS, '--request-timeout', true),
    connectTimeoutMs: parseTimeout(options.connectTimeout, CONNECT_TIMEOUT_MS, '--connect-timeout', false),
    streamIdleTimeoutMs: parseTimeout(options.streamIdleTimeout, STREAM_IDLE_TIMEOUT_MS, '--stream-idle-timeout', true),
    maxLineBytes: parsePositiveInteger(options.maxLineBytes, MAX_LINE_BYTES, '--max-line-bytes'),
    maxMessageBytes: parsePositiveInteger(options.maxMessageBytes, MAX_MESSAGE_BYTES, '--max-message-bytes'),
    shutdownGraceMs: SHUTDOWN_GRACE_MS,
    caFile: options.caFile,
    allowHttp,
    logLevel: logLevel as LevelWithSilent,
    logFormat: logFormat as LogFormat | undefined,
    logFile: options.logFile,
    oauth: parseOAuthSettings(options, env, readTextFile),
  });
}
