// The OAuth 2.1 steps (oauth4webapi does the protocol): client id, authorization code with PKCE in the browser, refresh.

import { createRequire } from 'node:module';
import type * as Crypto from 'node:crypto';
import * as oauth from 'oauth4webapi';
import { BridgeError } from '../../core/errors.js';
import { toTerminalLine } from '../../core/terminal-text.js';
import { SERVER_WORDS_CHARS, terminalExcerptOf, type Mask } from '../../logging/outgoing-text.js';
import { basicCredentialOf } from '../../logging/redactor.js';
import { openableUrlProblem, UNOPENABLE_HINT } from './browser.js';
import { startCallbackServer, type CallbackServer } from './callback-server.js';
import { reasonOf, type Discovered } from './discovery.js';
import type { OAuthHttp } from './http.js';
import type { ClientKey, OAuthSettings } from '../../config/oauth-settings.js';
import { chooseClientAuthMethod } from './client-auth-method.js';
import { withBearerDefault } from './token-type.js';
import { issuedTokenProblem, type StoredClient, type StoredTokens } from './token-store.js';

export const CLIENT_NAME = 'fenbs-mcp';
/** An authorization server's words (an error code, a description, a token type) are shown this long at most. */
/**
 * The longest lifetime taken from `expires_in` (a year): beyond it the expiry time would overflow
 * to Infinity, which JSON writes as null, and the cached token would read back as damaged.
 */
export const MAX_EXPIRES_IN_SECONDS = 366 * 24 * 3600;

export interface FlowDeps {
  http: OAuthHttp;
  settings: OAuthSettings;
  /** Every secret seen (code, verifier, tokens, client secret) is handed here for masking before any use; a refused token is never used. */
  registerSecret: (secret: string) => void;
  /** Masks every secret of the run: what the authorization server says is masked before it is cut. */
  mask: Mask;
  /** Shows the sign-in URL (stderr), whatever happens to the browser. */
  showUrl: (url: string) => void;
  /** Shows the device grant's verification URI and user code (stderr, never stdout). */
  showDeviceCode: (text: string) => void;
  openBrowser: (url: string) => void;
  now: () => number;
  /** A note for the debug log (what the flow chose on the user's behalf). */
  debug?: (message: string) => void;
}

/** RFC 6749 §6 / OpenID Connect Core §11: the scope an authorization server issues a refresh token for. */
const OFFLINE_ACCESS = 'offline_access';

/**
 * The scope to request: `--oauth-scope` exactly as given, else the server's, with `offline_access`
 * added when the authorization server lists it (MCP authorization 2026-07-28 §Refresh Tokens lets
 * a client add it; Entra ID and others issue a refresh token only then). The client credentials
 * grant gets no refresh token (RFC 6749 §4.4.3), so nothing is added there.
 */
export function requestedScope(deps: FlowDeps, as: oauth.AuthorizationServer, fromServer: string | undefined): string | undefined {
  if (deps.settings.scope !== undefined) return deps.settings.scope;
  const scopes = (fromServer ?? '').split(' ').filter((scope) => scope !== '');
  if (deps.settings.grant !== 'client-credentials' && as.scopes_supported?.includes(OFFLINE_ACCESS) === true && !scopes.includes(OFFLINE_ACCESS)) {
    deps.debug?.(`OAuth: asking for ${OFFLINE_ACCESS} too: the authorization server lists it, and without it no refresh token is issued`);
    scopes.push(OFFLINE_ACCESS);
  }
  return scopes.length === 0 ? undefined : scopes.join(' ');
}

/** The RFC 8707 `resource` parameter, as the options say: the server's URI, another, or none at all. */
export function resourceParameters(deps: FlowDeps, resource: URL): Record<string, string> {
  const chosen = deps.settings.resource;
  if (chosen === false) return {};
  return { resource: (chosen ?? resource).href };
}

/** The extra parameters of a grant's first request (`--oauth-authorize-param`), in order. */
export function extraParameters(deps: FlowDeps): Record<string, string> {
  return Object.fromEntries(deps.settings.authorizeParams);
}

