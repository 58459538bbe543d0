// Signing in to authorization servers that keep the big identity providers' rules, through the built
// bin: each provider's recipe signs in, calls a tool, refreshes after expiry without a browser, and
// shows no secret or key at trace level; each failure names the option that fixes it.

import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { startProvider, type Provider, type ProviderProfile } from '../helpers/provider-servers.js';
import { BIN, initializedNotification, initializeRequest, spawnBridge, type BridgeProcess } from '../helpers/spawn-bridge.js';

const exec = promisify(execFile);
const BROWSER_SCRIPT = fileURLToPath(new URL('../helpers/oauth-browser.mjs', import.meta.url));

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface World {
  provider: Provider;
  dir: string;
  env: Record<string, string>;
  logFile: string;
  browserOpens(): number;
}

async function world(profile: ProviderProfile, extraEnv: Record<string, string> = {}): Promise<World> {
  const provider = await startProvider(profile);
  cleanups.push(() => provider.close());
  const dir = mkdtempSync(join(tmpdir(), 'fenbs-providers-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 }));
  const browserLog = join(dir, 'browser.log');
  return {
    provider,
    dir,
    logFile: join(dir, 'bridge.log'),
    env: { FENBS_MCP_HOME: join(dir, 'state'), BROWSER: `"${process.execPath}" "${BROWSER_SCRIPT}"`, OAUTH_BROWSER_LOG: browserLog, ...extraEnv },
    browserOpens: () => (existsSync(browserLog) ? readFileSync(browserLog, 'utf8').split('\n').filter(Boolean).length : 0),
  };
}

function start(w: World, args: string[]): BridgeProcess {
  const bridge = spawnBridge(['--url', w.provider.mcpUrl, '--log-level', 'trace', '--log-file', w.logFile, ...args], w.env);
  cleanups.push(() => bridge.kill());
  return bridge;
}

async function call(bridge: BridgeProcess, id: string): Promise<any> {
  bridge.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text: id } } });
  return bridge.reply(id, 30_000);
}

/** Signs in on initialize, calls a tool, expires every token, calls again (a refresh, no browser), and ends. */
async function signInCallRefresh(w: World, args: string[]): Promise<BridgeProcess> {
  const bridge = start(w, args);
  bridge.send(initializeRequest('init'));
  const init = await bridge.reply('init', 30_000);
  expect(init.result?.protocolVersion, JSON.stringify(init)).toBe('2025-06-18');
  bridge.send(initializedNotification);
  expect((await call(bridge, 'first')).result.content[0].text).toBe('first');
  const opens = w.browserOpens();
  w.provider.expireAccessTokens();
  expect((await call(bridge, 'after-expiry')).result.content[0].text).toBe('after-expiry');
  expect(w.browserOpens()).toBe(opens);
  expect(w.provider.tokenRequests.some((form) => form.get('grant_type') === 'refresh_token')).toBe(true);
  bridge.end();
  await bridge.exited;
  return bridge;
}

function expectNoSecret(w: World, bridge: BridgeProcess, more: string[] = []): void {
  const all = [bridge.lines.join('\n'), bridge.stderr(), readFileSync(w.logFile, 'utf8')].join('\n');
  for (const secret of [...w.provider.secrets, ...more]) expect(all).not.toContain(secret);
}

const ENTRA: ProviderProfile = {
  // Entra ID: no dynamic registration, scopes of the API's App ID URI, a refresh token only with offline_access.
  clients: [{ id: '0f6e3c1a-entra-app' }],
  refusesResource: true,
  scopesSupported: ['openid', 'profile', 'offline_access'],
  resourceScopes: ['api://fenbs/.default'],
};

describe('Microsoft Entra ID', () => {
  it('names --oauth-no-resource, --oauth-resource and --oauth-scope when the resource parameter does not match the scopes (AADSTS9010010)', async () => {
    const w = await world(ENTRA);
    const bridge = start(w, ['--oauth-client-id', '0f6e3c1a-entra-app']);
    bridge.send(initializeRequest('init'));
    const reply = await bridge.reply('init', 30_000);
    expect(reply.error.message).toMatch(/AADSTS9010010/);
    expect(reply.error.data.hint).toMatch(/--oauth-no-resource.*--oauth-resource.*--oauth-scope "api:\/\/<app id>\/\.default offline_access"/);
  });

  it('signs in with --oauth-no-resource, asks for offline_access because the server lists it, and refreshes an hour later without a browser', async () => {
    const w = await world(ENTRA);
    const bridge = await signInCallRefresh(w, ['--oauth-client-id', '0f6e3c1a-entra-app', '--oauth-no-resource']);
    const [authorization] = w.provider.authorizations;
    expect(authorization!.get('scope')).toBe('api://fenbs/.default offline_access');
    expect(authorization!.has('resource')).toBe(false);
    expect(w.browserOpens()).toBe(1);
    expectNoSecret(w, bridge);
  });

  it('sends exactly the --oauth-scope given and the --oauth-resource given', async () => {
    const w = await world({ ...ENTRA, refusesResource: false });
    const bridge = await signInCallRefresh(w, [
      '--oauth-client-id',
      '0f6e3c1a-entra-app',
      '--oauth-scope',
      'api://fenbs/mcp.read offline_access',
      '--oauth-resource',
      'api://fenbs',
    ]);
    expect(w.provider.authorizations[0]!.get('scope')).toBe('api://fenbs/mcp.read offline_access');
    expect(w.provider.authorizations[0]!.get('resource')).toBe('api://fenbs');
    expect(w.provider.tokenRequests.every((form) => form.get('resource') === 'api://fenbs')).toBe(true);
    expectNoSecret(w, bridge);
  });
});

