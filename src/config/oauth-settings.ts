// The --oauth-* options and their environment → validated OAuth settings; pure, throws UsageError.

import { createRequire } from 'node:module';
import type * as Crypto from 'node:crypto';
import { UsageError } from '../core/errors.js';

// node:crypto is loaded only when a client key is given, not at every start.
const requireBuiltin = createRequire(import.meta.url);

/** How long a sign-in in the browser may take before the requests waiting for it get an error. */
export const LOGIN_TIMEOUT_MS = 5 * 60_000;
/** Where a pre-registered client's secret may come from besides a file: never argv. */
export const CLIENT_SECRET_ENV = 'FENBS_MCP_OAUTH_CLIENT_SECRET';
/** The environment's spelling of `--oauth-issuer`. */
export const ISSUER_ENV = 'FENBS_MCP_OAUTH_ISSUER';
/** A client secret file holds one secret; anything larger is the wrong file. */
export const MAX_CLIENT_SECRET_FILE_BYTES = 64 * 1024;
const MAX_PORT = 65_535;
const MAX_LOGIN_TIMEOUT_MS = 24 * 60 * 60_000;

/**
 * How tokens are obtained: the authorization code in a browser (the default), the device
 * authorization grant for a machine with no browser (RFC 8628), or the client credentials grant
 * for a machine acting on its own behalf (RFC 6749 §4.4).
 */
export type OAuthGrant = 'authorization-code' | 'device-code' | 'client-credentials';

/** Where `--token-store` puts secrets: the OS credential store when one is reachable, or always one of the two. */
export type TokenStoreMode = 'auto' | 'keychain' | 'file';
export const TOKEN_STORE_MODES: readonly TokenStoreMode[] = ['auto', 'keychain', 'file'];

export interface OAuthSettings {
  readonly grant: OAuthGrant;
  /** A pre-registered client id (`--oauth-client-id`). */
  readonly clientId: string | undefined;
  /** Its secret, from `FENBS_MCP_OAUTH_CLIENT_SECRET` or `--oauth-client-secret-file`; never from argv. */
  readonly clientSecret: string | undefined;
  /** The one authorization server to use (`--oauth-issuer`): discovery refuses any other. */
  readonly issuer: URL | undefined;
  /** A Client ID Metadata Document URL, used as client_id where the server supports it. */
  readonly clientMetadataUrl: URL | undefined;
  /** The loopback callback port; undefined = a free one. */
  readonly callbackPort: number | undefined;
  readonly loginTimeoutMs: number;
  /** The scopes to request instead of the server's (`--oauth-scope`), exactly as given. */
  readonly scope: string | undefined;
  /** The RFC 8707 `resource` to send instead of the server's URI (`--oauth-resource`); false: send none (`--oauth-no-resource`). */
  readonly resource: URL | false | undefined;
  /** Extra parameters of the authorization request, in order (`--oauth-authorize-param name=value`). */
  readonly authorizeParams: readonly (readonly [string, string])[];
  /** A private key for private_key_jwt client authentication (`--oauth-client-key`, RFC 7523 §2.2). */
  readonly clientKey: ClientKey | undefined;
  /** `--oauth-allow-private-network`: an authorization server on a private network is used on purpose (never a cloud metadata address). */
  readonly allowPrivateNetwork: boolean;
  /** `--token-store`: where tokens and client secrets are kept; undefined is `auto`. */
  readonly tokenStore?: TokenStoreMode | undefined;
}

/** A checked private key for signing client assertions; the PEM text is a secret of the run. */
export interface ClientKey {
  readonly file: string;
  readonly pem: string;
  /** The JWS algorithm the key allows (RFC 7518 §3.1): RS256 for RSA, ES256 for P-256, EdDSA for Ed25519. */
  readonly algorithm: 'RS256' | 'ES256' | 'EdDSA';
}

/**
 * The parameters the authorization flow sets itself (RFC 6749 §4.1.1, RFC 7636 §4.3, RFC 8707 §2,
 * RFC 9126 §2.1): an extra parameter of the same name would replace the flow's own, and break PKCE
 * or state checks or send the code elsewhere. `scope` and `resource` have their own options.
 */
