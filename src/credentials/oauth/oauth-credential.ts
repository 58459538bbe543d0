// The OAuth credential: cached tokens at start, refresh ahead of expiry and after a 401, one shared sign-in otherwise.

import { homedir } from 'node:os';
import type { Credential, CredentialChallenge } from '../../core/credential.js';
import { BridgeError, isBridgeError } from '../../core/errors.js';
import type { Logger } from '../../logging/logger.js';
import type { AddressGuard } from './address-guard.js';
import { createRedactor, maskUrl } from '../../logging/redactor.js';
import type { Mask } from '../../logging/outgoing-text.js';
import { toTerminalLine } from '../../core/terminal-text.js';
import type { Dispatcher } from '../../http/undici-parts.js';
import { openBrowser } from './browser.js';
import {
  discover,
  fetchAuthorizationServer,
  NO_CHALLENGE,
  NoResourceMetadataError,
  otherIssuerRefusal,
  parseBearerChallenge,
  reasonOf,
  type BearerChallenge,
  type Discovered,
} from './discovery.js';
import { LockTimeoutError, withFileLock } from './file-lock.js';
import { clientCredentialsToken } from './client-credentials.js';
import { deviceSignIn } from './device-flow.js';
import { refreshTokens, SignInError, signIn, TokenRequestError, type FlowDeps, type SignInResult } from './flow.js';
import { createOAuthHttp } from './http.js';
import type { OAuthSettings } from '../../config/oauth-settings.js';
import {
  cacheDirectory,
  TokenStore,
  type CacheContents,
  type ClientBinding,
  type IssuerEntry,
  type SignInOutcome,
  type SignInRecord,
  type StoredClient,
  type StoredTokens,
} from './token-store.js';
import { untilAborted } from '../../core/abort.js';
import { chooseSecretStore, type SecretStoreChoice } from './choose-secret-store.js';
import type { SecretStore, TokenStoreMode } from './secret-store.js';

/** Refresh this long before expiry at most (a quarter of a short lifetime at least, so a 60 s token is not refreshed on every request). */
export const REFRESH_AHEAD_MS = 60_000;
/**
 * After an interactive sign-in (denied, timed out, failed, or one whose token the server refused at
 * once), no other starts for this server for this long, in this bridge or in any other on the
 * machine (the last attempt is recorded in the cache): requests get AUTH_REQUIRED with a hint
 * instead of a window each. Clients retry a failed connection within seconds to a minute or two,
 * and a desktop app starts its bridges within seconds of each other, so a shorter period (10 s
 * was tried) still opened a window per retry; a misconfigured server or a refused consent does not
 * change by itself, so waiting longer loses nothing, and `fenbs-mcp login` (which is not held by
 * it) signs in at once. Five minutes is also the default login wait: a loop costs at most one
 * window per sign-in's worth of time.
 */
export const SIGN_IN_QUIET_MS = 5 * 60_000;
/** Waiting for another bridge's sign-in may take its login timeout plus this. */
export const LOCK_MARGIN_MS = 30_000;

export interface OAuthCredentialOptions {
  /** The MCP server. */
  url: URL;
  allowHttp: boolean;
  settings: OAuthSettings;
  logger: Logger;
  env: Readonly<Record<string, string | undefined>>;
  /** Masks a secret in everything the bridge writes from now on. */
  registerSecret: (secret: string) => void;
  /**
   * The run's mask (its Redactor), for what the authorization server says before it is cut into a
   * message; without it, a mask of the secrets this credential itself registered.
   */
  mask?: Mask;
  dispatcher: Dispatcher;
  /** Keeps requests off addresses the server may not point the bridge at (see address-guard.ts). */
  addressGuard?: AddressGuard;
  /** The dispatcher is this credential's own: destroyed when it closes. */
  closeDispatcher?: boolean;
  /** Writes text on stderr as is (the sign-in URL, for headless machines and remote shells). */
  writeStderr: (text: string) => void;
  /** Seams for tests; the real ones otherwise. */
  home?: string;
  platform?: NodeJS.Platform;
  now?: () => number;
  openBrowser?: (url: string) => void;
}

