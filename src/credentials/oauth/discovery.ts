// Finds the server's authorization server: the Bearer challenge, protected-resource metadata, then AS metadata.

import * as oauth from 'oauth4webapi';
import { BridgeError } from '../../core/errors.js';
import { maskUrl } from '../../logging/redactor.js';
import { toTerminalLine } from '../../core/terminal-text.js';
import { terminalExcerptOf, type Mask } from '../../logging/outgoing-text.js';
import { openableUrlProblem, UNOPENABLE_HINT } from './browser.js';
import { oauthUrlRefusal, RefusedOAuthUrlError, type OAuthHttp } from './http.js';
import { RefusedAddressError } from './address-guard.js';
import { toBridgeError } from '../../http/failures.js';
import type { OAuthGrant } from '../../config/oauth-settings.js';

/** What a `WWW-Authenticate: Bearer` challenge says (RFC 6750 §3, RFC 9728 §5.1). */
export interface BearerChallenge {
  /** False when the header carries no Bearer challenge at all. */
  bearer: boolean;
  resourceMetadata: URL | undefined;
  scope: string | undefined;
  error: string | undefined;
}

/** The protected resource and its authorization server, as discovered. */
export interface Discovered {
  /** The MCP server's canonical URI, sent as `resource` (RFC 8707) on both requests. */
  resource: URL;
  /** Scopes the resource metadata lists, for when the challenge names none. */
  scopesSupported: readonly string[] | undefined;
  as: oauth.AuthorizationServer;
}

export const NO_CHALLENGE: BearerChallenge = Object.freeze({ bearer: false, resourceMetadata: undefined, scope: undefined, error: undefined });

/** The server asked for a token but publishes no OAuth metadata: it wants a static token, not a sign-in. */
export class NoResourceMetadataError extends BridgeError {}

/**
 * Parses `WWW-Authenticate` with oauth4webapi's own parser (it raises the parsed challenges as a
 * WWWAuthenticateChallengeError from any response that carries the header), so no challenge
 * grammar is written here. Only the Bearer challenge counts.
 */
export async function parseBearerChallenge(header: string | undefined): Promise<BearerChallenge> {
  if (header === undefined || header.trim() === '') return NO_CHALLENGE;
  let challenges: oauth.WWWAuthenticateChallenge[] = [];
  try {
    await oauth.processRevocationResponse(new Response(null, { status: 401, headers: { 'www-authenticate': header } }));
  } catch (error) {
    if (error instanceof oauth.WWWAuthenticateChallengeError) challenges = error.cause;
  }
  const bearer = challenges.find((challenge) => challenge.scheme === 'bearer');
  if (bearer === undefined) return NO_CHALLENGE;
  const { resource_metadata: metadata, scope, error } = bearer.parameters;
  return { bearer: true, resourceMetadata: metadata !== undefined && URL.canParse(metadata) ? new URL(metadata) : undefined, scope, error };
}

/**
 * The RFC 9728 §3 well-known URLs for `server`, in the order the MCP authorization spec gives
 * (§Protected Resource Metadata Discovery): path-aware first, then the root.
 */
export function resourceMetadataUrls(server: URL): URL[] {
  const path = server.pathname.replace(/\/$/, '');
  const urls = [new URL(`/.well-known/oauth-protected-resource${path}`, server.origin)];
  if (path !== '') urls.push(new URL('/.well-known/oauth-protected-resource', server.origin));
  return urls;
}

/**
 * The authorization-server metadata URLs for `issuer`, in the spec's order (authorization
 * §Authorization Server Metadata Discovery): RFC 8414 with path insertion, OpenID Connect with
 * path insertion, OpenID Connect with path appending; without a path, RFC 8414 then OIDC.
 */
export function authorizationServerMetadataUrls(issuer: URL): URL[] {
  const path = issuer.pathname.replace(/\/$/, '');
  if (path === '') return [new URL('/.well-known/oauth-authorization-server', issuer.origin), new URL('/.well-known/openid-configuration', issuer.origin)];
  return [
    new URL(`/.well-known/oauth-authorization-server${path}`, issuer.origin),
    new URL(`/.well-known/openid-configuration${path}`, issuer.origin),
    new URL(`${path}/.well-known/openid-configuration`, issuer.origin),
  ];
}

