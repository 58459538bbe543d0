// The token cache: one private file per MCP server, entries per authorization server, written atomically; its secrets optionally in a SecretStore.

import { createHash } from 'node:crypto';
import { chmodSync, lstatSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tokenProblem } from '../../core/http-field-grammar.js';
import { BridgeError } from '../../core/errors.js';
import { folderProblem, readPrivateFile, replacePrivateFile } from './private-file.js';
import type { SecretStore } from './secret-store.js';

/** A cache file larger than this is not ours (a few KB is typical) and is treated as corrupt; a larger one is never written. */
export const MAX_CACHE_FILE_BYTES = 256 * 1024;
/**
 * The longest access or refresh token kept. Real ones are a few KB (a JWT with many claims, 8 KB at
 * most); servers refuse larger request headers (nginx's default buffer is 8 KB, Node's whole header
 * block 16 KB), and this keeps a cache file with its tokens far below MAX_CACHE_FILE_BYTES.
 */
export const MAX_TOKEN_CHARS = 16 * 1024;
/** Pre-registered clients bound to an authorization server, kept per cache file; the oldest binding goes first. */
export const MAX_CLIENT_BINDINGS = 16;
const FORMAT_VERSION = 1;

/** How the client id was obtained; decides what happens when the authorization server forgets it. */
export type ClientKind = 'pre-registered' | 'metadata-document' | 'registered';

export interface StoredClient {
  kind: ClientKind;
  clientId: string;
  /** Only for a dynamically registered confidential client; a pre-registered secret never goes to disk. */
  clientSecret?: string | undefined;
  /** The redirect URI registered with it (its port is reused when free). */
  redirectUri?: string | undefined;
}

export interface StoredTokens {
  accessToken: string;
  refreshToken?: string | undefined;
  /** Epoch ms; undefined when the server gave no `expires_in`. */
  expiresAt?: number | undefined;
  /** Epoch ms when it was issued, to refresh ahead by a share of its lifetime. */
  obtainedAt: number;
  scope?: string | undefined;
}

/** What is kept for one authorization server (client ids and tokens belong to the server that issued them). */
export interface IssuerEntry {
  resource: string;
  client?: StoredClient | undefined;
  tokens?: StoredTokens | undefined;
}

/** How the last interactive sign-in for this server ended; `started` while it runs, or when its bridge died. */
export type SignInOutcome = 'started' | 'signed-in' | 'denied' | 'timeout' | 'failed';
const SIGN_IN_OUTCOMES: readonly string[] = ['started', 'signed-in', 'denied', 'timeout', 'failed'] satisfies SignInOutcome[];

/** The last interactive sign-in for this server, by any bridge on the machine: what the quiet period counts from. */
export interface SignInRecord {
  /** Epoch ms when it started, or when it ended once it has. */
  at: number;
  outcome: SignInOutcome;
  /** A re-authorization for wider scopes after a 403 insufficient_scope. */
  stepUp: boolean;
}

/** The authorization server a pre-registered confidential client was first used with, for this MCP server. */
export interface ClientBinding {
  clientId: string;
  issuer: string;
}

export interface CacheContents {
  server: string;
  /** The authorization server last used for this MCP server; its tokens are sent at start. */
  issuer?: string | undefined;
  issuers: Record<string, IssuerEntry>;
  lastSignIn?: SignInRecord | undefined;
  /** Where each pre-registered client with a secret may send it (at most MAX_CLIENT_BINDINGS). */
  clientBindings?: ClientBinding[] | undefined;
}

/**
 * Why a token the authorization server issued (or the cache holds) cannot be kept and sent, or
 * undefined: the header rule every token follows (tokenProblem), and MAX_TOKEN_CHARS.
 */
export function issuedTokenProblem(token: string): string | undefined {
  return token.length > MAX_TOKEN_CHARS ? `more than ${MAX_TOKEN_CHARS} characters` : tokenProblem(token);
}

/** `$FENBS_MCP_HOME`, else `$XDG_CONFIG_HOME/fenbs-mcp`, else `~/.config/fenbs-mcp`. */
export function cacheDirectory(env: Readonly<Record<string, string | undefined>>, home: string): string {
  const own = env.FENBS_MCP_HOME?.trim();
  if (own !== undefined && own !== '') return own;
  const xdg = env.XDG_CONFIG_HOME?.trim();
  if (xdg !== undefined && xdg !== '') return join(xdg, 'fenbs-mcp');
  return join(home, '.config', 'fenbs-mcp');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const isString = (value: unknown): value is string => typeof value === 'string' && value !== '';
const isNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);
const optionalString = (value: unknown) => value === undefined || isString(value);
const optionalNumber = (value: unknown) => value === undefined || isNumber(value);
/** The URLs in the cache are used as URLs (`new URL`, which throws): a damaged one would fail every request. */
const isUrl = (value: unknown): value is string => isString(value) && URL.canParse(value);

