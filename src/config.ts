// Options and environment → one validated, frozen BridgeConfig; pure, throws UsageError.

import { isIP } from 'node:net';
import { LOG_LEVELS } from './logger.js';
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
/** How long shutdown work (session DELETE) may take before the process goes anyway. */
export const SHUTDOWN_GRACE_MS = 800;

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
  readonly logFile: string | undefined;
}

/** What commander hands over: every value still a string or a flag. */
export interface RawOptions {
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
  logFile?: string | undefined;
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
 * the protocol (wire rules §1, §3, §5) or carry a credential into argv, where process lists and
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

function parseHeader(raw: string, tokenEnv: string): readonly [string, string] {
  const colon = raw.indexOf(':');
  const name = colon === -1 ? raw.trim() : raw.slice(0, colon).trim();
  const value = colon === -1 ? '' : raw.slice(colon + 1).trim();
  if (colon === -1 || !TOKEN_CHARS.test(name)) {
    throw new UsageError(`-H expects "Name: value", got "${name}"`, `fenbs-mcp -H "X-Team: platform"`);
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
  if (/[\r\n\0]/.test(value)) throw new UsageError(`-H ${name}: the value contains a line break or NUL`);
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

export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}

function parseUrl(raw: string, allowHttp: boolean, hasToken: boolean): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`invalid URL "${raw}"`, 'fenbs-mcp --url https://example.com/mcp');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new UsageError(`the URL must start with https:// or http://, got "${url.protocol}"`);
  }
  if (url.username !== '' || url.password !== '') {
    throw new UsageError('the URL must not carry a user name or password; give the token through the environment');
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
  /** Reads a token file; injected so this module stays pure. */
  readTextFile: (path: string) => string;
}

export function createConfig({ options, env, readTextFile }: ConfigInputs): BridgeConfig {
  const tokenEnv = options.tokenEnv ?? DEFAULT_TOKEN_ENV;
  if (!TOKEN_CHARS.test(tokenEnv)) throw new UsageError(`--token-env expects a variable name, got "${tokenEnv}"`);
  let token: string | undefined;
  let tokenSource = `env ${tokenEnv}`;
  if (options.tokenFile !== undefined) {
    tokenSource = `file ${options.tokenFile}`;
    try {
      token = readTextFile(options.tokenFile).trim();
    } catch (error) {
      throw new UsageError(`cannot read --token-file ${options.tokenFile}: ${(error as Error).message}`);
    }
  } else {
    token = env[tokenEnv]?.trim();
  }
  if (token === '') token = undefined;
  if (token !== undefined && /[\r\n\0]/.test(token)) throw new UsageError(`the token from ${tokenSource} contains a line break or NUL`);

  if (options.caFile !== undefined) {
    // Checked here, like --token-file: a missing or wrong file is a usage mistake (exit 2), not a
    // crash on the first request.
    let pem: string;
    try {
      pem = readTextFile(options.caFile);
    } catch (error) {
      throw new UsageError(`cannot read --ca-file ${options.caFile}: ${(error as Error).message}`, 'fenbs-mcp --ca-file /path/to/your-ca.pem');
    }
    if (!pem.includes('-----BEGIN CERTIFICATE-----')) {
      throw new UsageError(`--ca-file ${options.caFile} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
    }
  }

  const allowHttp = options.allowHttp === true;
  const url = parseUrl(options.url ?? env.FENBS_MCP_URL ?? DEFAULT_URL, allowHttp, token !== undefined);

  const logLevel = (options.logLevel ?? env.FENBS_MCP_LOG_LEVEL ?? 'info').toLowerCase();
  if (!LOG_LEVELS.includes(logLevel as LevelWithSilent)) {
    throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }

  return Object.freeze({
    url,
    token,
    tokenSource,
    extraHeaders: Object.freeze((options.header ?? []).map((raw) => parseHeader(raw, tokenEnv))),
    requestTimeoutMs: parseNonNegativeInteger(options.requestTimeout, REQUEST_TIMEOUT_MS, '--request-timeout'),
    connectTimeoutMs: parsePositiveInteger(options.connectTimeout, CONNECT_TIMEOUT_MS, '--connect-timeout'),
    streamIdleTimeoutMs: parseNonNegativeInteger(options.streamIdleTimeout, STREAM_IDLE_TIMEOUT_MS, '--stream-idle-timeout'),
    maxLineBytes: parsePositiveInteger(options.maxLineBytes, MAX_LINE_BYTES, '--max-line-bytes'),
    maxMessageBytes: parsePositiveInteger(options.maxMessageBytes, MAX_MESSAGE_BYTES, '--max-message-bytes'),
    shutdownGraceMs: SHUTDOWN_GRACE_MS,
    caFile: options.caFile,
    allowHttp,
    logLevel: logLevel as LevelWithSilent,
    logFile: options.logFile,
  });
}