describe('doctor', () => {
  it('shows on its OAuth line what the sign-in sends beyond the defaults', async () => {
    const run = await exec(
      process.execPath,
      [
        BIN,
        'doctor',
        '--url',
        'http://127.0.0.1:9/mcp',
        '--oauth-no-resource',
        '--oauth-scope',
        'api://fenbs/.default offline_access',
        '--oauth-authorize-param',
        'audience=x',
      ],
      { env: { PATH: process.env.PATH ?? '' } },
    ).catch((error: { stdout: string }) => error);
    expect(run.stdout).toMatch(/^✓ oauth {7}the sign-in sends scope "api:\/\/fenbs\/\.default offline_access", no resource parameter, audience=x$/m);
  });
});

describe('Auth0', () => {
  const AUTH0: ProviderProfile = {
    clients: [{ id: 'auth0-native-client' }],
    audience: 'https://fenbs.example/api',
    scopesSupported: ['openid', 'offline_access'],
  };

  it('hints at --oauth-authorize-param audience=… when the server refuses the opaque token a sign-in without one gave', async () => {
    const w = await world(AUTH0);
    const bridge = start(w, ['--oauth-client-id', 'auth0-native-client']);
    bridge.send(initializeRequest('init'));
    const reply = await bridge.reply('init', 30_000);
    expect(reply.error.data.hint).toMatch(/--oauth-authorize-param audience=<the API identifier>/);
  });

  it('signs in with --oauth-authorize-param audience=…, calls a tool and refreshes without a browser', async () => {
    const w = await world(AUTH0);
    const bridge = await signInCallRefresh(w, ['--oauth-client-id', 'auth0-native-client', '--oauth-authorize-param', 'audience=https://fenbs.example/api']);
    expect(w.provider.authorizations[0]!.get('audience')).toBe('https://fenbs.example/api');
    expectNoSecret(w, bridge);
  });
});

describe('Google', () => {
  const SECRET = 'GOCSPX-google~installed.app_secret';
  const GOOGLE: ProviderProfile = {
    clients: [{ id: '1234-google.apps.googleusercontent.com', secret: SECRET }],
    authMethods: ['client_secret_post', 'client_secret_basic'],
    // A refresh token only for access_type=offline with prompt=consent.
    issuesRefreshToken: (params) => params.get('access_type') === 'offline' && params.get('prompt') === 'consent',
  };

  it('signs in with a pre-registered client and its secret, access_type=offline and prompt=consent, and refreshes without a browser', async () => {
    const w = await world(GOOGLE, { FENBS_MCP_OAUTH_CLIENT_SECRET: SECRET });
    const bridge = await signInCallRefresh(w, [
      '--oauth-client-id',
      '1234-google.apps.googleusercontent.com',
      '--oauth-authorize-param',
      'access_type=offline',
      '--oauth-authorize-param',
      'prompt=consent',
    ]);
    const code = w.provider.tokenRequests.find((form) => form.get('grant_type') === 'authorization_code');
    expect(code).toBeDefined();
    expectNoSecret(w, bridge, [SECRET]);
  });

  it('refuses an extra parameter the flow sets itself, saying why', async () => {
    const run = await exec(process.execPath, [BIN, '--url', 'https://mcp.example/mcp', '--oauth-authorize-param', 'redirect_uri=https://evil.example/'], {
      env: { PATH: process.env.PATH ?? '' },
    }).catch((error: { code: number; stderr: string }) => error);
    expect((run as { code: number }).code).toBe(2);
    expect((run as { stderr: string }).stderr).toMatch(/--oauth-authorize-param cannot set redirect_uri: the sign-in sets it itself/);
  });
});