const FLOW_PARAMETERS: Readonly<Record<string, string>> = {
  response_type: 'the flow always asks for a code',
  client_id: 'use --oauth-client-id',
  redirect_uri: 'the bridge listens on its own loopback redirect (--oauth-callback-port picks the port)',
  state: 'the bridge makes a fresh state per sign-in and checks it',
  code_challenge: 'PKCE is made fresh per sign-in',
  code_challenge_method: 'PKCE is always S256',
  scope: 'use --oauth-scope',
  resource: 'use --oauth-resource or --oauth-no-resource',
  request: 'a request object would replace every parameter the bridge checks',
  request_uri: 'a request object would replace every parameter the bridge checks',
  client_assertion: 'use --oauth-client-key',
  client_assertion_type: 'use --oauth-client-key',
  client_secret: `put the secret in ${CLIENT_SECRET_ENV} or --oauth-client-secret-file`,
  grant_type: 'the grant is chosen by --oauth-device-code / --oauth-client-credentials',
};
/** More extra parameters than anyone needs is a mistake, not a configuration. */
export const MAX_AUTHORIZE_PARAMS = 32;
/** A private key file holds one PEM key; anything larger is the wrong file. */
export const MAX_CLIENT_KEY_FILE_BYTES = 64 * 1024;

export interface OAuthRawOptions {
  oauthDeviceCode?: boolean | undefined;
  oauthClientCredentials?: boolean | undefined;
  oauthClientId?: string | undefined;
  oauthClientSecretFile?: string | undefined;
  oauthClientMetadataUrl?: string | undefined;
  oauthIssuer?: string | undefined;
  oauthCallbackPort?: string | undefined;
  oauthLoginTimeout?: string | undefined;
  oauthScope?: string | undefined;
  oauthResource?: string | undefined;
  oauthNoResource?: boolean | undefined;
  oauthAuthorizeParam?: string[] | undefined;
  oauthClientKey?: string | undefined;
  oauthAllowPrivateNetwork?: boolean | undefined;
  tokenStore?: string | undefined;
}

function wholeNumber(raw: string, option: string, min: number, max: number): number {
  const value = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) throw new UsageError(`${option} expects a whole number from ${min} to ${max}, got "${raw}"`);
  return value;
}