/** How much of an issuer a server published the refusal quotes: a hostile one may be megabytes. */
const MAX_ISSUER_CHARS = 200;
/** How much of each well-known URL's failure that message quotes: the URL is the issuer's, which a server named. */
const MAX_REASON_CHARS = 400;

function discoveryFailure(message: string, hint: string, cause?: unknown): BridgeError {
  return new BridgeError('AUTH_REQUIRED', message, { hint }, { cause });
}

/** A short reason from an oauth4webapi or network failure, for a message. */
export function reasonOf(error: unknown): string {
  if (error instanceof BridgeError) return error.message;
  if (error instanceof Error) return error.message;
  return String(error);
}

async function get(http: OAuthHttp, url: URL, signal: AbortSignal): Promise<Response> {
  return http.fetch(url.href, { method: 'GET', headers: { accept: 'application/json' }, signal });
}

/**
 * GETs each URL in turn and yields those that answered; a URL that could not be reached is noted in
 * `reasons`. When the MCP server itself (`server`'s origin) cannot be connected to at all (nothing
 * listening, a name that does not resolve), that is the answer, not "no OAuth metadata": it is
 * thrown as the bridge's own connection failure, so `login` says what the bridge would.
 */
async function* answersFrom(
  http: OAuthHttp,
  urls: Iterable<URL>,
  signal: AbortSignal,
  reasons: string[],
  server?: URL,
): AsyncGenerator<{ url: URL; response: Response }> {
  for (const url of urls) {
    let response: Response;
    try {
      response = await get(http, url, signal);
    } catch (error) {
      // A URL the rule refuses is an answer about the server, not one URL of several that failed.
      if (signal.aborted || error instanceof RefusedOAuthUrlError || error instanceof RefusedAddressError) throw error;
      if (server !== undefined && url.origin === server.origin) {
        const failure = toBridgeError(error, undefined, { url: server });
        if (failure.context.neverSent === true) throw failure;
      }
      reasons.push(`${url.href}: ${reasonOf(error)}`);
      continue;
    }
    yield { url, response };
  }
}

/**
 * The protected-resource metadata: from the challenge's `resource_metadata` when given (clients
 * MUST prefer it), else the well-known URLs. Its `resource` must be the server's URL or a prefix of
 * it on the same origin (what MCP servers publish); oauth4webapi validates the document.
 */
async function findResourceMetadata(http: OAuthHttp, server: URL, challenge: BearerChallenge, signal: AbortSignal): Promise<oauth.ResourceServer> {
  const candidates = challenge.resourceMetadata === undefined ? resourceMetadataUrls(server) : [challenge.resourceMetadata];
  const reasons: string[] = [];
  for await (const { url, response } of answersFrom(http, candidates, signal, reasons, server)) {
    if (response.status !== 200) {
      reasons.push(`${url.href}: HTTP ${response.status}`);
      continue;
    }
    const text = await response.text();
    const resource = resourceOf(text);
    const expected = resource !== undefined && isResourceFor(resource, server) ? resource : server;
    try {
      return await oauth.processResourceDiscoveryResponse(expected, new Response(text, { status: 200, headers: { 'content-type': 'application/json' } }));
    } catch (error) {
      reasons.push(`${url.href}: ${reasonOf(error)}`);
    }
  }
  throw new NoResourceMetadataError(
    'AUTH_REQUIRED',
    `the server asks for a token but publishes no usable OAuth protected-resource metadata (${reasons.join('; ')})`,
    {
      hint: 'this server does not offer OAuth sign-in: give a token with FENBS_TOKEN or --token-file',
    },
  );
}

function resourceOf(text: string): URL | undefined {
  try {
    const value = (JSON.parse(text) as { resource?: unknown }).resource;
    return typeof value === 'string' && URL.canParse(value) ? new URL(value) : undefined;
  } catch {
    return undefined;
  }
}

/** True when `resource` names `server` itself or a path above it on the same origin. */
export function isResourceFor(resource: URL, server: URL): boolean {
  if (resource.origin !== server.origin || resource.search !== '' || resource.hash !== '') return false;
  const base = resource.pathname.endsWith('/') ? resource.pathname : `${resource.pathname}/`;
  return server.pathname === resource.pathname || `${server.pathname}/`.startsWith(base);
}

/** The endpoints of an authorization server the bridge may send a request to: each follows the one OAuth URL rule. */
const REQUESTED_ENDPOINTS = ['token_endpoint', 'registration_endpoint', 'revocation_endpoint', 'device_authorization_endpoint'] as const;

