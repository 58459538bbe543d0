// One loopback server playing an MCP server and an authorization server that keeps the rules a big
// identity provider keeps (Entra ID, Auth0, Google, Okta, Keycloak, device-only, machine-only), in a
// few knobs: what its metadata omits, where it is published, what the token endpoint demands.

import { createHash, createPublicKey, randomBytes, verify, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ProviderClient {
  id: string;
  /** A confidential client's secret: the token endpoint then demands it (basic or post). */
  secret?: string;
  /** A private_key_jwt client's public key: the token endpoint then demands a signed assertion. */
  publicKey?: KeyObject;
}

export interface ProviderProfile {
  /** The issuer's path (Okta `/oauth2/default`, Keycloak `/realms/x`); '' for none. */
  issuerPath?: string;
  /** Where the metadata is published: only there, 404 elsewhere. */
  metadataAt?: 'rfc8414-insertion' | 'oidc-appending';
  /** The issuer the metadata claims, when it is not the real one (a misconfigured server). */
  claimedIssuer?: string;
  /** False: no authorization_endpoint (a device-only or machine-only server, RFC 8414 §2). */
  authorizationEndpoint?: boolean;
  deviceEndpoint?: boolean;
  grantTypes?: string[];
  scopesSupported?: string[];
  authMethods?: string[];
  clients: ProviderClient[];
  /** Entra ID: a request that carries `resource` is refused with AADSTS9010010. */
  refusesResource?: boolean;
  /** When a refresh token is issued, given the authorization request's parameters and scope. */
  issuesRefreshToken?: (params: URLSearchParams, scope: string) => boolean;
  /** Auth0: a token is for the MCP server only when the authorization request named this audience. */
  audience?: string;
  /** The scopes the protected-resource metadata lists. */
  resourceScopes?: string[];
}

export interface Provider {
  mcpUrl: string;
  issuer: string;
  /** The authorization requests (as their query parameters), device authorization requests and token requests, in order. */
  authorizations: URLSearchParams[];
  tokenRequests: URLSearchParams[];
  /** The `aud` and `alg` of each client assertion it checked. */
  assertionAudiences: string[];
  assertionAlgorithms: string[];
  /** Tokens the MCP server accepted. */
  accepted: string[];
  /** Every secret the server handed out or received. */
  secrets: Set<string>;
  /** From now on every access token issued so far is expired at the MCP server (401 invalid_token). */
  expireAccessTokens(): void;
  close(): Promise<void>;
}

interface Grant {
  clientId: string;
  scope: string;
  params: URLSearchParams;
  challenge?: string;
  redirectUri?: string;
}

export async function startProvider(profile: ProviderProfile): Promise<Provider> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const issuerPath = profile.issuerPath ?? '';
  const issuer = `${origin}${issuerPath}`;
  const mcpUrl = `${origin}/mcp`;
  const tokenEndpoint = `${issuer}/token`;
  const codes = new Map<string, Grant>();
  const deviceCodes = new Map<string, Grant>();
  const refreshTokens = new Map<string, Grant>();
  const accessTokens = new Map<string, { forMcp: boolean }>();
  const expired = new Set<string>();
  const provider: Provider = {
    mcpUrl,
    issuer,
    authorizations: [],
    tokenRequests: [],
    assertionAudiences: [],
    assertionAlgorithms: [],
    accepted: [],
    secrets: new Set(),
    expireAccessTokens: () => {
      for (const token of accessTokens.keys()) expired.add(token);
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  const random = () => randomBytes(18).toString('base64url');
  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers }).end(JSON.stringify(body));
  const metadataPath =
    profile.metadataAt === 'oidc-appending' ? `${issuerPath}/.well-known/openid-configuration` : `/.well-known/oauth-authorization-server${issuerPath}`;
  const metadata = () => ({
    issuer: profile.claimedIssuer ?? issuer,
    ...(profile.authorizationEndpoint === false ? {} : { authorization_endpoint: `${issuer}/authorize` }),
    ...(profile.deviceEndpoint === true ? { device_authorization_endpoint: `${issuer}/device` } : {}),
    token_endpoint: tokenEndpoint,
    grant_types_supported: profile.grantTypes ?? ['authorization_code', 'refresh_token'],
    response_types_supported: profile.authorizationEndpoint === false ? [] : ['code'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: profile.authMethods ?? ['none', 'client_secret_basic', 'client_secret_post'],
    ...(profile.scopesSupported === undefined ? {} : { scopes_supported: profile.scopesSupported }),
  });

  /** The client a token request authenticates as, or an error to answer with. */
  const authenticate = (req: IncomingMessage, form: URLSearchParams): ProviderClient | string => {
    const basic = req.headers.authorization?.startsWith('Basic ') === true ? Buffer.from(req.headers.authorization.slice(6), 'base64').toString() : undefined;
    const decode = (text: string) => decodeURIComponent(text.replaceAll('+', ' '));
    const [basicId, basicSecret] = basic === undefined ? [] : basic.split(':').map(decode);
    const id = basicId ?? form.get('client_id') ?? '';
    const client = profile.clients.find((candidate) => candidate.id === id);
    if (client === undefined) return 'unknown client';
    if (client.publicKey !== undefined) {
      const assertion = form.get('client_assertion') ?? '';
      if (form.get('client_assertion_type') !== 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer') return 'no client assertion';
      const [header, payload, signature] = assertion.split('.');
      const claims = JSON.parse(Buffer.from(payload ?? '', 'base64url').toString()) as { iss?: string; sub?: string; aud?: string; exp?: number; jti?: string };
      const alg = (JSON.parse(Buffer.from(header ?? '', 'base64url').toString()) as { alg?: string }).alg;
      const signed = Buffer.from(`${header}.${payload}`);
      const ok =
        alg === 'RS256'
          ? verify('sha256', signed, client.publicKey, Buffer.from(signature ?? '', 'base64url'))
          : alg === 'ES256'
            ? verify('sha256', signed, { key: client.publicKey, dsaEncoding: 'ieee-p1363' }, Buffer.from(signature ?? '', 'base64url'))
            : false;
      provider.assertionAudiences.push(String(claims.aud));
      provider.assertionAlgorithms.push(String(alg));
      if (!ok) return 'bad assertion signature';
      if (claims.iss !== id || claims.sub !== id || claims.aud !== tokenEndpoint) return 'bad assertion claims';
      if (typeof claims.exp !== 'number' || claims.exp * 1000 < Date.now() || claims.exp * 1000 > Date.now() + 5 * 60_000) return 'bad assertion expiry';
      if (typeof claims.jti !== 'string' || claims.jti.length < 8) return 'no jti';
      return client;
    }
    if (client.secret !== undefined) {
      const given = basicSecret ?? form.get('client_secret') ?? undefined;
      if (given !== client.secret) return 'client secret missing or wrong';
      provider.secrets.add(client.secret);
    }
    return client;
  };

  const issue = (res: ServerResponse, grant: Grant, refresh: boolean) => {
    const access = `at-${random()}`;
    // Auth0: without the audience the token is opaque, for its own userinfo, not for this API.
    accessTokens.set(access, { forMcp: profile.audience === undefined || grant.params.get('audience') === profile.audience });
    provider.secrets.add(access);
    const body: Record<string, unknown> = { access_token: access, token_type: 'Bearer', expires_in: 3600, scope: grant.scope };
    if (refresh) {
      const token = `rt-${random()}`;
      refreshTokens.set(token, grant);
      provider.secrets.add(token);
      body.refresh_token = token;
    }
    json(res, 200, body);
  };
  const wantsRefresh = (grant: Grant) =>
    (profile.issuesRefreshToken ?? ((_params: URLSearchParams, scope: string) => scope.split(' ').includes('offline_access')))(grant.params, grant.scope);
  const resourceRefusal = (params: URLSearchParams) =>
    profile.refusesResource === true && params.has('resource')
      ? {
          error: 'invalid_target',
          error_description:
            "AADSTS9010010: The resource parameter provided in the request doesn't match with the requested scopes. Trace ID: 0f4e Correlation ID: 9c1d",
        }
      : undefined;

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (text += chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', origin);
      const form = new URLSearchParams(text);
      if (url.pathname === '/.well-known/oauth-protected-resource/mcp') {
        return json(res, 200, { resource: mcpUrl, authorization_servers: [issuer], scopes_supported: profile.resourceScopes ?? ['mcp:read'] });
      }
      if (url.pathname === metadataPath) return json(res, 200, metadata());
      if (url.pathname === `${issuerPath}/authorize` && profile.authorizationEndpoint !== false) {
        const params = url.searchParams;
        provider.authorizations.push(params);
        const redirect = new URL(params.get('redirect_uri') ?? '');
        const refusal = resourceRefusal(params);
        if (refusal !== undefined) {
          redirect.search = new URLSearchParams({ ...refusal, state: params.get('state') ?? '', iss: issuer }).toString();
        } else {
          if (!profile.clients.some((client) => client.id === params.get('client_id')) || params.get('code_challenge_method') !== 'S256') {
            return json(res, 400, { error: 'invalid_request' });
          }
          const code = `code-${random()}`;
          provider.secrets.add(code);
          codes.set(code, {
            clientId: params.get('client_id')!,
            scope: params.get('scope') ?? '',
            params,
            challenge: params.get('code_challenge')!,
            redirectUri: params.get('redirect_uri')!,
          });
          redirect.search = new URLSearchParams({ code, state: params.get('state') ?? '', iss: issuer }).toString();
        }
        return res.writeHead(302, { location: redirect.href }).end();
      }
      if (url.pathname === `${issuerPath}/device` && profile.deviceEndpoint === true && req.method === 'POST') {
        provider.authorizations.push(form);
        const client = authenticate(req, form);
        if (typeof client === 'string') return json(res, 401, { error: 'invalid_client', error_description: client });
        const refusal = resourceRefusal(form);
        if (refusal !== undefined) return json(res, 400, refusal);
        const deviceCode = `dc-${random()}`;
        provider.secrets.add(deviceCode);
        // Approved at once: the person is quick.
        deviceCodes.set(deviceCode, { clientId: client.id, scope: form.get('scope') ?? '', params: form });
        return json(res, 200, { device_code: deviceCode, user_code: 'WDJB-MJHT', verification_uri: `${issuer}/activate`, expires_in: 600, interval: 1 });
      }
      if (url.pathname === `${issuerPath}/token` && req.method === 'POST') {
        provider.tokenRequests.push(form);
        for (const key of ['code', 'code_verifier', 'refresh_token', 'device_code', 'client_secret']) if (form.has(key)) provider.secrets.add(form.get(key)!);
        const client = authenticate(req, form);
        if (typeof client === 'string') return json(res, 401, { error: 'invalid_client', error_description: client });
        const refusal = resourceRefusal(form);
        if (refusal !== undefined) return json(res, 400, refusal);
        const grantType = form.get('grant_type');
        if (grantType === 'authorization_code') {
          const grant = codes.get(form.get('code') ?? '');
          codes.delete(form.get('code') ?? '');
          const challenge = createHash('sha256')
            .update(form.get('code_verifier') ?? '')
            .digest('base64url');
          if (grant === undefined || grant.clientId !== client.id || grant.challenge !== challenge || grant.redirectUri !== form.get('redirect_uri')) {
            return json(res, 400, { error: 'invalid_grant' });
          }
          return issue(res, grant, wantsRefresh(grant));
        }
        if (grantType === 'refresh_token') {
          const grant = refreshTokens.get(form.get('refresh_token') ?? '');
          if (grant === undefined || grant.clientId !== client.id) return json(res, 400, { error: 'invalid_grant' });
          return issue(res, grant, false);
        }
        if (grantType === 'urn:ietf:params:oauth:grant-type:device_code') {
          const grant = deviceCodes.get(form.get('device_code') ?? '');
          if (grant === undefined || grant.clientId !== client.id) return json(res, 400, { error: 'invalid_grant' });
          deviceCodes.delete(form.get('device_code') ?? '');
          return issue(res, grant, wantsRefresh(grant));
        }
        if (grantType === 'client_credentials') return issue(res, { clientId: client.id, scope: form.get('scope') ?? '', params: form }, false);
        return json(res, 400, { error: 'unsupported_grant_type' });
      }
      if (url.pathname !== '/mcp') return json(res, 404, { error: 'not found' });
      if (req.method !== 'POST') return res.writeHead(405, { allow: 'POST' }).end();
      const token = req.headers.authorization?.startsWith('Bearer ') === true ? req.headers.authorization.slice(7) : '';
      if (accessTokens.get(token)?.forMcp !== true || expired.has(token)) {
        return json(
          res,
          401,
          { error: 'invalid_token' },
          {
            'www-authenticate': `Bearer ${token === '' ? '' : 'error="invalid_token", '}resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"`,
          },
        );
      }
      provider.accepted.push(token);
      const message = JSON.parse(text) as { id?: string | number; method: string; params?: { arguments?: { text?: string } } };
      if (message.id === undefined) return res.writeHead(202).end();
      const reply = (result: unknown) => json(res, 200, { jsonrpc: '2.0', id: message.id, result });
      if (message.method === 'initialize')
        return reply({ protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'provider-mcp', version: '1' } });
      if (message.method === 'tools/list') return reply({ tools: [{ name: 'echo', inputSchema: { type: 'object' } }] });
      if (message.method === 'tools/call') return reply({ content: [{ type: 'text', text: String(message.params?.arguments?.text ?? '') }] });
      return json(res, 200, { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } });
    });
  });
  return provider;
}

/** The public half of a PEM private key, for a provider's private_key_jwt client. */
export function publicKeyOf(privatePem: string): KeyObject {
  return createPublicKey(privatePem);
}