export function parseOAuthSettings(
  options: OAuthRawOptions,
  env: Readonly<Record<string, string | undefined>>,
  readTextFile: (path: string, maxBytes: number) => string,
): OAuthSettings {
  const clientId = options.oauthClientId?.trim() || undefined;
  let clientSecret = env[CLIENT_SECRET_ENV]?.trim() || undefined;
  if (options.oauthClientSecretFile !== undefined) {
    try {
      clientSecret = readTextFile(options.oauthClientSecretFile, MAX_CLIENT_SECRET_FILE_BYTES).trim() || undefined;
    } catch (error) {
      throw new UsageError(`cannot read --oauth-client-secret-file ${options.oauthClientSecretFile}: ${(error as Error).message}`);
    }
    if (clientSecret === undefined) throw new UsageError(`--oauth-client-secret-file ${options.oauthClientSecretFile} is empty`);
  }
  if (clientSecret !== undefined && clientId === undefined) {
    throw new UsageError('a client secret is set but no --oauth-client-id: the secret belongs to a pre-registered client', 'fenbs-mcp --oauth-client-id <id>');
  }
  if (options.oauthDeviceCode === true && options.oauthClientCredentials === true) {
    throw new UsageError(
      '--oauth-device-code and --oauth-client-credentials are two ways to get a token: pick one',
      'fenbs-mcp --oauth-device-code (a person approves) or --oauth-client-credentials (no person)',
    );
  }
  const grant: OAuthGrant =
    options.oauthDeviceCode === true ? 'device-code' : options.oauthClientCredentials === true ? 'client-credentials' : 'authorization-code';
  const clientKey = options.oauthClientKey === undefined ? undefined : readClientKey(options.oauthClientKey, readTextFile);
  if (clientKey !== undefined && clientId === undefined) {
    throw new UsageError(
      '--oauth-client-key is set but no --oauth-client-id: the key authenticates a pre-registered client',
      'fenbs-mcp --oauth-client-id <id> --oauth-client-key key.pem',
    );
  }
  if (clientKey !== undefined && clientSecret !== undefined) {
    throw new UsageError(
      `--oauth-client-key and a client secret (${CLIENT_SECRET_ENV} or --oauth-client-secret-file) are two ways to authenticate the client: pick one`,
      'fenbs-mcp --oauth-client-id <id> --oauth-client-key key.pem',
    );
  }
  // RFC 6749 §4.4: only a confidential client may use the client credentials grant.
  if (grant === 'client-credentials' && (clientId === undefined || (clientSecret === undefined && clientKey === undefined))) {
    throw new UsageError(
      `--oauth-client-credentials needs a confidential client: --oauth-client-id and its secret in ${CLIENT_SECRET_ENV} or --oauth-client-secret-file (never on the command line), or its private key in --oauth-client-key`,
      `${CLIENT_SECRET_ENV}=… fenbs-mcp --oauth-client-credentials --oauth-client-id <id>`,
    );
  }
  const issuerText = options.oauthIssuer ?? (env[ISSUER_ENV]?.trim() || undefined);
  const issuerOption = options.oauthIssuer === undefined ? ISSUER_ENV : '--oauth-issuer';
  let issuer: URL | undefined;
  if (issuerText !== undefined) {
    // RFC 8414 §2: an issuer identifier is a URL with no query or fragment; http is for a local
    // authorization server, and the OAuth URL rule still applies to every request made to it.
    const url = URL.canParse(issuerText.trim()) ? new URL(issuerText.trim()) : undefined;
    if ((url?.protocol !== 'https:' && url?.protocol !== 'http:') || url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
      throw new UsageError(
        `${issuerOption} must be the authorization server's issuer: an https:// URL (http:// for one on this machine) without a query, fragment or user name, got "${issuerText}"`,
        'fenbs-mcp --oauth-issuer https://auth.example.com',
      );
    }
    issuer = url;
  }
  let clientMetadataUrl: URL | undefined;
  if (options.oauthClientMetadataUrl !== undefined) {
    // draft-ietf-oauth-client-id-metadata-document §3: an https URL with a path.
    const url = URL.canParse(options.oauthClientMetadataUrl) ? new URL(options.oauthClientMetadataUrl) : undefined;
    if (url?.protocol !== 'https:' || url.pathname === '/' || url.hash !== '') {
      throw new UsageError(
        '--oauth-client-metadata-url must be an https:// URL with a path (it is used as the client id)',
        'fenbs-mcp --oauth-client-metadata-url https://example.com/fenbs-mcp.json',
      );
    }
    clientMetadataUrl = url;
  }
  return Object.freeze({
    grant,
    clientId,
    clientSecret,
    issuer,
    clientMetadataUrl,
    callbackPort: options.oauthCallbackPort === undefined ? undefined : wholeNumber(options.oauthCallbackPort, '--oauth-callback-port', 1, MAX_PORT),
    loginTimeoutMs:
      options.oauthLoginTimeout === undefined ? LOGIN_TIMEOUT_MS : wholeNumber(options.oauthLoginTimeout, '--oauth-login-timeout', 1, MAX_LOGIN_TIMEOUT_MS),
    scope: parseScope(options.oauthScope),
    resource: parseResource(options),
    authorizeParams: Object.freeze((options.oauthAuthorizeParam ?? []).map(parseAuthorizeParam)),
    clientKey,
    allowPrivateNetwork: options.oauthAllowPrivateNetwork === true,
    tokenStore: parseTokenStore(options.tokenStore, env),
  });
}

/** `--token-store` (else FENBS_MCP_TOKEN_STORE): auto, keychain or file, in any case. */
function parseTokenStore(raw: string | undefined, env: Readonly<Record<string, string | undefined>>): TokenStoreMode {
  const given = raw ?? env.FENBS_MCP_TOKEN_STORE;
  if (given === undefined || given.trim() === '') return 'auto';
  const mode = TOKEN_STORE_MODES.find((known) => known === given.trim().toLowerCase());
  const source = raw === undefined ? 'FENBS_MCP_TOKEN_STORE' : '--token-store';
  if (mode === undefined) throw new UsageError(`${source} must be auto, keychain or file, got "${given}"`, 'fenbs-mcp --token-store auto');
  return mode;
}

