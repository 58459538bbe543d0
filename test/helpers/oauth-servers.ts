// A real OAuth setup on loopback: an oidc-provider authorization server in front of an SDK MCP server that checks its tokens.

import { generateKeyPairSync } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import Provider from 'oidc-provider';
import * as z from 'zod/v4';

/** The scope every call needs, and the one the admin tool needs on top (the step-up case). */
export const READ_SCOPE = 'mcp:read';
export const ADMIN_SCOPE = 'mcp:admin';
export const ADMIN_TOOL = 'admin-report';

// The authorization server is configured as a real deployment would be, so oidc-provider has no
// quick-start default to warn about (on stderr, once per provider): its own signing key, a storage
// adapter, an account lookup and its own sign-in pages instead of the development interactions.
/** One RSA signing key for every provider of the test run (id tokens default to RS256). */
const SIGNING_KEY = {
  ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }),
  kid: 'fenbs-test-key',
  use: 'sig',
  alg: 'RS256',
};

type Stored = Map<string, { payload: any; expiresAt: number }>;

/** oidc-provider's storage interface, in memory: one Map per model of one provider, entries dropped at their expiry. */
class MemoryAdapter {
  readonly #store: Stored;

  constructor(stores: Map<string, Stored>, model: string) {
    const store = stores.get(model) ?? new Map();
    stores.set(model, store);
    this.#store = store;
  }

  upsert(id: string, payload: any, expiresIn: number): Promise<void> {
    this.#store.set(id, { payload, expiresAt: Date.now() + expiresIn * 1000 });
    return Promise.resolve();
  }

  find(id: string): Promise<any> {
    const entry = this.#store.get(id);
    if (entry === undefined || entry.expiresAt < Date.now()) return Promise.resolve(undefined);
    return Promise.resolve(entry.payload);
  }