/**
 * Refuses metadata whose endpoints the bridge must never use, the moment it is accepted: an
 * authorization endpoint that openableUrlProblem refuses (it goes to the system opener), or a token,
 * registration, revocation or device endpoint that oauthUrlProblem refuses (secrets go there); and,
 * through the address guard, any of them on an address of the user's own network (RFC 8414 §6,
 * RFC 9728 §7.7), before a client is registered or a browser opened, rather than at the token
 * request after the person has signed in. The sign-in page is checked too: the browser would send
 * the user's own GET, with the server's query, to a host on their network.
 */
async function checkEndpoints(http: OAuthHttp, as: oauth.AuthorizationServer): Promise<void> {
  const page = as.authorization_endpoint;
  if (page !== undefined) {
    const problem = typeof page === 'string' && URL.canParse(page) ? openableUrlProblem(new URL(page).href) : 'it is not a URL';
    if (problem !== undefined) {
      throw discoveryFailure(
        `refused the authorization server ${toTerminalLine(as.issuer)}: its authorization_endpoint ${toTerminalLine(maskUrl(String(page)))} will not be opened in a browser: ${problem}`,
        UNOPENABLE_HINT,
      );
    }
    await http.guard?.checkPage(new URL(page));
  }
  for (const name of REQUESTED_ENDPOINTS) {
    const value = as[name];
    if (value === undefined) continue;
    if (typeof value !== 'string' || !URL.canParse(value))
      throw discoveryFailure(
        `refused the authorization server ${toTerminalLine(as.issuer)}: its ${name} is not a URL`,
        'the authorization server metadata is malformed; contact its operator',
      );
    const refused = oauthUrlRefusal(new URL(value), http.allowHttp, `the authorization server's ${name}`);
    if (refused !== undefined) throw refused;
    await http.guard?.checkUrl(new URL(value), `the authorization server's ${name} at`);
  }
}

/**
 * Authorization-server metadata for `issuer`, trying each well-known URL in order;
 * oauth4webapi rejects a document whose `issuer` is not exactly `issuer` (RFC 8414 §3.3), and
 * checkEndpoints one whose endpoints the bridge would not use.
 */
export async function fetchAuthorizationServer(
  http: OAuthHttp,
  issuer: URL,
  signal: AbortSignal,
  mask: Mask = (text) => text,
): Promise<oauth.AuthorizationServer> {
  const reasons: string[] = [];
  for await (const { url, response } of answersFrom(http, authorizationServerMetadataUrls(issuer), signal, reasons)) {
    if (response.status === 404) {
      reasons.push(`${url.href}: HTTP 404`);
      continue;
    }
    let as: oauth.AuthorizationServer;
    try {
      as = await oauth.processDiscoveryResponse(issuer, response);
    } catch (error) {
      if (error instanceof oauth.OperationProcessingError && error.code === oauth.JSON_ATTRIBUTE_COMPARISON) {
        // A document for another issuer is refused outright, never tried as a fallback; both
        // values are named, so the user can tell the server's metadata is at fault.
        const named = (error.cause as { body?: { issuer?: unknown } } | undefined)?.body?.issuer;
        throw discoveryFailure(
          `the authorization server metadata at ${toTerminalLine(maskUrl(url))} says its issuer is ${terminalExcerptOf(JSON.stringify(String(named)), mask, MAX_ISSUER_CHARS)}, but it was looked up for the issuer ${JSON.stringify(toTerminalLine(maskUrl(issuer)))}: refused, as RFC 8414 §3.3 requires`,
          "the server's OAuth metadata is at fault (its authorization_servers entry and the issuer's own metadata must name the same URL, to the trailing slash): tell the server's operator; no client setting can safely work around it",
          error,
        );
      }
      reasons.push(`${url.href}: ${reasonOf(error)}`);
      continue;
    }
    await checkEndpoints(http, as);
    return as;
  }
  throw discoveryFailure(
    `no authorization server metadata found for ${terminalExcerptOf(maskUrl(issuer), mask, MAX_ISSUER_CHARS)} (${reasons.map((reason) => terminalExcerptOf(reason, mask, MAX_REASON_CHARS)).join('; ')})`,
    'the authorization server must publish RFC 8414 or OpenID Connect discovery metadata',
  );
}