/** RFC 6749 §3.3: scope tokens are %x21 / %x23-5B / %x5D-7E, separated by single spaces. */
function parseScope(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const tokens = raw
    .trim()
    .split(/\s+/)
    .filter((token) => token !== '');
  if (tokens.length === 0 || tokens.some((token) => !/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(token))) {
    throw new UsageError(
      `--oauth-scope expects space-separated scope names (RFC 6749 §3.3: printable ASCII without quotes or backslashes), got ${JSON.stringify(raw)}`,
      'fenbs-mcp --oauth-scope "api://my-app/.default offline_access"',
    );
  }
  return tokens.join(' ');
}

function parseResource(options: OAuthRawOptions): URL | false | undefined {
  if (options.oauthNoResource === true) {
    if (options.oauthResource !== undefined) throw new UsageError('--oauth-resource and --oauth-no-resource contradict each other: pick one');
    return false;
  }
  if (options.oauthResource === undefined) return undefined;
  // RFC 8707 §2: an absolute URI without a fragment.
  const url = URL.canParse(options.oauthResource.trim()) ? new URL(options.oauthResource.trim()) : undefined;
  if (url === undefined || url.hash !== '') {
    throw new UsageError(
      `--oauth-resource expects an absolute URI without a fragment (RFC 8707 §2), got ${JSON.stringify(options.oauthResource)}`,
      'fenbs-mcp --oauth-resource https://api.example.com/',
    );
  }
  return url;
}

function parseAuthorizeParam(raw: string, index: number): readonly [string, string] {
  if (index >= MAX_AUTHORIZE_PARAMS) throw new UsageError(`--oauth-authorize-param is given more than ${MAX_AUTHORIZE_PARAMS} times`);
  const equals = raw.indexOf('=');
  const name = equals === -1 ? '' : raw.slice(0, equals).trim();
  if (name === '' || !/^[A-Za-z0-9_.-]+$/.test(name)) {
    throw new UsageError(
      `--oauth-authorize-param expects name=value, got ${JSON.stringify(raw)}`,
      'fenbs-mcp --oauth-authorize-param audience=https://api.example.com',
    );
  }
  const why = Object.hasOwn(FLOW_PARAMETERS, name) ? FLOW_PARAMETERS[name] : undefined;
  if (why !== undefined) throw new UsageError(`--oauth-authorize-param cannot set ${name}: the sign-in sets it itself (${why})`);
  return Object.freeze([name, raw.slice(equals + 1)] as const);
}

/** Reads and checks a --oauth-client-key file: one unencrypted PEM private key of a kind a JWS algorithm can use. */
function readClientKey(file: string, readTextFile: (path: string, maxBytes: number) => string): ClientKey {
  const { createPrivateKey } = requireBuiltin('node:crypto') as typeof Crypto;
  let pem: string;
  try {
    pem = readTextFile(file, MAX_CLIENT_KEY_FILE_BYTES);
  } catch (error) {
    throw new UsageError(`cannot read --oauth-client-key ${file}: ${(error as Error).message}`);
  }
  const fix =
    'openssl genpkey -algorithm RSA -out key.pem (or -algorithm EC -pkeyopt ec_paramgen_curve:P-256), and register its public key with the authorization server';
  let key: Crypto.KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    throw new UsageError(
      `--oauth-client-key ${file} holds no usable PEM private key${typeof code === 'string' ? ` (${code})` : ''}; an encrypted key is not supported here`,
      fix,
    );
  }
  const type = key.asymmetricKeyType;
  const curve = key.asymmetricKeyDetails?.namedCurve;
  const algorithm = type === 'rsa' ? 'RS256' : type === 'ec' && curve === 'prime256v1' ? 'ES256' : type === 'ed25519' ? 'EdDSA' : undefined;
  if (algorithm === undefined) {
    throw new UsageError(
      `--oauth-client-key ${file} is a ${type ?? 'unknown'}${curve === undefined ? '' : ` ${curve}`} key: private_key_jwt here signs with RSA (RS256), P-256 (ES256) or Ed25519 (EdDSA)`,
      fix,
    );
  }
  return Object.freeze({ file, pem: key.export({ type: 'pkcs8', format: 'pem' }).toString(), algorithm });
}
