// Options and environment → one validated, frozen BridgeConfig; pure, throws UsageError.

import { LOG_LEVELS } from '../logging/logger.js';
import { UsageError } from '../core/errors.js';
import { TOKEN_CHARS } from '../core/http-field-grammar.js';
import { parseOAuthSettings, type OAuthRawOptions, type OAuthSettings } from './oauth-settings.js';
import type { LevelWithSilent } from 'pino';
import { parseToolPatterns, type ToolFilterOption } from './tool-patterns.js';
import type { ClientCertificate } from './client-certificate.js';
import { chooseCredential, refuseUnsendableToken, type CredentialSpec } from './credential-spec.js';
import { parseHeader, type HeaderSecret } from './header-option.js';
import { readOptionFile, withHomeExpanded, type ReadTextFile } from './option-files.js';
import { parseTlsOptions, type TlsRawOptions } from './tls-options.js';
import { parseUrl } from './url-option.js';

export const DEFAULT_URL = 'https://fenbs.ai/api/mcp';
export const DEFAULT_TOKEN_ENV = 'FENBS_TOKEN';
/** Long tool calls are normal; a fixed 60 s is the complaint users have about other bridges. */
export const REQUEST_TIMEOUT_MS = 30 * 60_000;
/**
 * The deadline of each request of a shell command (tools, call…) without --request-timeout: a person
 * is waiting at a terminal, and a server that accepts the connection but never answers must not
 * look like a hang for half an hour. Long enough for a slow tool; the command says it is still
 * waiting long before.
 */
export const SHELL_REQUEST_TIMEOUT_MS = 120_000;
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
/** How long shutdown work (session DELETE) may take before the process goes anyway. */
export const SHUTDOWN_GRACE_MS = 800;
/** --keep-alive default: off. A ping is a request the server must handle, so it is sent only when asked for. */
export const KEEP_ALIVE_MS = 0;
/**
 * The shortest --keep-alive. Servers that reap idle sessions do so after minutes (gateways, the SDK
 * examples' cleanup loops); a ping more often than once a second keeps nothing more alive and turns
 * the bridge into a load generator, and a value below it is most likely seconds typed as
 * milliseconds (`--keep-alive 30`).
 */
export const MIN_KEEP_ALIVE_MS = 1_000;

/** The proxy variables undici's EnvHttpProxyAgent reads, in either case. */
export const PROXY_VARIABLES = ['https_proxy', 'HTTPS_PROXY', 'http_proxy', 'HTTP_PROXY'] as const;

