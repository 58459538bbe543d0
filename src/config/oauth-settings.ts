// The --oauth-* options and their environment → validated OAuth settings; pure, throws UsageError.

import { UsageError } from '../core/errors.js';

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
}

export interface OAuthRawOptions {
  oauthDeviceCode?: boolean | undefined;
  oauthClientCredentials?: boolean | undefined;
  oauthClientId?: string | undefined;
  oauthClientSecretFile?: string | undefined;
  oauthClientMetadataUrl?: string | undefined;
  oauthIssuer?: string | undefined;
  oauthCallbackPort?: string | undefined;
  oauthLoginTimeout?: string | undefined;
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
  // RFC 6749 §4.4: only a confidential client may use the client credentials grant.
  if (grant === 'client-credentials' && (clientId === undefined || clientSecret === undefined)) {
    throw new UsageError(
      `--oauth-client-credentials needs a confidential client: --oauth-client-id and its secret in ${CLIENT_SECRET_ENV} or --oauth-client-secret-file (never on the command line)`,
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
  });
}