/** What a cached token is worth, for doctor and login. */
export type CachedState =
  | { kind: 'none' }
  | { kind: 'valid'; expiresAt: number | undefined; issuer: string }
  | { kind: 'refreshable'; issuer: string }
  | { kind: 'expired'; issuer: string };

type Mode = 'renew' | 'step-up' | 'refresh-only' | 'login';

/** What the server's refusal of a token it was just given means, and what to do. */
export const REFUSED_TOKEN_HINT =
  "the server refused the token it just issued: check the scopes / the server's configuration; an authorization server that issues tokens for another API unless told which (Auth0) needs --oauth-authorize-param audience=<the API identifier>";

function seconds(ms: number): string {
  return `${Math.max(0, Math.round(ms / 1000))} s`;
}

interface Renewal {
  background: boolean;
  done: Promise<boolean>;
}

function bearerOf(header: string | undefined): string | undefined {
  return header?.startsWith('Bearer ') === true ? header.slice('Bearer '.length) : undefined;
}

function scopeSet(scope: string | undefined): Set<string> {
  return new Set((scope ?? '').split(' ').filter((s) => s !== ''));
}

function covers(granted: string | undefined, needed: string | undefined): boolean {
  const have = scopeSet(granted);
  return [...scopeSet(needed)].every((s) => have.has(s));
}

/** When to refresh: REFRESH_AHEAD_MS before expiry, or after three quarters of a shorter lifetime. */
export function refreshAt(tokens: StoredTokens): number | undefined {
  if (tokens.expiresAt === undefined) return undefined;
  const lifetime = tokens.expiresAt - tokens.obtainedAt;
  return tokens.expiresAt - Math.min(REFRESH_AHEAD_MS, Math.max(0, lifetime) / 4);
}

/** Reads the cache of `url` without touching the network. */
export function cachedState(store: TokenStore, now: number): CachedState {
  const contents = store.read();
  const issuer = contents.issuer;
  const tokens = issuer === undefined ? undefined : contents.issuers[issuer]?.tokens;
  if (issuer === undefined || tokens === undefined) return { kind: 'none' };
  if (tokens.expiresAt === undefined || tokens.expiresAt > now) return { kind: 'valid', expiresAt: tokens.expiresAt, issuer };
  return tokens.refreshToken === undefined ? { kind: 'expired', issuer } : { kind: 'refreshable', issuer };
}

/** Where the secrets of `url`'s cache go, by `--token-store`: chooseSecretStore's pick, with its note. */
export function chooseSecretsFor(
  url: URL,
  mode: TokenStoreMode | undefined,
  env: Readonly<Record<string, string | undefined>>,
  home: string = homedir(),
  platform: NodeJS.Platform = process.platform,
): SecretStoreChoice {
  return chooseSecretStore({ mode: mode ?? 'auto', platform, env, cacheDirectory: cacheDirectory(env, home), label: `fenbs-mcp:${url.host}` });
}

export function createTokenStore(
  url: URL,
  env: Readonly<Record<string, string | undefined>>,
  home: string = homedir(),
  warn?: (message: string) => void,
  secrets?: SecretStore,
): TokenStore {
  return new TokenStore(cacheDirectory(env, home), url, warn, secrets);
}

export class OAuthCredential implements Credential {
  readonly source = 'OAuth';
  readonly store: TokenStore;
  readonly #options: OAuthCredentialOptions;
  readonly #flow: FlowDeps;
  readonly #now: () => number;
  readonly #closing = new AbortController();
  #current: { issuer: string; tokens: StoredTokens } | undefined;
  #discovered: Discovered | undefined;
  #renewal: Renewal | undefined;
  /** The last interactive sign-in this bridge knows of (its own, or read from the cache): kept when the cache cannot be written. */
  #lastSignIn: SignInRecord | undefined;
  /** The binding of the pre-registered client the cache could not keep: it holds in this bridge instead. */
  #binding: ClientBinding | undefined;
  /** What the last piece of work did, for `login`'s report. */
  #lastAction: 'cached' | 'refreshed' | 'signed-in' = 'cached';