  findByUid(uid: string): Promise<any> {
    return Promise.resolve([...this.#store.values()].find((entry) => entry.payload.uid === uid && entry.expiresAt >= Date.now())?.payload);
  }

  findByUserCode(userCode: string): Promise<any> {
    return Promise.resolve([...this.#store.values()].find((entry) => entry.payload.userCode === userCode && entry.expiresAt >= Date.now())?.payload);
  }

  consume(id: string): Promise<void> {
    const entry = this.#store.get(id);
    if (entry !== undefined) entry.payload.consumed = Math.floor(Date.now() / 1000);
    return Promise.resolve();
  }

  destroy(id: string): Promise<void> {
    this.#store.delete(id);
    return Promise.resolve();
  }

  revokeByGrantId(grantId: string): Promise<void> {
    for (const [id, entry] of this.#store) if (entry.payload.grantId === grantId) this.#store.delete(id);
    return Promise.resolve();
  }
}

const readForm = async (req: IncomingMessage): Promise<URLSearchParams> => {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
};

/**
 * The sign-in pages: a form per prompt (login, then consent) that the test browser submits, and an
 * abort link that denies. Consent grants what the request asked for, as a user clicking Allow does.
 */
async function interact(provider: any, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = new URL(req.url ?? '/', 'http://localhost').pathname;
  if (path.endsWith('/abort')) {
    await provider.interactionFinished(
      req,
      res,
      { error: 'access_denied', error_description: 'End-User aborted interaction' },
      { mergeWithLastSubmission: false },
    );
    return;
  }
  const { prompt, grantId, session, params } = await provider.interactionDetails(req, res);
  if (req.method !== 'POST') {
    res
      .writeHead(200, { 'content-type': 'text/html' })
      .end(`<form method="post" action="${path}"><input type="hidden" name="prompt" value="${prompt.name}"><button>Continue</button></form>`);
    return;
  }
  const form = await readForm(req);
  if (prompt.name === 'login') {
    await provider.interactionFinished(req, res, { login: { accountId: form.get('login') ?? 'user' } }, { mergeWithLastSubmission: false });
    return;
  }
  const grant = grantId === undefined ? new provider.Grant({ accountId: session.accountId, clientId: params.client_id }) : await provider.Grant.find(grantId);
  const { details } = prompt;
  if (details.missingOIDCScope) grant.addOIDCScope(details.missingOIDCScope.join(' '));
  if (details.missingOIDCClaims) grant.addOIDCClaims(details.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(details.missingResourceScopes ?? {})) grant.addResourceScope(indicator, (scopes as string[]).join(' '));
  await provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
}

export interface OAuthSetupOptions {
  /** Access-token lifetime at the authorization server, in seconds. */
  accessTokenTtlSeconds?: number;
  /** Serve authorization-server metadata whose `issuer` is another URL (refused by clients). */
  wrongIssuer?: boolean;
  /** A confidential client registered ahead (client_secret_basic, loopback redirect on any port). */
  preRegistered?: { clientId: string; clientSecret: string };
  /** The authorization server issues no refresh token: every new token takes a sign-in. */
  noRefreshTokens?: boolean;
  /** The MCP server refuses every token, even one its authorization server has just issued (401 invalid_token). */
  refuseEveryToken?: boolean;
  /**
   * The device grant (RFC 8628), with this `interval` in the device authorization response
   * (oidc-provider names none, so clients would wait the default 5 s per poll) and this device-code lifetime.
   */
  deviceFlow?: { intervalSeconds: number; codeTtlSeconds?: number };
  /** A confidential machine client for the client credentials grant, authenticating with this method. */
  machineClient?: { clientId: string; clientSecret: string; authMethod: 'client_secret_basic' | 'client_secret_post' };
}

/** One device authorization the authorization server answered: what the person is told. */
export interface DeviceAuthorization {
  userCode: string;
  verificationUri: string;
  verificationUriComplete: string;
}

export interface OAuthSetup {
  /** The MCP endpoint, http://127.0.0.1:<port>/mcp. */
  mcpUrl: string;
  issuer: string;
  /** Every secret the authorization server handed out or received: codes, verifiers, tokens. */
  secrets: Set<string>;
  /** Access tokens the MCP server accepted, in order. */
  accepted: string[];
  /** Token requests by grant type, in order. */
  grants: string[];
  /** The error (or `issued`) of each token request, in order. */
  tokenOutcomes: string[];
  /** How each client-credentials token request authenticated the client: `basic` or `post`. */
  clientAuthentications: string[];
  /** The device authorizations answered so far, in order. */
  deviceAuthorizations: DeviceAuthorization[];
  /** Resolves with the next device authorization (or one already answered and not yet taken). */
  nextDeviceAuthorization(): Promise<DeviceAuthorization>;
  /** From now on the MCP server treats every access token issued so far as expired (401 invalid_token). */
  expireAccessTokens(): void;
  close(): Promise<void>;
}

function listen(server: Server): Promise<number> {
  server.listen(0, '127.0.0.1');
  return once(server, 'listening').then(() => (server.address() as AddressInfo).port);
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? undefined : JSON.parse(text);
}

function createMcpServer(): McpServer {
  const server = new McpServer({ name: 'fenbs-mcp-oauth-test', version: '1.0.0' });
  server.registerTool('echo', { description: 'Returns its text', inputSchema: { text: z.string() } }, ({ text }) => ({ content: [{ type: 'text', text }] }));
  server.registerTool(ADMIN_TOOL, { description: `Needs ${ADMIN_SCOPE}` }, () => ({ content: [{ type: 'text', text: 'admin report' }] }));
  return server;
}

/** Starts the authorization server and the MCP server on 127.0.0.1, each on a free port. */
export async function startOAuthSetup(options: OAuthSetupOptions = {}): Promise<OAuthSetup> {
  const ttl = options.accessTokenTtlSeconds ?? 3600;
  const secrets = new Set<string>();
  const accepted: string[] = [];
  const grants: string[] = [];
  const expired = new Set<string>();
  const seen = new Set<string>();

  const asServer = createServer();
  const asPort = await listen(asServer);
  const issuer = `http://127.0.0.1:${asPort}`;
  const mcpServer = createServer();
  const mcpPort = await listen(mcpServer);
  const mcpUrl = `http://127.0.0.1:${mcpPort}/mcp`;
  const metadataUrl = `http://127.0.0.1:${mcpPort}/.well-known/oauth-protected-resource/mcp`;

  const tokenOutcomes: string[] = [];
  const clientAuthentications: string[] = [];
  const deviceAuthorizations: DeviceAuthorization[] = [];
  let taken = 0;
  const deviceWaiters: ((authorization: DeviceAuthorization) => void)[] = [];
  const machine = options.machineClient;
  if (machine !== undefined) secrets.add(machine.clientSecret);
  const provider = new Provider(issuer, {
    clients: [
      ...(machine === undefined
        ? []
        : [
            {
              client_id: machine.clientId,
              client_secret: machine.clientSecret,
              grant_types: ['client_credentials'],
              redirect_uris: [],
              response_types: [],
              token_endpoint_auth_method: machine.authMethod,
            },
          ]),
      ...(options.preRegistered === undefined
        ? []
        : [
            {
              client_id: options.preRegistered.clientId,
              client_secret: options.preRegistered.clientSecret,
              application_type: 'native',
              redirect_uris: ['http://127.0.0.1/callback'],
              grant_types: ['authorization_code', 'refresh_token'],
              response_types: ['code'],
              token_endpoint_auth_method: 'client_secret_basic',
            },
          ]),
    ],
    // A machine client authenticating by the form body: the metadata lists only that method, as such a server would.
    ...(machine?.authMethod === 'client_secret_post' ? { clientAuthMethods: ['client_secret_post', 'none'] } : {}),
    cookies: { keys: ['fenbs-mcp-test-cookie-key'] },
    jwks: { keys: [SIGNING_KEY] },
    // A provider's own stores: a restarted authorization server knows nothing of the last one.
    adapter: (
      (stores: Map<string, Stored>) => (model: string) =>
        new MemoryAdapter(stores, model)
    )(new Map()),
    findAccount: (_ctx: unknown, sub: string) => ({ accountId: sub, claims: () => ({ sub }) }),
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    scopes: ['offline_access', READ_SCOPE, ADMIN_SCOPE],
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      // Its own pages, as a deployment has: oidc-provider's built-in ones print a notice each time.
      deviceFlow: {
        enabled: options.deviceFlow !== undefined,
        userCodeInputSource: (ctx: { body: string }, form: string) => void (ctx.body = `<!DOCTYPE html><title>Enter the code</title>${form}`),
        userCodeConfirmSource: (ctx: { body: string }, form: string, _client: unknown, _info: unknown, userCode: string) =>
          void (ctx.body = `<!DOCTYPE html><title>Confirm</title><code>${userCode}</code>${form}`),
        successSource: (ctx: { body: string }) => void (ctx.body = '<!DOCTYPE html><title>Signed in</title>'),
      },
      clientCredentials: { enabled: machine !== undefined },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => mcpUrl,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, indicator: string) => {
          if (indicator !== mcpUrl) throw new Error(`unknown resource ${indicator}`);
          return { scope: `${READ_SCOPE} ${ADMIN_SCOPE}`, audience: mcpUrl, accessTokenTTL: ttl, accessTokenFormat: 'opaque' };
        },
      },
    },
    issueRefreshToken: (_ctx: unknown, client: any) => options.noRefreshTokens !== true && client.grantTypeAllowed('refresh_token'),
    expiresWithSession: () => false,
    ttl: {
      DeviceCode: options.deviceFlow?.codeTtlSeconds ?? 600,
      ClientCredentials: ttl,
      AccessToken: ttl,
      RefreshToken: 24 * 3600,
      Grant: 24 * 3600,
      Session: 24 * 3600,
      Interaction: 600,
      AuthorizationCode: 60,
    },
  });
  // Records what crosses the token endpoint, so tests can look for it where it must never be.
  provider.use(async (ctx: any, next: () => Promise<void>) => {
    const authorization = String(ctx.headers.authorization ?? '');
    await next();
    if (ctx.path === '/device/auth' && ctx.method === 'POST' && typeof ctx.body?.device_code === 'string') {
      secrets.add(ctx.body.device_code);
      ctx.body.interval = options.deviceFlow?.intervalSeconds;
      const found = { userCode: ctx.body.user_code, verificationUri: ctx.body.verification_uri, verificationUriComplete: ctx.body.verification_uri_complete };
      deviceAuthorizations.push(found);
      const waiter = deviceWaiters.shift();
      if (waiter !== undefined) {
        taken++;
        waiter(found);
      }
    }
    if (ctx.path === '/token' && ctx.method === 'POST') {
      const params = ctx.oidc?.params ?? {};
      grants.push(String(params.grant_type));
      tokenOutcomes.push(typeof ctx.body?.error === 'string' ? ctx.body.error : 'issued');
      if (params.grant_type === 'client_credentials') clientAuthentications.push(authorization.startsWith('Basic ') ? 'basic' : 'post');
      if (typeof params.device_code === 'string') secrets.add(params.device_code);
      if (typeof params.client_secret === 'string') secrets.add(params.client_secret);
      for (const key of ['code', 'code_verifier', 'refresh_token']) if (typeof params[key] === 'string') secrets.add(params[key]);
      const body = ctx.body ?? {};
      for (const key of ['access_token', 'refresh_token', 'id_token']) if (typeof body[key] === 'string') secrets.add(body[key]);
    }
  });
  const callback = provider.callback();
  asServer.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (options.wrongIssuer === true && req.url?.startsWith('/.well-known/')) {
      // Metadata that claims to be another issuer (RFC 8414 §3.3 says to refuse it).
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          issuer: 'http://127.0.0.1:1/elsewhere',
          authorization_endpoint: `${issuer}/auth`,
          token_endpoint: `${issuer}/token`,
          code_challenge_methods_supported: ['S256'],
          response_types_supported: ['code'],
        }),
      );
      return;
    }
    if (req.url?.startsWith('/interaction/') === true) {
      interact(provider, req, res).catch((error: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(error.message));
      return;
    }
    callback(req, res);
  });

  const challenge = (error?: string, scope = READ_SCOPE) =>
    `Bearer ${error === undefined ? '' : `error="${error}", `}scope="${scope}", resource_metadata="${metadataUrl}"`;
  mcpServer.on('request', (req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      if (req.url === '/.well-known/oauth-protected-resource/mcp') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            resource: mcpUrl,
            authorization_servers: [issuer],
            scopes_supported: [READ_SCOPE, ADMIN_SCOPE],
            bearer_methods_supported: ['header'],
          }),
        );
        return;
      }
      if (req.url !== '/mcp') {
        res.writeHead(404).end();
        return;
      }
      const body = await readBody(req);
      const header = req.headers.authorization;
      const token = header?.startsWith('Bearer ') === true ? header.slice(7) : undefined;
      const found =
        token === undefined || expired.has(token) || options.refuseEveryToken === true
          ? undefined
          : ((await provider.AccessToken.find(token)) ?? (await provider.ClientCredentials.find(token)));
      if (found === undefined || found.aud !== mcpUrl) {
        // authorization §Error Handling: 401 with the resource metadata URL and the scope needed.
        res
          .writeHead(401, { 'www-authenticate': challenge(token === undefined ? undefined : 'invalid_token'), 'content-type': 'application/json' })
          .end('{"error":"invalid_token"}');
        return;
      }
      seen.add(token!);
      const scopes = new Set(String(found.scope ?? '').split(' '));
      const isAdminCall = (body as any)?.method === 'tools/call' && (body as any)?.params?.name === ADMIN_TOOL;
      if (!scopes.has(READ_SCOPE) || (isAdminCall && !scopes.has(ADMIN_SCOPE))) {
        res
          .writeHead(403, { 'www-authenticate': challenge('insufficient_scope', `${READ_SCOPE} ${ADMIN_SCOPE}`), 'content-type': 'application/json' })
          .end('{"error":"insufficient_scope"}');
        return;
      }
      accepted.push(token!);
      const server = createMcpServer();
      const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
    })().catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(error));
    });
  });

  return {
    mcpUrl,
    issuer,
    secrets,
    accepted,
    grants,
    tokenOutcomes,
    clientAuthentications,
    deviceAuthorizations,
    nextDeviceAuthorization: () =>
      taken < deviceAuthorizations.length ? Promise.resolve(deviceAuthorizations[taken++]!) : new Promise((resolve) => deviceWaiters.push(resolve)),
    expireAccessTokens: () => {
      for (const token of seen) expired.add(token);
    },
    close: async () => {
      for (const server of [asServer, mcpServer]) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    },
  };
}

