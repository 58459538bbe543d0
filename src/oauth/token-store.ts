// The on-disk token cache: one private file per MCP server, entries per authorization server, written atomically.

import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** A cache file larger than this is not ours (a few KB is typical) and is treated as corrupt. */
export const MAX_CACHE_FILE_BYTES = 256 * 1024;
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

export interface CacheContents {
  server: string;
  /** The authorization server last used for this MCP server; its tokens are sent at start. */
  issuer?: string | undefined;
  issuers: Record<string, IssuerEntry>;
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
const optionalString = (value: unknown) => value === undefined || isString(value);
const optionalNumber = (value: unknown) => value === undefined || (typeof value === 'number' && Number.isFinite(value));

function isClient(value: unknown): value is StoredClient {
  return isRecord(value) && ['pre-registered', 'metadata-document', 'registered'].includes(value.kind as string) && isString(value.clientId) && optionalString(value.clientSecret) && optionalString(value.redirectUri);
}

function isTokens(value: unknown): value is StoredTokens {
  return isRecord(value) && isString(value.accessToken) && optionalString(value.refreshToken) && optionalNumber(value.expiresAt) && typeof value.obtainedAt === 'number' && optionalString(value.scope);
}

/** Keeps what is well-formed; a damaged part is dropped, so the worst a broken file costs is a new sign-in. */
function toContents(value: unknown, server: string): CacheContents {
  const empty: CacheContents = { server, issuers: {} };
  if (!isRecord(value) || value.version !== FORMAT_VERSION || value.server !== server || !isRecord(value.issuers)) return empty;
  const issuers: Record<string, IssuerEntry> = {};
  for (const [issuer, raw] of Object.entries(value.issuers)) {
    if (!isRecord(raw) || !isString(raw.resource)) continue;
    issuers[issuer] = { resource: raw.resource, client: isClient(raw.client) ? raw.client : undefined, tokens: isTokens(raw.tokens) ? raw.tokens : undefined };
  }
  return { server, issuer: isString(value.issuer) && issuers[value.issuer] !== undefined ? value.issuer : undefined, issuers };
}

/** The cache file of one MCP server (and the path of its lock, next to it). */
export class TokenStore {
  readonly directory: string;
  readonly file: string;
  readonly lockFile: string;
  readonly #server: string;

  constructor(directory: string, server: URL) {
    this.directory = directory;
    this.#server = server.href;
    // Hashed: a URL is not a file name, and the name should not show which servers are used.
    const key = createHash('sha256').update(server.href).digest('hex').slice(0, 32);
    this.file = join(directory, 'oauth', `${key}.json`);
    this.lockFile = join(directory, 'oauth', `${key}.lock`);
  }

  /** Creates the cache directories, private to the user (0700). */
  ensureDirectory(): void {
    for (const dir of [this.directory, join(this.directory, 'oauth')]) {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      // mkdir's mode is filtered by the umask, and an existing directory keeps its own.
      if (process.platform !== 'win32') chmodSync(dir, 0o700);
    }
  }

  /** The cached contents; a missing, oversized or unreadable file reads as empty. */
  read(): CacheContents {
    try {
      if (statSync(this.file).size > MAX_CACHE_FILE_BYTES) return { server: this.#server, issuers: {} };
      return toContents(JSON.parse(readFileSync(this.file, 'utf8')), this.#server);
    } catch {
      return { server: this.#server, issuers: {} };
    }
  }

  /** Writes the whole file: a private temporary file, flushed, then renamed over the old one. */
  write(contents: CacheContents): void {
    this.ensureDirectory();
    const temporary = `${this.file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    const fd = openSync(temporary, 'wx', 0o600);
    try {
      writeSync(fd, JSON.stringify({ version: FORMAT_VERSION, ...contents }));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    try {
      renameSync(temporary, this.file);
    } catch (error) {
      rmSync(temporary, { force: true });
      throw error;
    }
  }

  /** Forgets everything about this server. */
  remove(): boolean {
    try {
      statSync(this.file);
    } catch {
      return false;
    }
    rmSync(this.file, { force: true });
    return true;
  }

  /** Reads, changes and writes the entry of one authorization server. */
  update(issuer: string, resource: string, change: (entry: IssuerEntry) => IssuerEntry): IssuerEntry {
    const contents = this.read();
    const entry = change(contents.issuers[issuer] ?? { resource });
    this.write({ ...contents, issuer, issuers: { ...contents.issuers, [issuer]: entry } });
    return entry;
  }
}