  constructor(options: OAuthCredentialOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    const platform = options.platform ?? process.platform;
    // Once per run, before anything is read: a `keychain` store that cannot be reached stops here.
    const secrets = chooseSecretsFor(options.url, options.settings.tokenStore, options.env, options.home, platform);
    options.logger.info(secrets.note);
    this.store = createTokenStore(options.url, options.env, options.home, (message) => options.logger.warn(message), secrets.store);
    const http = createOAuthHttp(options.dispatcher, options.allowHttp, options.addressGuard);
    // Without the run's mask, what the authorization server says is masked of every secret this
    // credential registered (the ones it could echo back), before it is cut into a message.
    const own = options.mask === undefined ? createRedactor([]) : undefined;
    this.#flow = {
      http,
      settings: options.settings,
      registerSecret:
        own === undefined
          ? options.registerSecret
          : (secret) => {
              own.add(secret);
              options.registerSecret(secret);
            },
      mask: options.mask ?? own!,
      now: this.#now,
      debug: (message) => options.logger.debug(message),
      showUrl: (url) =>
        options.writeStderr(
          `fenbs-mcp: sign in to ${maskUrl(options.url)} in your browser. If no browser opened, open this URL:\n\n  ${toTerminalLine(url)}\n\n`,
        ),
      showDeviceCode: (text) => options.writeStderr(text),
      openBrowser:
        options.openBrowser ??
        ((url) =>
          openBrowser(url, { env: options.env, platform, onError: (message) => options.logger.warn(`${message}; open the sign-in URL shown above yourself`) })),
    };
    if (options.settings.clientSecret !== undefined) this.#flow.registerSecret(options.settings.clientSecret);
    if (options.settings.clientKey !== undefined) this.#flow.registerSecret(options.settings.clientKey.pem);
    const contents = this.store.read();
    const tokens = contents.issuer === undefined ? undefined : contents.issuers[contents.issuer]?.tokens;
    if (contents.issuer !== undefined && tokens !== undefined) this.#adopt(contents.issuer, tokens);
  }

  authorization(): string | undefined {
    const tokens = this.#current?.tokens;
    if (tokens === undefined) return undefined;
    const at = refreshAt(tokens);
    const renewable = tokens.refreshToken !== undefined || this.#options.settings.grant === 'client-credentials';
    if (at !== undefined && this.#now() >= at && renewable && this.#renewal === undefined && !this.#closing.signal.aborted) {
      // Ahead of expiry, in the background: this request still goes with the current token.
      this.#start(true, () => this.#work('refresh-only', undefined, tokens.accessToken));
    }
    return `Bearer ${tokens.accessToken}`;
  }

  async renew(challenge: CredentialChallenge, signal: AbortSignal): Promise<boolean> {
    const sent = bearerOf(challenge.sent);
    // Renewed meanwhile by another request: this one goes again with the new token.
    if (challenge.status === 401 && this.#currentToken() !== undefined && this.#currentToken() !== sent) return true;
    const bearer = await parseBearerChallenge(challenge.wwwAuthenticate);
    // OAuth only when the server asks for it with a Bearer challenge (RFC 6750 §3).
    if (!bearer.bearer) return false;
    const mode: Mode = challenge.status === 403 ? 'step-up' : 'renew';
    // A 403 other than insufficient_scope is a refusal no new token changes (authorization §Error Handling).
    // Step-up applies to a token this credential obtained; without one there is nothing to widen.
    if (mode === 'step-up' && (bearer.error !== 'insufficient_scope' || this.#current === undefined)) return false;
    for (;;) {
      if (this.#currentToken() !== sent && (mode === 'renew' || covers(this.#current?.tokens.scope, bearer.scope))) return true;
      const running = this.#renewal;
      if (running === undefined) break;
      if (!running.background) return untilAborted(running.done, signal);
      await untilAborted(
        running.done.catch(() => false),
        signal,
      );
    }
    const renewal = this.#start(false, () => this.#work(mode, bearer, sent));
    return untilAborted(renewal.done, signal);
  }

  /**
   * The server refused the token renew() just put in place. One it issued within the quiet period
   * is a failed sign-in: AUTH_REQUIRED says so, rather than a plain 401 that hides why.
   */
  refusedAfterRenewal(challenge: CredentialChallenge): BridgeError | undefined {
    const tokens = this.#current?.tokens;
    if (tokens === undefined || bearerOf(challenge.sent) !== tokens.accessToken) return undefined;
    const age = this.#now() - tokens.obtainedAt;
    if (age >= SIGN_IN_QUIET_MS) return undefined;
    return new BridgeError('AUTH_REQUIRED', `the server refused (${challenge.status}) the OAuth token its authorization server issued ${seconds(age)} ago`, {
      status: challenge.status,
      wwwAuthenticate: challenge.wwwAuthenticate,
      hint: `${REFUSED_TOKEN_HINT}; once that is fixed, fenbs-mcp login signs in again at once`,
    });
  }

  /** Signs in ahead of time (`fenbs-mcp login`): a cached valid token or a refresh is enough. */
  async login(signal: AbortSignal): Promise<'cached' | 'refreshed' | 'signed-in'> {
    await untilAborted(this.#work('login', NO_CHALLENGE, undefined), signal);
    return this.#lastAction;
  }

  /** Forgets this server's client registrations and tokens (`fenbs-mcp logout`). */
  async logout(signal: AbortSignal): Promise<boolean> {
    this.#current = undefined;
    this.#binding = undefined;
    this.store.ensureDirectory();
    return this.#locked(signal, () => Promise.resolve(this.store.remove()));
  }

  close(): Promise<void> {
    this.#closing.abort(new BridgeError('SHUTTING_DOWN', 'the bridge is shutting down; the sign-in was abandoned'));
    // Destroyed, not closed: nothing of the run may wait on an authorization server once it is over.
    if (this.#options.closeDispatcher === true) void this.#options.dispatcher.destroy().catch(() => undefined);
    return Promise.resolve();
  }

  #currentToken(): string | undefined {
    return this.#current?.tokens.accessToken;
  }

  #adopt(issuer: string, tokens: StoredTokens): void {
    this.#flow.registerSecret(tokens.accessToken);
    if (tokens.refreshToken !== undefined) this.#flow.registerSecret(tokens.refreshToken);
    this.#current = { issuer, tokens };
  }

  #start(background: boolean, work: () => Promise<boolean>): Renewal {
    const renewal: Renewal = { background, done: work() };
    this.#renewal = renewal;
    const clear = () => {
      if (this.#renewal === renewal) this.#renewal = undefined;
    };
    renewal.done.then(clear, (error: unknown) => {
      clear();
      if (background) this.#options.logger.warn({ err: reasonOf(error) }, 'refreshing the OAuth token ahead of expiry failed; the next 401 renews it');
    });
    return renewal;
  }

  async #discover(bearer: BearerChallenge | undefined): Promise<Discovered> {
    const signal = this.#closing.signal;
    if (bearer === undefined && this.#discovered !== undefined) return this.#discovered;
    if (bearer === undefined && this.#current !== undefined) {
      // A refresh needs only the authorization server: its metadata is fetched by the issuer kept in the cache.
      const entry = this.store.read().issuers[this.#current.issuer];
      if (entry !== undefined) {
        // Tokens kept from before --oauth-issuer was given are refreshed nowhere else either.
        const refused = otherIssuerRefusal(new URL(this.#current.issuer), this.#options.settings.issuer);
        if (refused !== undefined) throw refused;
        const as = await fetchAuthorizationServer(this.#flow.http, new URL(this.#current.issuer), signal);
        return { as, resource: new URL(entry.resource), scopesSupported: undefined };
      }
    }
    this.#discovered = await discover(this.#flow.http, this.#options.url, bearer ?? NO_CHALLENGE, signal, {
      issuer: this.#options.settings.issuer,
      grant: this.#options.settings.grant,
      mask: this.#flow.mask,
    });
    return this.#discovered;
  }

  /** The client kept for `entry`, or none when the configuration now names another one. */
  #clientFor(entry: IssuerEntry | undefined): StoredClient | undefined {
    const stored = entry?.client;
    const { clientId, clientSecret } = this.#options.settings;
    if (clientId !== undefined) return stored?.kind === 'pre-registered' && stored.clientId === clientId ? { ...stored, clientSecret } : undefined;
    return stored?.kind === 'pre-registered' ? undefined : stored;
  }

  /**
   * Binds a pre-registered client with a secret to the first authorization server it is used with
   * for this MCP server, and refuses it to any other: the server chooses the authorization server
   * (RFC 9728 authorization_servers), so a hostile or compromised one could otherwise name its own
   * and receive the client secret at its token endpoint (RFC 6749 §2.3.1). Called under the lock,
   * before the client is used. A public client's id is no secret (RFC 6749 §2.1), and its tokens are
   * already kept per issuer, so it is not bound; --oauth-issuer, when given, pins every client
   * before discovery instead.
   */
  #bindClient(contents: CacheContents, issuer: string): void {
    const { clientId, clientSecret, issuer: configured } = this.#options.settings;
    if (clientId === undefined || clientSecret === undefined || configured !== undefined) return;
    const kept = contents.clientBindings?.find((binding) => binding.clientId === clientId);
    const recorded = kept ?? this.#binding;
    // A cache from before bindings were recorded: the issuers whose entry holds this client.
    const used =
      recorded !== undefined
        ? [recorded.issuer]
        : Object.keys(contents.issuers).filter(
            (known) => contents.issuers[known]?.client?.kind === 'pre-registered' && contents.issuers[known].client.clientId === clientId,
          );
    if (used.length > 0 && !used.some((known) => new URL(known).href === new URL(issuer).href)) {
      throw new BridgeError(
        'AUTH_REQUIRED',
        `refused to send the secret of the pre-registered client ${toTerminalLine(clientId)} to the authorization server ${toTerminalLine(issuer)}: the server now names it, but this client was first used with ${toTerminalLine(used[0]!)}`,
        {
          hint: 'if the server really moved to another authorization server, run fenbs-mcp logout and sign in again, or pass --oauth-issuer naming the one to use; otherwise the server is misconfigured or something is impersonating it',
        },
      );
    }
    if (kept !== undefined) return;
    // Only while the cache cannot hold it: a logout elsewhere then frees this bridge too.
    const binding = { clientId, issuer };
    this.#binding = this.#save(() => this.store.bindClient(binding)) ? undefined : binding;
  }

  #locked<T>(signal: AbortSignal, task: () => Promise<T>): Promise<T> {
    const waitMs = this.#options.settings.loginTimeoutMs + LOCK_MARGIN_MS;
    return withFileLock(
      this.store.lockFile,
      { waitMs, staleMs: waitMs, signal, onWait: () => this.#options.logger.info('another fenbs-mcp is signing in to this server; waiting for it') },
      task,
    ).catch((error: unknown) => {
      if (error instanceof LockTimeoutError) {
        throw new BridgeError('AUTH_REQUIRED', `waited ${Math.round(waitMs / 1000)} s for another fenbs-mcp to finish signing in`, {
          hint: 'finish or close the other sign-in, then retry',
        });
      }
      throw error;
    });
  }

  /** Writes the cache; a failure (a full disk) is told, and this bridge goes on with what it holds in memory. */
  #save(write: () => void): boolean {
    try {
      write();
      return true;
    } catch (error) {
      this.#options.logger.warn(
        { err: reasonOf(error), file: this.store.file },
        'the OAuth token cache could not be written; this bridge keeps its token in memory',
      );
      return false;
    }
  }

  /** The later of the cache's record and this bridge's own (which stands when the cache could not be written). */
  #latestSignIn(stored: SignInRecord | undefined): SignInRecord | undefined {
    const own = this.#lastSignIn;
    return stored === undefined || (own !== undefined && own.at > stored.at) ? own : stored;
  }

  /** Records an interactive sign-in's start or end, in memory and in the cache (under the lock). */
  #recordSignIn(issuer: string, resource: string, record: SignInRecord, change?: (entry: IssuerEntry) => IssuerEntry): void {
    this.#lastSignIn = record;
    this.#save(() => (change === undefined ? this.store.recordSignIn(record) : this.store.update(issuer, resource, change, record)));
  }

  /**
   * A new token by the client credentials grant, at start, ahead of expiry and after a 401 alike: no
   * person is involved, so nothing waits for one. A refused client authentication is recorded as a
   * failed sign-in, so the quiet period stops every later request from asking again with the same
   * wrong secret (one error each, no retry loop at the token endpoint).
   */
  async #machineToken(discovered: Discovered, issuer: string, resource: string, client: StoredClient | undefined, scope: string | undefined): Promise<boolean> {
    const { clientId, clientSecret } = this.#options.settings;
    const machine: StoredClient = client ?? { kind: 'pre-registered', clientId: clientId!, clientSecret };
    let tokens: StoredTokens;
    try {
      tokens = await clientCredentialsToken(this.#flow, discovered, machine, scope ?? discovered.scopesSupported?.join(' '), this.#closing.signal);
    } catch (error) {
      if (isBridgeError(error) && error.cause instanceof TokenRequestError && error.cause.kind === 'invalid-client') {
        this.#recordSignIn(issuer, resource, { at: this.#now(), outcome: 'failed', stepUp: false });
      }
      throw error;
    }
    this.#lastAction = 'signed-in';
    const keep: StoredClient = { kind: 'pre-registered', clientId: machine.clientId };
    this.#save(() => this.store.update(issuer, resource, () => ({ resource, client: keep, tokens })));
    this.#adopt(issuer, tokens);
    this.#options.logger.info('OAuth token obtained with the client credentials grant');
    return true;
  }

  /**
   * Why no interactive sign-in may start now, or undefined when one may: one ran within
   * SIGN_IN_QUIET_MS. `login` is the user asking at the terminal and is not held; a step-up for
   * wider scopes may follow a completed sign-in once (authorization §Scope Challenge Handling).
   * A record from the future (a clock set back) holds for one period at most.
   */
  #quietRefusal(mode: Mode, stored: SignInRecord | undefined, sent: string | undefined, cached: StoredTokens | undefined): BridgeError | undefined {
    const last = this.#latestSignIn(stored);
    if (mode === 'login' || last === undefined) return undefined;
    const now = this.#now();
    const age = now - last.at;
    if (age >= SIGN_IN_QUIET_MS || age < -SIGN_IN_QUIET_MS) return undefined;
    if (mode === 'step-up' && !last.stepUp && last.outcome === 'signed-in') return undefined;
    const next = `no new sign-in opens for this server for ${seconds(last.at + SIGN_IN_QUIET_MS - now)}, so a retrying client cannot open window after window; fenbs-mcp login signs in now`;
    const when = `${seconds(age)} ago`;
    if (last.outcome === 'signed-in' && mode === 'step-up') {
      return new BridgeError('AUTH_REQUIRED', `the server asks again for wider scopes after the sign-in ${when} that asked for them`, {
        hint: `${REFUSED_TOKEN_HINT}; ${next}`,
      });
    }
    if (last.outcome === 'signed-in') {
      const expired = cached !== undefined && cached.accessToken === sent && cached.expiresAt !== undefined && cached.expiresAt <= now;
      return expired
        ? new BridgeError('AUTH_REQUIRED', `the OAuth token from the sign-in ${when} has expired, and the authorization server issued no refresh token`, {
            hint: next,
          })
        : new BridgeError('AUTH_REQUIRED', `the server refused the OAuth token from the sign-in ${when}`, { hint: `${REFUSED_TOKEN_HINT}; ${next}` });
    }
    const what: Record<Exclude<SignInOutcome, 'signed-in'>, string> = {
      denied: `the sign-in ${when} was denied`,
      timeout: `the sign-in ${when} did not complete within the login timeout`,
      failed:
        this.#options.settings.grant === 'client-credentials'
          ? `the authorization server refused this client's authentication ${when} (client credentials grant)`
          : `the sign-in ${when} failed`,
      started: `a sign-in started ${when} (by this or another fenbs-mcp) and did not finish`,
    };
    return new BridgeError('AUTH_REQUIRED', what[last.outcome], { hint: next });
  }

  /** The newer of the cache's tokens for `issuer` and this bridge's own (newer when the cache could not be written). */
  #newest(issuer: string | undefined, stored: StoredTokens | undefined): StoredTokens | undefined {
    const own = this.#current !== undefined && this.#current.issuer === issuer ? this.#current.tokens : undefined;
    return stored === undefined || (own !== undefined && own.obtainedAt > stored.obtainedAt) ? own : stored;
  }

  /** A token another bridge stored for `sent`'s replacement: still valid and, for a step-up, with the scopes asked for. */
  #freshIn(cached: StoredTokens | undefined, mode: Mode, bearer: BearerChallenge | undefined, sent: string | undefined): boolean {
    return (
      cached !== undefined &&
      cached.accessToken !== sent &&
      (mode !== 'step-up' || covers(cached.scope, bearer?.scope)) &&
      (cached.expiresAt === undefined || cached.expiresAt > this.#now())
    );
  }

  /**
   * The one place tokens change. Under the cross-process lock: adopt what another bridge stored
   * meanwhile, else refresh (no browser), else sign in (unless `refresh-only`, or within the quiet period).
   */
  async #work(mode: Mode, bearer: BearerChallenge | undefined, sent: string | undefined): Promise<boolean> {
    const signal = this.#closing.signal;
    try {
      // An unsafe cache folder is refused before anything goes over the network.
      this.store.ensureDirectory();
      if (mode === 'renew' || mode === 'step-up') {
        // Without the network: what another bridge stored, or a quiet period nothing but a refresh could pass.
        const contents = this.store.read();
        const tokens = this.#newest(contents.issuer, contents.issuer === undefined ? undefined : contents.issuers[contents.issuer]?.tokens);
        if (this.#freshIn(tokens, mode, bearer, sent)) {
          this.#adopt(contents.issuer!, tokens!);
          return true;
        }
        // A sign-in `started` may still be running in the bridge holding the lock: that one is waited for.
        // A machine client asks again at once, unless its own credentials were just refused.
        const machine = this.#options.settings.grant === 'client-credentials';
        const held = machine ? this.#latestSignIn(contents.lastSignIn)?.outcome === 'failed' : contents.lastSignIn?.outcome !== 'started';
        const refusal = tokens?.refreshToken === undefined && held ? this.#quietRefusal(mode, contents.lastSignIn, sent, tokens) : undefined;
        if (refusal !== undefined) throw refusal;
      }
      // A refresh reuses the issuer in the cache; a renewal follows the server's challenge.
      const discovered = await this.#discover(mode === 'refresh-only' ? undefined : bearer);
      const issuer = discovered.as.issuer;
      const resource = discovered.resource.href;
      return await this.#locked(signal, async () => {
        const contents = this.store.read();
        const entry = contents.issuers[issuer];
        const cached = this.#newest(issuer, entry?.tokens);
        // Another bridge signed in or refreshed while this one waited: its result is shared.
        if (this.#freshIn(cached, mode, bearer, sent)) {
          this.#adopt(issuer, cached!);
          this.#lastAction = 'cached';
          return true;
        }
        this.#bindClient(contents, issuer);
        let client = this.#clientFor(entry);
        if (mode !== 'step-up' && cached?.refreshToken !== undefined && client !== undefined) {
          try {
            const tokens = await refreshTokens(this.#flow, discovered, client, cached, signal);
            this.#save(() => this.store.update(issuer, resource, (old) => ({ ...old, resource, tokens })));
            this.#adopt(issuer, tokens);
            this.#lastAction = 'refreshed';
            this.#options.logger.info('OAuth token refreshed');
            return true;
          } catch (error) {
            if (!(error instanceof TokenRequestError) || error.kind === 'other') throw error;
            // The grant is gone (revoked, rotated elsewhere) or the client was forgotten: sign in again.
            this.#options.logger.info({ reason: error.message }, 'the refresh token was refused; a new sign-in is needed');
            if (error.kind === 'invalid-client') client = undefined;
            this.#save(() =>
              this.store.update(issuer, resource, (old) => ({ resource, client: error.kind === 'invalid-client' ? undefined : old.client, tokens: undefined })),
            );
          }
        }
        if (this.#options.settings.grant === 'client-credentials') return this.#machineToken(discovered, issuer, resource, client, bearer?.scope);
        if (mode === 'refresh-only') return false;
        const refusal = this.#quietRefusal(mode, contents.lastSignIn, sent, cached);
        if (refusal !== undefined) throw refusal;
        const scope =
          mode === 'step-up'
            ? [...new Set([...scopeSet(cached?.scope ?? this.#current?.tokens.scope), ...scopeSet(bearer?.scope)])].join(' ')
            : (bearer?.scope ?? discovered.scopesSupported?.join(' '));
        const stepUp = mode === 'step-up';
        // Recorded before the browser opens: a bridge that dies meanwhile still holds the others back.
        this.#recordSignIn(issuer, resource, { at: this.#now(), outcome: 'started', stepUp });
        let result: SignInResult;
        try {
          result = await this.#signIn(discovered, scope || undefined, client, issuer, resource);
        } catch (error) {
          const outcome: SignInOutcome = error instanceof SignInError && (error.failure === 'denied' || error.failure === 'timeout') ? error.failure : 'failed';
          this.#recordSignIn(issuer, resource, { at: this.#now(), outcome, stepUp });
          throw error;
        }
        this.#lastAction = 'signed-in';
        // A pre-registered client's secret stays in the environment or its file, never in the cache.
        const keep: StoredClient = result.client.kind === 'pre-registered' ? { kind: 'pre-registered', clientId: result.client.clientId } : result.client;
        this.#recordSignIn(issuer, resource, { at: this.#now(), outcome: 'signed-in', stepUp }, () => ({ resource, client: keep, tokens: result.tokens }));
        this.#adopt(issuer, result.tokens);
        this.#options.logger.info({ server: maskUrl(this.#options.url) }, 'signed in');
        return true;
      });
    } catch (error) {
      if (error instanceof NoResourceMetadataError && mode !== 'login') {
        // A server that wants a static token: the refusal stands and is reported as such.
        this.#options.logger.warn({ reason: error.message }, 'the server asks for a token and offers no OAuth sign-in');
        return false;
      }
      if (isBridgeError(error)) throw error;
      if (error instanceof TokenRequestError && error.hint !== undefined)
        throw new BridgeError('AUTH_REQUIRED', error.message, { hint: error.hint }, { cause: error });
      throw new BridgeError(
        'AUTH_REQUIRED',
        `the OAuth sign-in for ${maskUrl(this.#options.url)} failed: ${reasonOf(error)}`,
        { hint: 'check the network path to the authorization server, then retry; fenbs-mcp doctor shows what is reachable' },
        { cause: error },
      );
    }
  }

  /** A sign-in; a kept registration the server no longer knows is dropped and registered anew once. */
  async #signIn(discovered: Discovered, scope: string | undefined, client: StoredClient | undefined, issuer: string, resource: string): Promise<SignInResult> {
    const signal = this.#closing.signal;
    const preferredPort = client?.redirectUri === undefined ? undefined : Number(new URL(client.redirectUri).port) || undefined;
    const onClient = (obtained: StoredClient) => {
      if (obtained.kind === 'registered') this.#save(() => this.store.update(issuer, resource, (old) => ({ ...old, client: obtained })));
    };
    if (this.#options.settings.grant === 'device-code') {
      return deviceSignIn(this.#flow, {
        discovered,
        scope,
        storedClient: client,
        preferredPort: undefined,
        signal,
        onClient,
        server: maskUrl(this.#options.url),
      });
    }
    try {
      return await signIn(this.#flow, { discovered, scope, storedClient: client, preferredPort, signal, onClient });
    } catch (error) {
      const reused = client?.kind === 'registered';
      if (!(error instanceof SignInError) || !reused || (error.failure !== 'client-rejected' && error.failure !== 'timeout')) throw error;
      // A registration the server forgot shows as an error page instead of a redirect, so a timeout
      // with a kept registration also drops it: the next sign-in registers anew, with no cache to delete.
      this.#save(() => this.store.update(issuer, resource, (old) => ({ ...old, client: undefined })));
      if (error.failure === 'timeout') throw error;
      this.#options.logger.info('the authorization server no longer knows the registered client; registering again');
      return signIn(this.#flow, { discovered, scope, storedClient: undefined, preferredPort: undefined, signal, onClient });
    }
  }
}