export const LOG_FORMATS = ['json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];
/** auto: a 2025-era client meeting a 2026-07-28-only server is translated; passthrough: never. */
export const PROTOCOL_MODES = ['auto', 'passthrough'] as const;
export type ProtocolMode = (typeof PROTOCOL_MODES)[number];
/**
 * auto: Streamable HTTP, falling back to the 2024-11-05 HTTP+SSE transport when the first POST
 * says this URL does not take POSTs; streamable-http or sse: only that one.
 */
export const TRANSPORT_MODES = ['auto', 'streamable-http', 'sse'] as const;
export type TransportMode = (typeof TRANSPORT_MODES)[number];

export interface BridgeConfig {
  readonly url: URL;
  /** The bearer token from the environment or --token-file, when that is the credential. */
  readonly token: string | undefined;
  /** Where the token came from, or would, for messages: `env FENBS_TOKEN` or `file …`. */
  readonly tokenSource: string;
  /** The variable the token is read from (`FENBS_TOKEN`, or --token-env's), for messages that say where to set one. */
  readonly tokenEnv: string;
  readonly credential: CredentialSpec;
  /** -H headers other than an Authorization that became `credential`. */
  readonly extraHeaders: readonly (readonly [string, string])[];
  /** Values -H took from the environment: secrets, masked in every output. */
  readonly headerSecrets: readonly HeaderSecret[];
  readonly requestTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly streamIdleTimeoutMs: number;
  readonly maxLineBytes: number;
  readonly maxMessageBytes: number;
  readonly shutdownGraceMs: number;
  /** 2025 sessions: ping a session idle this long, in ms; 0 = never (see legacy-session.ts). */
  readonly keepAliveMs: number;
  readonly caFile: string | undefined;
  /** --use-system-ca: trust the operating system's store too (Node's tls.getCACertificates('system')). */
  readonly useSystemCa: boolean;
  /** --client-cert / --client-key, checked; sent to the endpoint's origin only, never to a proxy. */
  readonly clientCertificate: ClientCertificate | undefined;
  readonly allowHttp: boolean;
  readonly logLevel: LevelWithSilent;
  /** How stderr shows the logs; undefined = readable lines on a terminal, JSON otherwise. */
  readonly logFormat: LogFormat | undefined;
  readonly logFile: string | undefined;
  /** Whether the bridge may translate between protocol eras (see era-translator.ts). */
  readonly protocol: ProtocolMode;
  /** Which HTTP transport the bridge speaks (see transports/automatic.ts). */
  readonly transport: TransportMode;
  /** --allow-tools / --deny-tools globs; empty = no such filter (see tool-filter.ts). */
  readonly allowTools: readonly string[];
  readonly denyTools: readonly string[];
  /**
   * A tools/list or prompts/list without a cursor is answered with every page the server has,
   * merged (see pipeline/page-merger.ts); false with --no-merge-pages.
   */
  readonly mergePages: boolean;
  /** The OAuth sign-in options, used when no other credential is set. */
  readonly oauth: OAuthSettings;
}

/** What commander hands over: every value still a string or a flag. */
export interface RawOptions extends OAuthRawOptions, TlsRawOptions {
  url?: string | undefined;
  tokenEnv?: string | undefined;
  tokenFile?: string | undefined;
  tokenCommand?: string | undefined;
  header?: string[] | undefined;
  requestTimeout?: string | undefined;
  connectTimeout?: string | undefined;
  streamIdleTimeout?: string | undefined;
  maxLineBytes?: string | undefined;
  maxMessageBytes?: string | undefined;
  keepAlive?: string | undefined;
  allowHttp?: boolean | undefined;
  logLevel?: string | undefined;
  logFormat?: string | undefined;
  logFile?: string | undefined;
  protocol?: string | undefined;
  transport?: string | undefined;
  /** Each given once or more; every value a comma-separated list. */
  allowTools?: string[] | undefined;
  denyTools?: string[] | undefined;
  /** false with --no-merge-pages (commander's negated flag); absent or true = merge. */
  mergePages?: boolean | undefined;
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

/** --keep-alive: 0 (off), or MIN_KEEP_ALIVE_MS up to the longest timer Node keeps. */
function parseKeepAlive(raw: string | undefined): number {
  const value = parseTimeout(raw, KEEP_ALIVE_MS, '--keep-alive', true);
  if (value !== 0 && value < MIN_KEEP_ALIVE_MS) {
    throw new UsageError(
      `--keep-alive is in milliseconds and at least ${MIN_KEEP_ALIVE_MS} (one ping a second at most), got ${raw ?? value}; 0 turns it off`,
      `fenbs-mcp --keep-alive ${value * 1000 <= MAX_TIMEOUT_MS && value * 1000 >= MIN_KEEP_ALIVE_MS ? value * 1000 : 60_000}`,
    );
  }
  return value;
}

export interface ConfigInputs {
  options: RawOptions;
  env: Readonly<Record<string, string | undefined>>;
  readTextFile: ReadTextFile;
  /** The running Node's version (`v20.19.0`), for the message refusing --use-system-ca; absent in tests. */
  nodeVersion?: string | undefined;
}

function parseToolOption(values: readonly string[] | undefined, option: ToolFilterOption): readonly string[] {
  if (values === undefined) return Object.freeze([]);
  const parsed = parseToolPatterns(values, option);
  if (typeof parsed === 'string') throw new UsageError(parsed, `fenbs-mcp ${option} 'tasks_*,search'`);
  return Object.freeze(parsed);
}

export function createConfig({ options: given, env, readTextFile, nodeVersion }: ConfigInputs): BridgeConfig {
  const options = withHomeExpanded(given, env);
  const tokenEnv = options.tokenEnv ?? DEFAULT_TOKEN_ENV;
  if (!TOKEN_CHARS.test(tokenEnv)) throw new UsageError(`--token-env expects a variable name, got "${tokenEnv}"`);
  const envToken = env[tokenEnv]?.trim() || undefined;
  let fileToken: string | undefined;
  if (options.tokenFile !== undefined) {
    fileToken = readOptionFile(readTextFile, '--token-file', options.tokenFile, MAX_TOKEN_FILE_BYTES).trim();
    // The user named a file, so an empty one is a mistake, not "no token".
    if (fileToken === '') throw new UsageError(`--token-file ${options.tokenFile} is empty: it must hold the bearer token`);
  }
  const tokenCommand = options.tokenCommand?.trim();
  if (tokenCommand === '')
    throw new UsageError(
      '--token-command is empty: it must be a shell command that prints the bearer token',
      "fenbs-mcp --token-command 'op read op://vault/mcp/token'",
    );
  for (const [token, source] of [
    [envToken, `env ${tokenEnv}`],
    [fileToken, `file ${options.tokenFile ?? ''}`],
  ] as const) {
    if (token !== undefined) refuseUnsendableToken(token, source);
  }

  const headers = (options.header ?? []).map((raw) => parseHeader(raw, tokenEnv, env));
  const authorizationHeader = headers.find((header) => header.name.toLowerCase() === 'authorization');
  if (headers.filter((header) => header.name.toLowerCase() === 'authorization').length > 1) {
    throw new UsageError('-H Authorization is given more than once: a request carries one credential');
  }
  const { credential, token, tokenSource } = chooseCredential({
    tokenEnv,
    tokenFile: options.tokenFile,
    envToken,
    fileToken,
    tokenCommand,
    authorizationHeader,
  });

  const { useSystemCa, clientCertificate } = parseTlsOptions(options, env, readTextFile, nodeVersion);

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
  const [rawUrl, urlSource] =
    options.url !== undefined ? [options.url, '--url'] : envUrl !== undefined ? [envUrl, 'FENBS_MCP_URL'] : [DEFAULT_URL, 'the default URL'];
  const secret =
    credential.kind !== 'none' ? 'the token' : headers.some((header) => header.secrets.length > 0) ? 'the -H values taken from the environment' : undefined;
  const url = parseUrl(rawUrl, urlSource, allowHttp, secret);

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

  const protocol = (options.protocol ?? 'auto').toLowerCase();
  if (!(PROTOCOL_MODES as readonly string[]).includes(protocol)) {
    throw new UsageError(`--protocol must be auto or passthrough, got "${options.protocol}"`);
  }
  const transport = (options.transport ?? 'auto').toLowerCase();
  if (!(TRANSPORT_MODES as readonly string[]).includes(transport)) {
    throw new UsageError(`--transport must be auto, streamable-http or sse, got "${options.transport}"`, '--transport auto (the default) tries both');
  }

  return Object.freeze({
    url,
    token,
    tokenSource,
    tokenEnv,
    credential: Object.freeze(credential),
    extraHeaders: Object.freeze(
      headers.filter((header) => header !== authorizationHeader).map((header) => Object.freeze([header.name, header.value] as const)),
    ),
    headerSecrets: Object.freeze(
      headers.flatMap(({ name, secrets, variables }) => secrets.map((value, index) => Object.freeze({ header: name, variable: variables[index]!, value }))),
    ),
    requestTimeoutMs: parseTimeout(options.requestTimeout, REQUEST_TIMEOUT_MS, '--request-timeout', true),
    connectTimeoutMs: parseTimeout(options.connectTimeout, CONNECT_TIMEOUT_MS, '--connect-timeout', false),
    streamIdleTimeoutMs: parseTimeout(options.streamIdleTimeout, STREAM_IDLE_TIMEOUT_MS, '--stream-idle-timeout', true),
    maxLineBytes: parsePositiveInteger(options.maxLineBytes, MAX_LINE_BYTES, '--max-line-bytes'),
    maxMessageBytes: parsePositiveInteger(options.maxMessageBytes, MAX_MESSAGE_BYTES, '--max-message-bytes'),
    shutdownGraceMs: SHUTDOWN_GRACE_MS,
    keepAliveMs: parseKeepAlive(options.keepAlive),
    caFile: options.caFile,
    useSystemCa,
    clientCertificate,
    allowHttp,
    logLevel: logLevel as LevelWithSilent,
    logFormat: logFormat as LogFormat | undefined,
    logFile: options.logFile,
    protocol: protocol as ProtocolMode,
    transport: transport as TransportMode,
    allowTools: parseToolOption(options.allowTools, '--allow-tools'),
    denyTools: parseToolOption(options.denyTools, '--deny-tools'),
    mergePages: options.mergePages !== false,
    oauth: parseOAuthSettings(options, env, readTextFile),
  });
}