describe('issuers under a path', () => {
  it.each([
    ['Okta', '/oauth2/default', 'rfc8414-insertion'],
    ['Keycloak', '/realms/fenbs', 'oidc-appending'],
  ] as const)('%s: finds the metadata of an issuer at %s, signs in and refreshes', async (_, issuerPath, metadataAt) => {
    const w = await world({ issuerPath, metadataAt, clients: [{ id: 'fenbs-public' }], scopesSupported: ['openid', 'offline_access'] });
    const bridge = await signInCallRefresh(w, ['--oauth-client-id', 'fenbs-public']);
    expectNoSecret(w, bridge);
  });

  it('refuses metadata that names another issuer, naming both values and the server as at fault', async () => {
    const w = await world({ clients: [{ id: 'fenbs-public' }], claimedIssuer: 'https://login.example/other/' });
    const bridge = start(w, ['--oauth-client-id', 'fenbs-public']);
    bridge.send(initializeRequest('init'));
    const reply = await bridge.reply('init', 30_000);
    expect(reply.error.message).toMatch(
      /says its issuer is "https:\/\/login\.example\/other\/", but it was looked up for the issuer "http:\/\/127\.0\.0\.1:\d+\/"/,
    );
    expect(reply.error.data.hint).toMatch(/the server's OAuth metadata is at fault/);
    expect(w.browserOpens()).toBe(0);
  });
});

describe('servers without an authorization endpoint', () => {
  it('device-only: signs in with --oauth-device-code and refreshes', async () => {
    const w = await world({
      authorizationEndpoint: false,
      deviceEndpoint: true,
      grantTypes: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
      clients: [{ id: 'tv-client' }],
      scopesSupported: ['offline_access'],
    });
    const bridge = await signInCallRefresh(w, ['--oauth-device-code', '--oauth-client-id', 'tv-client']);
    expect(bridge.stderr()).toContain('WDJB-MJHT');
    expect(w.browserOpens()).toBe(0);
    expectNoSecret(w, bridge);
  });

  it.each([
    ['RSA', 'RS256'],
    ['P-256', 'ES256'],
  ] as const)(
    'machine-only: gets a token with --oauth-client-credentials and an %s --oauth-client-key (private_key_jwt, aud the token endpoint), and no key in any output',
    async (kind, algorithm) => {
      const pair = kind === 'RSA' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
      const pem = pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
      const w = await world({
        authorizationEndpoint: false,
        grantTypes: ['client_credentials'],
        authMethods: ['private_key_jwt'],
        clients: [{ id: 'ci-robot', publicKey: pair.publicKey }],
      });
      const keyFile = join(w.dir, 'robot-key.pem');
      writeFileSync(keyFile, pem, { mode: 0o600 });
      const bridge = start(w, ['--oauth-client-credentials', '--oauth-client-id', 'ci-robot', '--oauth-client-key', keyFile]);
      bridge.send(initializeRequest('init'));
      expect((await bridge.reply('init', 30_000)).result?.protocolVersion).toBe('2025-06-18');
      bridge.send(initializedNotification);
      expect((await call(bridge, 'robot')).result.content[0].text).toBe('robot');
      w.provider.expireAccessTokens();
      expect((await call(bridge, 'robot-again')).result.content[0].text).toBe('robot-again');
      bridge.end();
      await bridge.exited;
      expect(w.provider.assertionAudiences.length).toBeGreaterThanOrEqual(2);
      expect(new Set(w.provider.assertionAlgorithms)).toEqual(new Set([algorithm]));
      expect(new Set(w.provider.assertionAudiences)).toEqual(new Set([`${w.provider.issuer}/token`]));
      const body = pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
      expectNoSecret(w, bridge, [body.slice(10, 60)]);
    },
  );
});

describe('private_key_jwt in the browser sign-in', () => {
  it('signs a pre-registered client in with its --oauth-client-key at the code exchange and the refresh', async () => {
    const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const w = await world({
      clients: [{ id: 'web-with-key', publicKey: pair.publicKey }],
      authMethods: ['private_key_jwt'],
      scopesSupported: ['offline_access'],
    });
    const keyFile = join(w.dir, 'web-key.pem');
    writeFileSync(keyFile, pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), { mode: 0o600 });
    const bridge = await signInCallRefresh(w, ['--oauth-client-id', 'web-with-key', '--oauth-client-key', keyFile]);
    expect(w.provider.tokenRequests.map((form) => form.get('grant_type'))).toEqual(['authorization_code', 'refresh_token']);
    expect(w.provider.tokenRequests.every((form) => form.get('client_assertion_type') === 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer')).toBe(true);
    expectNoSecret(w, bridge);
  });
});

describe('the callback port', () => {
  it('already taken: login fails within seconds naming the port and the option, and opens no browser', async () => {
    const w = await world({ clients: [{ id: 'fenbs-public' }] });
    const taken = createServer();
    taken.listen(0, '127.0.0.1');
    await new Promise((resolve) => taken.once('listening', resolve));
    cleanups.push(() => new Promise((resolve) => taken.close(resolve)));
    const port = (taken.address() as AddressInfo).port;
    const started = Date.now();
    const run = await exec(
      process.execPath,
      [BIN, 'login', '--url', w.provider.mcpUrl, '--oauth-client-id', 'fenbs-public', '--oauth-callback-port', String(port)],
      { env: { PATH: process.env.PATH ?? '', ...w.env }, timeout: 20_000 },
    ).catch((error: { code: number; stderr: string }) => error);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect((run as { code: number }).code).not.toBe(0);
    expect((run as { stderr: string }).stderr).toMatch(new RegExp(`cannot listen for the sign-in callback on 127\\.0\\.0\\.1:${port}`));
    expect((run as { stderr: string }).stderr).toMatch(/--oauth-callback-port/);
    expect(w.browserOpens()).toBe(0);
  });
});