function isClient(value: unknown): value is StoredClient {
  return (
    isRecord(value) &&
    ['pre-registered', 'metadata-document', 'registered'].includes(value.kind as string) &&
    isString(value.clientId) &&
    optionalString(value.clientSecret) &&
    (value.redirectUri === undefined || isUrl(value.redirectUri))
  );
}

function isTokens(value: unknown): value is StoredTokens {
  return (
    isRecord(value) &&
    isString(value.accessToken) &&
    optionalString(value.refreshToken) &&
    optionalNumber(value.expiresAt) &&
    isNumber(value.obtainedAt) &&
    optionalString(value.scope)
  );
}

function isClientBinding(value: unknown): value is ClientBinding {
  return isRecord(value) && isString(value.clientId) && isUrl(value.issuer);
}

function isSignInRecord(value: unknown): value is SignInRecord {
  return isRecord(value) && isNumber(value.at) && SIGN_IN_OUTCOMES.includes(value.outcome as string) && typeof value.stepUp === 'boolean';
}

/** Why cached tokens must not be sent (another process or a damaged disk may have written anything), or undefined. */
function cachedTokenProblem(tokens: StoredTokens): string | undefined {
  const access = issuedTokenProblem(tokens.accessToken);
  if (access !== undefined) return `its access token contains ${access}`;
  const refresh = tokens.refreshToken === undefined ? undefined : issuedTokenProblem(tokens.refreshToken);
  return refresh === undefined ? undefined : `its refresh token contains ${refresh}`;
}

/**
 * Keeps what is well-formed; a damaged part is dropped, so the worst a broken file costs is a new
 * sign-in. Tokens no header can carry are dropped too, and `warn` says why (never what they hold).
 */
function toContents(value: unknown, server: string, warn: (message: string) => void): CacheContents {
  const empty: CacheContents = { server, issuers: {} };
  if (!isRecord(value) || value.version !== FORMAT_VERSION || value.server !== server || !isRecord(value.issuers)) return empty;
  const issuers: Record<string, IssuerEntry> = {};
  for (const [issuer, raw] of Object.entries(value.issuers)) {
    if (!URL.canParse(issuer) || !isRecord(raw) || !isUrl(raw.resource)) continue;
    let tokens = isTokens(raw.tokens) ? raw.tokens : undefined;
    const problem = tokens === undefined ? undefined : cachedTokenProblem(tokens);
    if (problem !== undefined) {
      warn(`the cached OAuth token from ${issuer} is ignored: ${problem}, so it cannot be sent in an Authorization header`);
      tokens = undefined;
    }
    issuers[issuer] = { resource: raw.resource, client: isClient(raw.client) ? raw.client : undefined, tokens };
  }
  return {
    server,
    issuer: isString(value.issuer) && issuers[value.issuer] !== undefined ? value.issuer : undefined,
    issuers,
    lastSignIn: isSignInRecord(value.lastSignIn) ? value.lastSignIn : undefined,
    clientBindings: Array.isArray(value.clientBindings) ? value.clientBindings.filter(isClientBinding).slice(-MAX_CLIENT_BINDINGS) : undefined,
  };
}

/** The secrets of one issuer's entry: what goes to a SecretStore when there is one. */
interface IssuerSecrets {
  tokens?: StoredTokens | undefined;
  clientSecret?: string | undefined;
}

/**
 * Splits contents into what the file may show (client ids, expiry, scope, sign-in records) and the
 * secrets (tokens, a registered client's secret), undefined when there are none.
 */
function splitSecrets(contents: CacheContents): { visible: CacheContents; secrets: Record<string, IssuerSecrets> | undefined } {
  const issuers: Record<string, unknown> = {};
  const secrets: Record<string, IssuerSecrets> = {};
  for (const [issuer, entry] of Object.entries(contents.issuers)) {
    const { clientSecret, ...client } = entry.client ?? { clientSecret: undefined };
    const tokens =
      entry.tokens === undefined ? undefined : { expiresAt: entry.tokens.expiresAt, obtainedAt: entry.tokens.obtainedAt, scope: entry.tokens.scope };
    issuers[issuer] = { resource: entry.resource, client: entry.client === undefined ? undefined : client, tokens };
    if (entry.tokens !== undefined || clientSecret !== undefined) secrets[issuer] = { tokens: entry.tokens, clientSecret };
  }
  return { visible: { ...contents, issuers: issuers as Record<string, IssuerEntry> }, secrets: Object.keys(secrets).length === 0 ? undefined : secrets };
}