export interface ScriptedAuthorization {
  /** The MCP endpoint: every POST is answered 401 with a Bearer challenge naming the resource metadata. */
  mcpUrl: string;
  /** http://127.0.0.1:<port>, the issuer. */
  origin: string;
  /** `METHOD path` of every request the server received, in order. */
  requests: string[];
  close(): Promise<void>;
}

/**
 * One loopback server playing both an MCP server that wants a sign-in and its authorization server,
 * whose metadata is a minimal valid document (PKCE S256, registration) overridden by `metadata(origin)`:
 * a hostile or misconfigured authorization server in a few lines.
 */
export async function startScriptedAuthorization(
  metadata: (origin: string) => Record<string, unknown>,
  /** Answers a request the script handles (a device or token endpoint, say) as `{ status, body }`, or undefined to pass it on. */
  route?: (method: string, path: string, form: URLSearchParams, origin: string) => { status: number; body: unknown } | undefined,
): Promise<ScriptedAuthorization> {
  const requests: string[] = [];
  const server = createServer();
  const origin = `http://127.0.0.1:${await listen(server)}`;
  const mcpUrl = `${origin}/mcp`;
  const json = (res: ServerResponse, status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', origin).pathname;
    requests.push(`${req.method} ${path}`);
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (text += chunk));
    req.on('end', () => {
      const scripted = route?.(req.method ?? 'GET', path, new URLSearchParams(text), origin);
      if (scripted !== undefined) {
        json(res, scripted.status, scripted.body);
      } else if (req.method === 'POST' && path === '/mcp') {
        res
          .writeHead(401, {
            'www-authenticate': `Bearer resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"`,
            'content-type': 'application/json',
          })
          .end('{"error":"invalid_token"}');
      } else if (path === '/.well-known/oauth-protected-resource/mcp') {
        json(res, 200, { resource: mcpUrl, authorization_servers: [origin] });
      } else if (path === '/.well-known/oauth-authorization-server') {
        json(res, 200, {
          issuer: origin,
          authorization_endpoint: `${origin}/authorize`,
          token_endpoint: `${origin}/token`,
          registration_endpoint: `${origin}/register`,
          code_challenge_methods_supported: ['S256'],
          ...metadata(origin),
        });
      } else if (req.method === 'POST' && path === '/register') {
        json(res, 201, { client_id: 'scripted-client' });
      } else {
        res.writeHead(404).end();
      }
    });
  });
  return {
    mcpUrl,
    origin,
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