/** Why a token request failed, as the caller must react to it. */
export type TokenFailure = 'invalid-grant' | 'invalid-client' | 'other';

export class TokenRequestError extends Error {
  override readonly name = 'TokenRequestError';
  /** What to do about it, when the usual hint (sign in again) would not help. */
  readonly hint: string | undefined;
  constructor(
    readonly kind: TokenFailure,
    message: string,
    options?: { cause?: unknown; hint?: string | undefined },
  ) {
    super(message, options);
    this.hint = options?.hint;
  }
}

/** Text from the authorization server, as a message may carry it: secrets masked, then bounded, then one line with controls visible. */
export function serverWords(text: string, mask: Mask): string {
  return terminalExcerptOf(text, mask, SERVER_WORDS_CHARS);
}

const UNSENDABLE_HINT =
  'the authorization server issues tokens fenbs-mcp cannot send: ask its administrator to issue this client Bearer tokens of plain characters';

/**
 * Refuses a token response the bridge cannot honestly use, before anything of it is kept: a
 * token_type other than Bearer (RFC 6749 §7.1: a client must not use a token whose type it does not
 * understand; a DPoP token, RFC 9449, needs a proof signed with a key this client does not hold),
 * or a token no Authorization header can carry (issuedTokenProblem).
 */
export function checkIssued(tokens: oauth.TokenEndpointResponse, what: string, mask: Mask): void {
  // oauth4webapi lowercases token_type (RFC 6749 §5.1: case-insensitive) and passes bearer and dpop.
  if (tokens.token_type !== 'bearer') throw unsendableType(tokens.token_type, what, mask);
  for (const [name, token] of [
    ['an access token', tokens.access_token],
    ['a refresh token', tokens.refresh_token],
  ] as const) {
    const problem = token === undefined ? undefined : issuedTokenProblem(token);
    if (problem !== undefined)
      throw new TokenRequestError(
        'other',
        `${what} returned ${name} that contains ${problem}, so it cannot be sent in an Authorization header; it is not kept`,
        { hint: UNSENDABLE_HINT },
      );
  }
}

function unsendableType(type: string, what: string, mask: Mask): TokenRequestError {
  return new TokenRequestError(
    'other',
    `${what} returned a token of type "${serverWords(type, mask)}": fenbs-mcp sends only Bearer tokens (RFC 6750), so it is not kept`,
    { hint: UNSENDABLE_HINT },
  );
}

/**
 * The option that fixes an authorization server's refusal, when its words say which: a `resource`
 * (RFC 8707) that does not match the scopes, which RFC 8707 §2 calls invalid_target and Entra ID
 * reports as AADSTS9010010 inside invalid_request (or AADSTS500011 for an unknown resource).
 */
export function fixFor(error: string, description: string | undefined): string | undefined {
  const words = `${error} ${description ?? ''}`;
  if (error === 'invalid_target' || /AADSTS(9010010|500011)\b/.test(words) || /\bresource\b.*\b(match|scope)/i.test(description ?? '')) {
    return 'the authorization server refuses the resource parameter (RFC 8707) with these scopes: pass --oauth-no-resource, or --oauth-resource with the API identifier its scopes belong to, and --oauth-scope with those scopes (Entra ID: --oauth-scope "api://<app id>/.default offline_access")';
  }
  return undefined;
}