/** Puts the kept secrets back into the file's parsed JSON, before it is checked like any cache file. */
function withSecrets(raw: unknown, kept: unknown, server: string): unknown {
  if (!isRecord(raw) || !isRecord(raw.issuers) || !isRecord(kept) || kept.server !== server || !isRecord(kept.issuers)) return raw;
  const issuers: Record<string, unknown> = {};
  for (const [issuer, entry] of Object.entries(raw.issuers)) {
    const secrets = kept.issuers[issuer];
    if (!isRecord(entry) || !isRecord(secrets)) {
      issuers[issuer] = entry;
      continue;
    }
    const client = isRecord(entry.client) && isString(secrets.clientSecret) ? { ...entry.client, clientSecret: secrets.clientSecret } : entry.client;
    issuers[issuer] = { ...entry, client, tokens: secrets.tokens ?? entry.tokens };
  }
  return { ...raw, issuers };
}

/** JSON with every character past ASCII escaped: each credential store gives back exactly these bytes. */
function toAsciiJson(value: unknown): string {
  return JSON.stringify(value).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The cache file of one MCP server (and the path of its lock, next to it). */
export class TokenStore {
  readonly directory: string;
  readonly file: string;
  readonly lockFile: string;
  /** The entry's name in the SecretStore: the cache file's own hashed name. */
  readonly key: string;
  readonly #server: string;
  readonly #secrets: SecretStore | undefined;
  /** The secret text last read or written (null: not known), so a write that changes no secret does not call the store. */
  #keptSecretText: string | undefined | null = null;
  readonly #warn: (message: string) => void;
  /** Each problem is told once per store: the cache is read for every renewal. */
  readonly #told = new Set<string>();

  /**
   * `warn` hears why something in the cache was not used (an unsafe folder, a damaged token). With
   * `secrets`, tokens and client secrets are kept there and the file holds none.
   */
  constructor(directory: string, server: URL, warn: (message: string) => void = () => undefined, secrets?: SecretStore) {
    this.directory = directory;
    this.#server = server.href;
    this.#warn = warn;
    this.#secrets = secrets;
    // Hashed: a URL is not a file name, and the name should not show which servers are used.
    const key = createHash('sha256').update(server.href).digest('hex').slice(0, 32);
    this.file = join(directory, 'oauth', `${key}.json`);
    this.lockFile = join(directory, 'oauth', `${key}.lock`);
    this.key = key;
  }

  /** Where the secrets are: the SecretStore's description, or the cache file. */
  get secretsAt(): string {
    return this.#secrets?.description ?? this.file;
  }

  /** The secret part kept in the SecretStore, parsed; undefined when none is kept or it cannot be read (told). */
  #readSecrets(): unknown {
    try {
      const text = this.#secrets!.get(this.key);
      this.#keptSecretText = text;
      return text === undefined ? undefined : JSON.parse(text);
    } catch (error) {
      this.#keptSecretText = null;
      this.#tell(
        `the OAuth tokens kept in ${this.#secrets!.description} are not used: ${error instanceof SyntaxError ? 'they are not valid JSON' : (error as Error).message}`,
      );
      return undefined;
    }
  }

  /**
   * Why the cache folders are no place for tokens (another user's, or writable by others: whoever
   * can write there can plant a token or a client of theirs, or swap the file), or undefined.
   */
  folderProblem(): BridgeError | undefined {
    for (const dir of [this.directory, join(this.directory, 'oauth')]) {
      const problem = folderProblem(dir);
      if (problem === undefined) continue;
      return new BridgeError(
        'AUTH_REQUIRED',
        `the OAuth token cache folder ${dir} ${problem}: fenbs-mcp neither reads tokens from it nor writes tokens into it`,
        {
          hint: `make it yours and private (chown, chmod 700 ${dir}, and remove what you did not put there), or set FENBS_MCP_HOME to a private folder`,
        },
      );
    }
    return undefined;
  }

  /** Creates the cache folders, private to the user (0700); throws the folderProblem() of an unsafe one. */
  ensureDirectory(): void {
    const folders = [this.directory, join(this.directory, 'oauth')];
    // Checked once they exist, so one made meanwhile by someone else is judged too.
    for (const dir of folders) mkdirSync(dir, { recursive: true, mode: 0o700 });
    const refused = this.folderProblem();
    if (refused !== undefined) throw refused;
    // mkdir's mode is filtered by the umask, and an existing folder (0755, not writable by others) keeps its own.
    if (process.platform !== 'win32') for (const dir of folders) chmodSync(dir, 0o700);
  }

  #tell(message: string): void {
    if (this.#told.has(message)) return;
    this.#told.add(message);
    this.#warn(message);
  }

  /** The cached contents; a missing, unsafe, oversized or unreadable file reads as empty (and is told). */
  read(): CacheContents {
    const empty: CacheContents = { server: this.#server, issuers: {} };
    const refused = this.folderProblem();
    if (refused !== undefined) {
      this.#tell(refused.message);
      return empty;
    }
    try {
      const text = readPrivateFile(this.file, MAX_CACHE_FILE_BYTES);
      if (text === undefined) return empty;
      const raw: unknown = JSON.parse(text);
      // Tokens a file still holds from before the store was used count until the next write moves them.
      const merged = this.#secrets === undefined ? raw : withSecrets(raw, this.#readSecrets(), this.#server);
      return toContents(merged, this.#server, (message) => this.#tell(message));
    } catch (error) {
      this.#tell(`the OAuth token cache ${this.file} is not used: it ${error instanceof SyntaxError ? 'is not valid JSON' : (error as Error).message}`);
      return empty;
    }
  }

  /**
   * Writes the whole file atomically (replacePrivateFile); a file larger than MAX_CACHE_FILE_BYTES is
   * never written. With a SecretStore, the secrets go there first and the file gets the rest.
   */
  write(contents: CacheContents): void {
    this.ensureDirectory();
    let visible = contents;
    if (this.#secrets !== undefined) {
      const split = splitSecrets(contents);
      visible = split.visible;
      const secretText = split.secrets === undefined ? undefined : toAsciiJson({ version: FORMAT_VERSION, server: this.#server, issuers: split.secrets });
      if (secretText !== this.#keptSecretText) {
        // Unknown until the store answers: a failed call leaves it unknown, so the next write tries again.
        this.#keptSecretText = null;
        if (secretText === undefined) this.#secrets.delete(this.key);
        else this.#secrets.set(this.key, secretText);
        this.#keptSecretText = secretText;
      }
    }
    const text = JSON.stringify({ version: FORMAT_VERSION, ...visible });
    // It would read back as corrupt: every start would sign in again.
    if (Buffer.byteLength(text) > MAX_CACHE_FILE_BYTES) throw new Error(`the token cache would be larger than ${MAX_CACHE_FILE_BYTES} bytes`);
    replacePrivateFile(this.file, text);
  }

  /** Forgets everything about this server, in the SecretStore too (a symbolic link in the file's place is removed, never followed). */
  remove(): boolean {
    let removed = false;
    try {
      lstatSync(this.file);
      rmSync(this.file, { force: true });
      removed = true;
    } catch {
      // No file: there may still be secrets kept from a file since removed by hand.
    }
    if (this.#secrets !== undefined) {
      this.#keptSecretText = null;
      removed = this.#secrets.delete(this.key) || removed;
      this.#keptSecretText = undefined;
    }
    return removed;
  }

  /** Reads, changes and writes the entry of one authorization server (and the sign-in record, when given). */
  update(issuer: string, resource: string, change: (entry: IssuerEntry) => IssuerEntry, lastSignIn?: SignInRecord): IssuerEntry {
    const contents = this.read();
    const entry = change(contents.issuers[issuer] ?? { resource });
    this.write({ ...contents, issuer, issuers: { ...contents.issuers, [issuer]: entry }, ...(lastSignIn === undefined ? {} : { lastSignIn }) });
    return entry;
  }

  /** Binds a pre-registered client to an authorization server (replacing its earlier binding), for every bridge of this server to read. */
  bindClient(binding: ClientBinding): void {
    const contents = this.read();
    const others = (contents.clientBindings ?? []).filter((kept) => kept.clientId !== binding.clientId);
    this.write({ ...contents, clientBindings: [...others, binding].slice(-MAX_CLIENT_BINDINGS) });
  }

  /** Records the last interactive sign-in, for every bridge of this server to read. */
  recordSignIn(lastSignIn: SignInRecord): void {
    this.write({ ...this.read(), lastSignIn });
  }
}