/**
 * The refusal of an authorization server other than the one `--oauth-issuer` names, or undefined.
 * Issuers compare as oauth4webapi compares them to their metadata (the parsed URL, RFC 8414 §3.3).
 */
export function otherIssuerRefusal(named: URL, configured: URL | undefined): BridgeError | undefined {
  if (configured === undefined || named.href === configured.href) return undefined;
  return discoveryFailure(
    `refused the authorization server ${toTerminalLine(maskUrl(named))}: --oauth-issuer names ${toTerminalLine(configured.href)}, and no request goes to another`,
    'if the server really moved to that authorization server, pass it with --oauth-issuer (or FENBS_MCP_OAUTH_ISSUER); otherwise the server is misconfigured or something is impersonating it',
  );
}

export interface DiscoverOptions {
  /** The one authorization server to use (`--oauth-issuer`). */
  issuer?: URL | undefined;
  /** The grant the metadata must serve (its endpoints); the browser sign-in when absent. */
  grant?: OAuthGrant;
  /** The run's mask, for what a server published that a message quotes (masked, then cut). */
  mask?: Mask;
}

/**
 * Refuses metadata that lacks an endpoint the chosen grant uses, and nothing else: RFC 8414 §2
 * makes authorization_endpoint "REQUIRED unless no grant types are supported that use the
 * authorization endpoint", so a device-only or machine-only server legally has none.
 */
function checkGrantEndpoints(as: oauth.AuthorizationServer, grant: OAuthGrant): void {
  const needed: Record<OAuthGrant, readonly (keyof oauth.AuthorizationServer)[]> = {
    'authorization-code': ['authorization_endpoint', 'token_endpoint'],
    'device-code': ['token_endpoint'],
    'client-credentials': ['token_endpoint'],
  };
  const missing = needed[grant].filter((name) => as[name] === undefined);
  if (missing.length > 0) {
    throw discoveryFailure(
      `the authorization server ${toTerminalLine(as.issuer)} lists no ${missing.join(' and ')}, which the ${GRANT_NAMES[grant]} needs`,
      grant === 'authorization-code'
        ? 'the authorization server metadata is incomplete, or the server offers only machine grants: try --oauth-device-code or --oauth-client-credentials'
        : 'the authorization server metadata is incomplete; contact its operator',
    );
  }
  // PKCE with S256 is a MUST for the code flow (authorization §Authorization Code Protection): a
  // server that does not advertise it is refused rather than trusted to do it anyway.
  if (grant === 'authorization-code' && !as.code_challenge_methods_supported?.includes('S256')) {
    throw discoveryFailure(
      `the authorization server ${toTerminalLine(as.issuer)} does not advertise PKCE with S256 (code_challenge_methods_supported): refused`,
      'MCP requires PKCE S256; the authorization server must support and advertise it',
    );
  }
}

const GRANT_NAMES: Readonly<Record<OAuthGrant, string>> = {
  'authorization-code': 'browser sign-in (authorization code grant)',
  'device-code': 'device grant (--oauth-device-code)',
  'client-credentials': 'client credentials grant (--oauth-client-credentials)',
};

/**
 * The whole discovery: challenge → resource metadata → the first listed authorization server's
 * metadata, holding the endpoints `grant` uses; with `issuer` (--oauth-issuer), a server naming
 * another is refused before any request to it.
 */
export async function discover(
  http: OAuthHttp,
  server: URL,
  challenge: BearerChallenge,
  signal: AbortSignal,
  { issuer, grant = 'authorization-code', mask = (text) => text }: DiscoverOptions = {},
): Promise<Discovered> {
  const metadata = await findResourceMetadata(http, server, challenge, signal);
  const issuerText = metadata.authorization_servers?.[0];
  if (issuerText === undefined || !URL.canParse(issuerText)) {
    throw discoveryFailure(
      'the protected-resource metadata lists no authorization server',
      'the server must list its authorization server in authorization_servers (RFC 9728 §2)',
    );
  }
  const refused = otherIssuerRefusal(new URL(issuerText), issuer);
  if (refused !== undefined) throw refused;
  const as = await fetchAuthorizationServer(http, new URL(issuerText), signal, mask);
  checkGrantEndpoints(as, grant);
  return { resource: new URL(metadata.resource), scopesSupported: metadata.scopes_supported, as };
}