export function classifyTokenError(error: unknown, what: string, mask: Mask): TokenRequestError {
  if (error instanceof TokenRequestError) return error;
  if (error instanceof oauth.ResponseBodyError) {
    const kind =
      error.error === 'invalid_grant'
        ? 'invalid-grant'
        : error.error === 'invalid_client' || error.error === 'unauthorized_client'
          ? 'invalid-client'
          : 'other';
    return new TokenRequestError(
      kind,
      `${what} refused: ${serverWords(error.error, mask)}${error.error_description === undefined ? '' : ` (${serverWords(error.error_description, mask)})`}`,
      { cause: error, hint: fixFor(error.error, error.error_description) },
    );
  }
  if (error instanceof oauth.WWWAuthenticateChallengeError) {
    // RFC 6749 §5.2: a client authentication the server refuses may come as 401 with a challenge
    // (oidc-provider does so for a wrong secret) rather than as a JSON error body.
    const params = error.cause[0]?.parameters;
    const code = params?.error ?? `HTTP ${error.status}`;
    return new TokenRequestError(
      error.status === 401 || code === 'invalid_client' ? 'invalid-client' : 'other',
      `${what} refused: ${serverWords(code, mask)}${params?.error_description === undefined ? '' : ` (${serverWords(params.error_description, mask)})`}`,
      { cause: error },
    );
  }
  // oauth4webapi refuses a token_type it does not know (MAC, anything else) before returning it.
  const body = error instanceof oauth.UnsupportedOperationError ? (error.cause as { body?: { token_type?: unknown } } | undefined)?.body : undefined;
  if (typeof body?.token_type === 'string') return unsendableType(body.token_type, what, mask);
  return new TokenRequestError('other', `${what} failed: ${reasonOf(error)}`, { cause: error });
}

export function toClient(stored: StoredClient): oauth.Client {
  return { client_id: stored.clientId };
}

/**
 * RFC 6749 §2.3.1: client_secret_basic unless the server lists only client_secret_post. The
 * secret, and the Basic credential made of it, join the run's secrets before they are sent: an
 * authorization server that echoes its request in an error shows either one.
 */
export function clientAuth(as: oauth.AuthorizationServer, stored: StoredClient, deps: Pick<FlowDeps, 'registerSecret' | 'settings'>): oauth.ClientAuth {
  const key = deps.settings.clientKey;
  if (key !== undefined && stored.kind === 'pre-registered' && stored.clientId === deps.settings.clientId) return privateKeyJwt(as, key, deps);
  if (stored.clientSecret === undefined) return oauth.None();
  deps.registerSecret(stored.clientSecret);
  if (chooseClientAuthMethod(as.token_endpoint_auth_methods_supported) === 'client_secret_post') return oauth.ClientSecretPost(stored.clientSecret);
  deps.registerSecret(basicCredentialOf(stored.clientId, stored.clientSecret));
  return oauth.ClientSecretBasic(stored.clientSecret);
}

/**
 * private_key_jwt (RFC 7523 §2.2, OpenID Connect Core §9): a client assertion signed with the key,
 * `iss` and `sub` the client id, a fresh `jti`, a 60 s `exp`, and `aud` the token endpoint, which
 * RFC 7523 §3 names as the value an authorization server accepts (Entra ID, Okta and Keycloak
 * check it). The key is imported once, when first used; its PEM text is a secret of the run.
 */
function privateKeyJwt(as: oauth.AuthorizationServer, key: ClientKey, deps: Pick<FlowDeps, 'registerSecret'>): oauth.ClientAuth {
  deps.registerSecret(key.pem);
  const audience = as.token_endpoint ?? as.issuer;
  return async (server, client, body, headers) => {
    const cryptoKey = await importSigningKey(key);
    await oauth.PrivateKeyJwt(cryptoKey, {
      [oauth.modifyAssertion]: (_header, payload) => {
        payload.aud = audience;
      },
    })(server, client, body, headers);
  };
}

// node:crypto is loaded only when a client key signs, not at every start.
const requireBuiltin = createRequire(import.meta.url);

const signingKeys = new WeakMap<ClientKey, Promise<Crypto.webcrypto.CryptoKey>>();

function importSigningKey(key: ClientKey): Promise<Crypto.webcrypto.CryptoKey> {
  let imported = signingKeys.get(key);
  if (imported === undefined) {
    const der = Buffer.from(key.pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
    const algorithm =
      key.algorithm === 'RS256'
        ? { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }
        : key.algorithm === 'ES256'
          ? { name: 'ECDSA', namedCurve: 'P-256' }
          : { name: 'Ed25519' };
    const { webcrypto } = requireBuiltin('node:crypto') as typeof Crypto;
    imported = webcrypto.subtle.importKey('pkcs8', der, algorithm, false, ['sign']);
    signingKeys.set(key, imported);
  }
  return imported;
}

export function toStoredTokens(response: oauth.TokenEndpointResponse, now: number, previous?: StoredTokens): StoredTokens {
  return {
    accessToken: response.access_token,
    // Servers rotate refresh tokens (OAuth 2.1 §4.3.1): keep the newest; keep the old one only when none came.
    refreshToken: response.refresh_token ?? previous?.refreshToken,
    expiresAt: typeof response.expires_in === 'number' ? now + Math.min(response.expires_in, MAX_EXPIRES_IN_SECONDS) * 1000 : undefined,
    obtainedAt: now,
    scope: response.scope ?? previous?.scope,
  };
}

/**
 * The client id, in the order the MCP spec gives (authorization §Client Registration): the
 * pre-registered one, a Client ID Metadata Document when the server supports it, a registration
 * kept from before (when it was made for this redirect URI), then dynamic registration (RFC 7591).
 */
export async function obtainClient(
  deps: FlowDeps,
  as: oauth.AuthorizationServer,
  stored: StoredClient | undefined,
  redirectUri: string | undefined,
  signal: AbortSignal,
  grantTypes: readonly string[] = ['authorization_code', 'refresh_token'],
): Promise<StoredClient> {
  const { settings } = deps;
  if (settings.clientId !== undefined) return { kind: 'pre-registered', clientId: settings.clientId, clientSecret: settings.clientSecret };
  if (settings.clientMetadataUrl !== undefined && as.client_id_metadata_document_supported === true) {
    return { kind: 'metadata-document', clientId: settings.clientMetadataUrl.href };
  }
  if (stored?.kind === 'registered' && stored.redirectUri === redirectUri) return stored;
  if (as.registration_endpoint === undefined) {
    throw new BridgeError('AUTH_REQUIRED', `the authorization server ${as.issuer} offers no dynamic client registration, and no client id is configured`, {
      hint: 'register fenbs-mcp with the server and pass --oauth-client-id (secret in FENBS_MCP_OAUTH_CLIENT_SECRET if it has one)',
    });
  }
  let registered: Awaited<ReturnType<typeof oauth.processDynamicClientRegistrationResponse>>;
  try {
    const response = await oauth.dynamicClientRegistrationRequest(
      as,
      {
        client_name: CLIENT_NAME,
        // A native app on a loopback redirect (RFC 8252 §7.3); the MCP spec (2026-07-28) requires
        // application_type from DCR clients.
        application_type: 'native',
        // The device grant (RFC 8628) has no redirect: a client registered for it asks for none.
        ...(redirectUri === undefined ? { response_types: [] } : { redirect_uris: [redirectUri], response_types: ['code'] }),
        // RFC 7591 §2 defaults to authorization_code alone, and then no refresh token is issued.
        grant_types: [...grantTypes],
        token_endpoint_auth_method: 'none',
      },
      deps.http.options(new URL(as.registration_endpoint), signal),
    );
    registered = await oauth.processDynamicClientRegistrationResponse(response);
  } catch (error) {
    if (signal.aborted) throw error;
    throw new BridgeError('AUTH_REQUIRED', `registering with the authorization server ${as.issuer} failed: ${reasonOf(error)}`, {
      hint: 'the server refused dynamic client registration; register fenbs-mcp with it and pass --oauth-client-id',
    });
  }
  const secret = typeof registered.client_secret === 'string' ? registered.client_secret : undefined;
  if (secret !== undefined) deps.registerSecret(secret);
  return { kind: 'registered', clientId: registered.client_id, clientSecret: secret, redirectUri };
}

export interface SignInRequest {
  discovered: Discovered;
  scope: string | undefined;
  storedClient: StoredClient | undefined;
  /** Port to prefer when none is configured: that of the client registered before. */
  preferredPort: number | undefined;
  signal: AbortSignal;
  /** Told of a newly obtained client id before the browser opens. */
  onClient?: (client: StoredClient) => void;
}

export interface SignInResult {
  client: StoredClient;
  tokens: StoredTokens;
}

/** Why a sign-in did not complete: `client-rejected` means the client id itself was refused. */
export type SignInFailure = 'timeout' | 'denied' | 'client-rejected' | 'failed';

export class SignInError extends BridgeError {
  constructor(
    readonly failure: SignInFailure,
    message: string,
    context: { url?: string; hint: string },
    options?: { cause?: unknown },
  ) {
    super('AUTH_REQUIRED', message, context, options);
  }
}

async function listen(port: number | undefined, fallback: boolean, state: string): Promise<CallbackServer> {
  try {
    return await startCallbackServer(port ?? 0, state);
  } catch (error) {
    if (!fallback || port === undefined) {
      throw new SignInError('failed', `cannot listen for the sign-in callback on 127.0.0.1:${port ?? 0}: ${reasonOf(error)}`, {
        hint: 'another program uses that port: pick another with --oauth-callback-port, or leave it out for a free one',
      });
    }
    return startCallbackServer(0, state);
  }
}

/**
 * Authorization code flow with PKCE S256 and the `resource` parameter (RFC 8707) on both the
 * authorization and the token request: opens the browser, waits for the loopback callback
 * (bounded by the login timeout), checks `state` and `iss` (RFC 9207) and exchanges the code.
 */
export async function signIn(deps: FlowDeps, request: SignInRequest): Promise<SignInResult> {
  const { as, resource } = request.discovered;
  const state = oauth.generateRandomState();
  const verifier = oauth.generateRandomCodeVerifier();
  deps.registerSecret(verifier);
  const explicitPort = deps.settings.callbackPort;
  const callback = await listen(explicitPort ?? request.preferredPort, explicitPort === undefined, state);
  let authorizationUrl: string | undefined;
  try {
    const client = await obtainClient(deps, as, request.storedClient, callback.redirectUri, request.signal);
    // Kept before the browser opens: a sign-in that fails still leaves one registration to reuse.
    if (client !== request.storedClient) request.onClient?.(client);
    const url = new URL(as.authorization_endpoint!);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('client_id', client.clientId);
    url.searchParams.set('redirect_uri', callback.redirectUri);
    url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
    url.searchParams.set('code_challenge_method', 'S256');
    url.searchParams.set('state', state);
    for (const [name, value] of Object.entries(resourceParameters(deps, resource))) url.searchParams.set(name, value);
    const scope = requestedScope(deps, as, request.scope);
    if (scope !== undefined) url.searchParams.set('scope', scope);
    // Extra parameters last, but never over one the flow set (the options refuse those names).
    for (const [name, value] of deps.settings.authorizeParams) if (!url.searchParams.has(name)) url.searchParams.append(name, value);
    authorizationUrl = url.href;
    // Checked before it is shown or opened, whichever opener deps carries (CVE-2025-6514).
    const problem = openableUrlProblem(authorizationUrl);
    if (problem !== undefined)
      throw new SignInError('failed', `refused to open the sign-in page of ${toTerminalLine(as.issuer)} in the browser: ${problem}`, { hint: UNOPENABLE_HINT });
    deps.showUrl(authorizationUrl);
    deps.openBrowser(authorizationUrl);

    const params = await waitForCallback(callback, deps.settings.loginTimeoutMs, request.signal, authorizationUrl);
    let checked: URLSearchParams;
    try {
      checked = oauth.validateAuthResponse(as, toClient(client), params, state);
    } catch (error) {
      if (error instanceof oauth.AuthorizationResponseError) {
        const denied = error.error === 'access_denied';
        throw new SignInError(
          denied ? 'denied' : error.error === 'invalid_client' || error.error === 'unauthorized_client' ? 'client-rejected' : 'failed',
          denied
            ? `the sign-in was denied (${serverWords(error.error_description ?? error.error, deps.mask)})`
            : `the authorization server refused the sign-in: ${serverWords(error.error, deps.mask)}${error.error_description === undefined ? '' : ` (${serverWords(error.error_description, deps.mask)})`}`,
          {
            url: authorizationUrl,
            hint: denied
              ? 'sign in again and allow access: run fenbs-mcp login (requests open a new sign-in only after a quiet period)'
              : (fixFor(error.error, error.error_description) ?? 'see the message from the authorization server'),
          },
        );
      }
      throw new SignInError('failed', `the sign-in response failed its checks: ${reasonOf(error)}`, {
        url: authorizationUrl,
        hint: 'the response did not come from the expected authorization server (RFC 9207 iss) or was malformed',
      });
    }
    const code = checked.get('code');
    if (code !== null) deps.registerSecret(code);
    let tokens: oauth.TokenEndpointResponse;
    try {
      const response = await oauth.authorizationCodeGrantRequest(as, toClient(client), clientAuth(as, client, deps), checked, callback.redirectUri, verifier, {
        ...deps.http.options(new URL(as.token_endpoint!), request.signal),
        additionalParameters: resourceParameters(deps, resource),
      });
      tokens = await oauth.processAuthorizationCodeResponse(as, toClient(client), await withBearerDefault(response));
      // Before masking: a refused token is never used nor shown, and a huge one would slow every log line.
      checkIssued(tokens, 'the code exchange', deps.mask);
      registerTokens(deps, tokens);
    } catch (error) {
      if (request.signal.aborted) throw error;
      const failure = classifyTokenError(error, 'the code exchange', deps.mask);
      throw new SignInError(
        failure.kind === 'invalid-client' ? 'client-rejected' : 'failed',
        failure.message,
        { url: authorizationUrl, hint: failure.hint ?? 'sign in again; if it keeps failing, the authorization server refuses this client' },
        { cause: error },
      );
    }
    return { client, tokens: toStoredTokens(tokens, deps.now()) };
  } finally {
    await callback.close();
  }
}

export function registerTokens(deps: FlowDeps, tokens: oauth.TokenEndpointResponse): void {
  deps.registerSecret(tokens.access_token);
  if (tokens.refresh_token !== undefined) deps.registerSecret(tokens.refresh_token);
  if (tokens.id_token !== undefined) deps.registerSecret(tokens.id_token);
}

function waitForCallback(callback: CallbackServer, timeoutMs: number, signal: AbortSignal, url: string): Promise<URLSearchParams> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(
        new SignInError('timeout', `no sign-in completed within ${Math.round(timeoutMs / 1000)} s (the browser window was closed, or nobody signed in)`, {
          url,
          hint: 'run fenbs-mcp login and sign in (requests open a new sign-in only after a quiet period); --oauth-login-timeout sets the wait',
        }),
      );
    }, timeoutMs);
    const onAbort = () => {
      cleanup();
      reject(signal.reason as Error);
    };
    const cleanup = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    callback.response.then((params) => {
      cleanup();
      resolve(params);
    }, reject);
  });
}

/** Refresh with the refresh token (no browser), `resource` included (RFC 8707 §2.2). */
export async function refreshTokens(
  deps: FlowDeps,
  discovered: Discovered,
  client: StoredClient,
  previous: StoredTokens,
  signal: AbortSignal,
): Promise<StoredTokens> {
  const { as, resource } = discovered;
  if (previous.refreshToken === undefined) throw new TokenRequestError('invalid-grant', 'no refresh token was issued');
  try {
    const response = await oauth.refreshTokenGrantRequest(as, toClient(client), clientAuth(as, client, deps), previous.refreshToken, {
      ...deps.http.options(new URL(as.token_endpoint!), signal),
      additionalParameters: resourceParameters(deps, resource),
    });
    const tokens = await oauth.processRefreshTokenResponse(as, toClient(client), await withBearerDefault(response));
    checkIssued(tokens, 'the token refresh', deps.mask);
    registerTokens(deps, tokens);
    return toStoredTokens(tokens, deps.now(), previous);
  } catch (error) {
    if (signal.aborted) throw error;
    throw classifyTokenError(error, 'the token refresh', deps.mask);
  }
}
