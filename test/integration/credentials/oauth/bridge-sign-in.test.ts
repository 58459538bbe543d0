// OAuth sign-in through the bridge in-process, against oidc-provider and an MCP server that checks its tokens.

import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { createRedactor } from '../../../../src/logging/redactor.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createConfig } from '../../../../src/config/config.js';
import { runAccountCommand } from '../../../../src/cli/account-commands.js';
import { oauthCacheCheck } from '../../../../src/doctor/oauth-check.js';
import { SIGN_IN_QUIET_MS } from '../../../../src/credentials/oauth/oauth-credential.js';
import { ADMIN_TOOL, startOAuthSetup, startScriptedAuthorization, type OAuthSetup } from '../../../helpers/oauth-servers.js';
import { startInProcessBridge, type InProcessBridge } from '../../../helpers/in-process-bridge.js';
import { initializedNotification, initializeRequest } from '../../../helpers/spawn-bridge.js';

export const BROWSER_SCRIPT = fileURLToPath(new URL('../../../helpers/oauth-browser.mjs', import.meta.url));
const OPENER_RECORDER = fileURLToPath(new URL('../../../helpers/opener-recorder.mjs', import.meta.url));

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface World {
  setup: OAuthSetup;
  home: string;
  browserLog: string;
  env: (mode?: string) => Record<string, string>;
  invocations: () => string[];
}

async function world(options: Parameters<typeof startOAuthSetup>[0] = {}): Promise<World> {
  const setup = await startOAuthSetup(options);
  cleanups.push(() => setup.close());
  const home = mkdtempSync(join(tmpdir(), 'fenbs-oauth-'));
  cleanups.push(() => {
    try {
      rmSync(home, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
    } catch (error) {
      throw new Error(`left: ${JSON.stringify(readdirSync(home, { recursive: true }))}`, { cause: error });
    }
  });
  const browserLog = join(home, 'browser.log');
  return {
    setup,
    home,
    browserLog,
    env: (mode = 'approve') => ({
      FENBS_MCP_HOME: join(home, 'state'),
      BROWSER: `"${process.execPath}" "${BROWSER_SCRIPT}"`,
      OAUTH_BROWSER_LOG: browserLog,
      OAUTH_BROWSER_CODES: join(home, 'codes.log'),
      OAUTH_BROWSER_MODE: mode,
    }),
    invocations: () =>
      existsSync(browserLog)
        ? readFileSync(browserLog, 'utf8')
            .split('\n')
            .filter((line) => line !== '')
        : [],
  };
}

function bridgeFor(w: World, mode?: string, extra: string[] = []): InProcessBridge {
  const bridge = startInProcessBridge(['--url', w.setup.mcpUrl, ...extra], w.env(mode));
  cleanups.push(() => bridge.kill());
  return bridge;
}

async function session(bridge: InProcessBridge): Promise<void> {
  bridge.send(initializeRequest('init'));
  expect((await bridge.reply('init', 20_000)).result.protocolVersion).toBe('2025-06-18');
  bridge.send(initializedNotification);
}

describe('OAuth sign-in through the bridge (in-process)', () => {
  it('signs in with the browser on the first 401, then initializes, lists and calls tools with the token', async () => {
    const w = await world();
    const bridge = bridgeFor(w);
    await session(bridge);
    bridge.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    expect((await bridge.reply('list')).result.tools.map((t: { name: string }) => t.name)).toContain('echo');
    bridge.send({ jsonrpc: '2.0', id: 'call', method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' } } });
    expect((await bridge.reply('call')).result.content[0].text).toBe('hi');
    expect(w.invocations()).toHaveLength(1);
    const signInUrl = new URL(w.invocations()[0]!);
    // PKCE S256 and the resource indicator on the authorization request (RFC 7636, RFC 8707).
    expect(signInUrl.searchParams.get('code_challenge_method')).toBe('S256');
    expect(signInUrl.searchParams.get('resource')).toBe(w.setup.mcpUrl);
    // The challenged scope, and offline_access, which oidc-provider lists in scopes_supported.
    expect(signInUrl.searchParams.get('scope')).toBe('mcp:read offline_access');
    expect(w.setup.grants).toEqual(['authorization_code']);
  });
});

async function signedIn(w: World): Promise<void> {
  const bridge = bridgeFor(w);
  await session(bridge);
  bridge.end();
  await bridge.exited;
}

function cacheFiles(w: World): string[] {
  const dir = join(w.home, 'state', 'oauth');
  return existsSync(dir)
    ? readdirSync(dir)
        .filter((name) => name.endsWith('.json'))
        .map((name) => join(dir, name))
    : [];
}

describe('OAuth tokens kept and renewed (in-process)', () => {
  it('starts a second run with the cached token and opens no browser', async () => {
    const w = await world();
    await signedIn(w);
    const again = bridgeFor(w);
    await session(again);
    again.send({ jsonrpc: '2.0', id: 'call', method: 'tools/call', params: { name: 'echo', arguments: { text: 'again' } } });
    expect((await again.reply('call')).result.content[0].text).toBe('again');
    expect(w.invocations()).toHaveLength(1);
    expect(w.setup.grants).toEqual(['authorization_code']);
  });

  it('refreshes with the refresh token after the access token expired, without a browser', async () => {
    const w = await world();
    const bridge = bridgeFor(w);
    await session(bridge);
    w.setup.expireAccessTokens();
    bridge.send({ jsonrpc: '2.0', id: 'call', method: 'tools/call', params: { name: 'echo', arguments: { text: 'after expiry' } } });
    expect((await bridge.reply('call')).result.content[0].text).toBe('after expiry');
    expect(w.invocations()).toHaveLength(1);
    expect(w.setup.grants).toEqual(['authorization_code', 'refresh_token']);
  });

  it('runs one sign-in for two bridges started at once, and both use its token', async () => {
    const w = await world();
    const [first, second] = [bridgeFor(w), bridgeFor(w)];
    await Promise.all([session(first), session(second)]);
    expect(w.invocations()).toHaveLength(1);
    expect(w.setup.grants).toEqual(['authorization_code']);
  });

  it('refreshes once for two bridges whose token expired at the same time (a rotated refresh token is never reused)', async () => {
    const w = await world();
    await signedIn(w);
    const [first, second] = [bridgeFor(w), bridgeFor(w)];
    await Promise.all([session(first), session(second)]);
    w.setup.expireAccessTokens();
    for (const [i, bridge] of [first, second].entries())
      bridge.send({ jsonrpc: '2.0', id: `call-${i}`, method: 'tools/call', params: { name: 'echo', arguments: { text: `b${i}` } } });
    expect((await first.reply('call-0')).result.content[0].text).toBe('b0');
    expect((await second.reply('call-1')).result.content[0].text).toBe('b1');
    expect(w.setup.grants).toEqual(['authorization_code', 'refresh_token']);
    expect(w.invocations()).toHaveLength(1);
  });

  it('re-authorizes with the challenged scopes on a 403 insufficient_scope, once, and the call then succeeds', async () => {
    const w = await world();
    const bridge = bridgeFor(w);
    await session(bridge);
    bridge.send({ jsonrpc: '2.0', id: 'admin', method: 'tools/call', params: { name: ADMIN_TOOL, arguments: {} } });
    expect((await bridge.reply('admin')).result.content[0].text).toBe('admin report');
    expect(w.invocations()).toHaveLength(2);
    // authorization §Scope Challenge Handling: the scopes the challenge names.
    expect(new URL(w.invocations()[1]!).searchParams.get('scope')?.split(' ').sort()).toEqual(['mcp:admin', 'mcp:read', 'offline_access']);
  });

  it('signs in again with a fresh registration when the cache is corrupt, with nothing to delete by hand', async () => {
    const w = await world();
    await signedIn(w);
    for (const file of cacheFiles(w)) writeFileSync(file, '{ not json');
    const bridge = bridgeFor(w);
    await session(bridge);
    expect(w.invocations()).toHaveLength(2);
  });

  it('registers anew when the authorization server no longer knows the cached client', async () => {
    const w = await world();
    await signedIn(w);
    const [file] = cacheFiles(w);
    const contents = JSON.parse(readFileSync(file!, 'utf8'));
    for (const entry of Object.values<any>(contents.issuers)) entry.client.clientId = 'forgotten-client';
    // The server forgets a client long after the sign-in, past the quiet period that follows one.
    contents.lastSignIn.at -= SIGN_IN_QUIET_MS;
    writeFileSync(file!, JSON.stringify(contents));
    w.setup.expireAccessTokens();
    const bridge = bridgeFor(w);
    await session(bridge);
    expect(w.invocations()).toHaveLength(2);
    expect(w.setup.grants).toEqual(['authorization_code', 'refresh_token', 'authorization_code']);
  });

  it('keeps the cache private: directory 0700, files 0600', async () => {
    const w = await world();
    await signedIn(w);
    expect(statSync(join(w.home, 'state')).mode & 0o777).toBe(0o700);
    expect(statSync(join(w.home, 'state', 'oauth')).mode & 0o777).toBe(0o700);
    for (const file of cacheFiles(w)) expect(statSync(file).mode & 0o777).toBe(0o600);
  });
});

describe('OAuth sign-in that does not complete (in-process)', () => {
  it('answers with AUTH_REQUIRED, the URL and a hint when the user denies the sign-in', async () => {
    const w = await world();
    const bridge = bridgeFor(w, 'deny');
    bridge.send(initializeRequest('init'));
    const reply = await bridge.reply('init', 20_000);
    expect(reply.error).toMatchObject({
      code: -31015,
      data: { bridgeCode: 'AUTH_REQUIRED', url: expect.stringContaining('/auth?'), hint: expect.stringMatching(/sign in again/) },
    });
    expect(reply.error.message).toMatch(/denied/);
    // A client that retries at once gets the same answer, not a window per retry.
    bridge.send(initializeRequest('again'));
    expect((await bridge.reply('again', 20_000)).error.message).toMatch(/denied/);
    expect(w.invocations()).toHaveLength(1);
    // The registration made for the failed sign-in is kept for the next one.
    expect(cacheFiles(w).map((file) => Object.values<any>(JSON.parse(readFileSync(file, 'utf8')).issuers)[0].client.kind)).toEqual(['registered']);
  });

  it('answers with AUTH_REQUIRED when no sign-in completes within the login timeout (a closed window)', async () => {
    const w = await world();
    const bridge = bridgeFor(w, 'ignore', ['--oauth-login-timeout', '300']);
    bridge.send(initializeRequest('init'));
    const reply = await bridge.reply('init', 20_000);
    expect(reply.error).toMatchObject({ code: -31015, data: { bridgeCode: 'AUTH_REQUIRED', hint: expect.stringMatching(/--oauth-login-timeout/) } });
    expect(reply.error.message).toMatch(/no sign-in completed/);
  });

  it('refuses an authorization server whose metadata names another issuer, and opens no browser', async () => {
    const w = await world({ wrongIssuer: true });
    const bridge = bridgeFor(w);
    bridge.send(initializeRequest('init'));
    const reply = await bridge.reply('init', 20_000);
    expect(reply.error).toMatchObject({ code: -31015, data: { bridgeCode: 'AUTH_REQUIRED' } });
    // Both values named, and the server's metadata said to be at fault.
    expect(reply.error.message).toMatch(
      /says its issuer is "http:\/\/127\.0\.0\.1:1\/elsewhere", but it was looked up for the issuer "http:\/\/127\.0\.0\.1:\d+\/"/,
    );
    expect(reply.error.data.hint).toMatch(/the server's OAuth metadata is at fault/);
    expect(w.invocations()).toHaveLength(0);
  });
});

describe('sign-in pages the bridge opens (in-process)', () => {
  /** A bridge for a server whose authorization server names `endpoint` as its sign-in page; BROWSER records what it is given. */
  async function against(endpoint: (origin: string) => string) {
    const as = await startScriptedAuthorization((origin) => ({ authorization_endpoint: endpoint(origin) }));
    cleanups.push(() => as.close());
    const home = mkdtempSync(join(tmpdir(), 'fenbs-opener-'));
    cleanups.push(() => rmSync(home, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 }));
    const record = join(home, 'opened.jsonl');
    // --allow-http is given on purpose: it widens what the bridge fetches, never what it opens.
    const bridge = startInProcessBridge(['--url', as.mcpUrl, '--allow-http', '--oauth-login-timeout', '2000'], {
      FENBS_MCP_HOME: join(home, 'state'),
      BROWSER: `"${process.execPath}" "${OPENER_RECORDER}"`,
      OPENER_RECORD: record,
    });
    cleanups.push(() => bridge.kill());
    const opened = () =>
      existsSync(record)
        ? readFileSync(record, 'utf8')
            .split('\n')
            .filter((line) => line !== '')
            .map((line) => JSON.parse(line) as string[])
        : [];
    return { as, bridge, opened };
  }

  // MCP authorization §Communication Security: only https (or http to this machine) goes to the
  // browser; anything else handed to the system opener can run a program (CVE-2025-6514).
  it.each([
    ['file:', 'file:///etc/passwd', /scheme is file:/],
    ['javascript:', 'javascript:alert(document.cookie)', /scheme is javascript:/],
    ['data:', 'data:text/html,<script>alert(1)</script>', /scheme is data:/],
    ['ms-msdt:', 'ms-msdt:/id PCWDiagnostic /skip force', /scheme is ms-msdt:/],
    ['remote http:', 'http://evil.example/authorize', /scheme is http: to a host other than this machine/],
    ['user-name https:', 'https://fenbs.ai@evil.example/authorize', /user name or password/],
  ])('starts no opener for a %s sign-in page the authorization server names, and answers each request once with AUTH_REQUIRED', async (_, endpoint, reason) => {
    const { bridge, opened } = await against(() => endpoint);
    const ids = ['first', 'second', 'third'];
    for (const id of ids) {
      bridge.send(initializeRequest(id));
      const reply = await bridge.reply(id, 20_000);
      expect(reply.error).toMatchObject({ code: -31015, data: { bridgeCode: 'AUTH_REQUIRED', hint: expect.any(String) } });
      expect(reply.error.message).toMatch(/^refused the authorization server .*authorization_endpoint/);
      expect(reply.error.message).toMatch(reason);
    }
    bridge.end();
    await bridge.exited;
    for (const id of ids) expect(bridge.lines.filter((line) => (JSON.parse(line) as { id?: unknown }).id === id)).toHaveLength(1);
    expect(opened()).toEqual([]);
  });

  it('login shows what the authorization server says with its control characters made visible', async () => {
    const as = await startScriptedAuthorization(() => ({}));
    cleanups.push(() => as.close());
    const home = mkdtempSync(join(tmpdir(), 'fenbs-opener-'));
    cleanups.push(() => rmSync(home, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 }));
    // An OSC 0 title change and a screen clear, as an error_description.
    const env = {
      FENBS_MCP_HOME: join(home, 'state'),
      BROWSER: `"${process.execPath}" "${OPENER_RECORDER}"`,
      OPENER_RECORD: join(home, 'opened.jsonl'),
      OPENER_ERROR_DESCRIPTION: 'no\x1b]0;pwned\x07\x1b[2J',
    };
    const said: string[] = [];
    const config = createConfig({ options: { url: as.mcpUrl }, env, readTextFile: () => '' });
    expect(
      await runAccountCommand('login', {
        config,
        env,
        logger: pino({ level: 'silent' }),
        redact: createRedactor([]),
        writeStderr: (text) => said.push(text),
        signal: AbortSignal.timeout(20_000),
      }),
    ).toBe('failed');
    const text = said.join('');
    expect(text).toContain('the sign-in was denied (no\\x1b]0;pwned\\x07\\x1b[2J)');
    expect([...text].filter((char) => char === '\x07' || char === '\x1b')).toEqual([]);
  });

  it.each([
    ['an https', () => 'https://as.example/authorize'],
    ['a loopback http', (origin: string) => `${origin}/authorize`],
  ])('hands %s sign-in page to the opener as one argument', async (_, endpoint) => {
    const { as, bridge, opened } = await against(endpoint);
    bridge.send(initializeRequest('init'));
    // The recorder denies the sign-in through the callback, so the answer comes after it ran.
    expect((await bridge.reply('init', 20_000)).error.message).toMatch(/denied/);
    const calls = opened();
    expect(calls).toHaveLength(1);
    expect(calls[0]).toHaveLength(1);
    expect(calls[0]![0]).toMatch(new RegExp(`^${endpoint(as.origin).replace(/[.?]/g, '\\$&')}\\?response_type=code&`));
  });
});

describe('one interactive sign-in per quiet period (in-process)', () => {
  const refusedAtOnce = {
    code: -31015,
    data: { bridgeCode: 'AUTH_REQUIRED', hint: expect.stringContaining('the server refused the token it just issued: check the scopes') },
  };

  it('opens one browser window for twelve requests to a server that refuses every token, answers each with AUTH_REQUIRED and a hint, and a second bridge sharing the cache opens none', async () => {
    const w = await world({ noRefreshTokens: true, refuseEveryToken: true });
    const bridge = bridgeFor(w);
    const answers: any[] = [];
    // A client retrying one request after another…
    for (let i = 0; i < 6; i++) {
      bridge.send(initializeRequest(`one-${i}`));
      answers.push(await bridge.reply(`one-${i}`, 20_000));
    }
    // …and six at once.
    for (let i = 0; i < 6; i++) bridge.send(initializeRequest(`many-${i}`));
    for (let i = 0; i < 6; i++) answers.push(await bridge.reply(`many-${i}`, 20_000));
    expect(w.invocations()).toHaveLength(1);
    expect(answers).toHaveLength(12);
    for (const answer of answers) expect(answer.error).toMatchObject(refusedAtOnce);
    // Another bridge of the same desktop app, started right after: the attempt is recorded in the cache.
    const second = bridgeFor(w);
    second.send(initializeRequest('second'));
    expect((await second.reply('second', 20_000)).error).toMatchObject(refusedAtOnce);
    expect(w.invocations()).toHaveLength(1);
    expect(w.setup.grants).toEqual(['authorization_code']);
  });

  it('holds a denied sign-in for the quiet period in every bridge, and fenbs-mcp login still signs in at once', async () => {
    const w = await world();
    const denied = bridgeFor(w, 'deny');
    denied.send(initializeRequest('init'));
    expect((await denied.reply('init', 20_000)).error.message).toMatch(/denied/);
    const other = bridgeFor(w);
    other.send(initializeRequest('other'));
    const held = await other.reply('other', 20_000);
    expect(held.error).toMatchObject({
      code: -31015,
      data: { bridgeCode: 'AUTH_REQUIRED', hint: expect.stringMatching(/no new sign-in opens for this server for \d+ s.*fenbs-mcp login signs in now/) },
    });
    expect(held.error.message).toMatch(/^the sign-in \d+ s ago was denied$/);
    expect(w.invocations()).toHaveLength(1);
    const env = w.env();
    const said: string[] = [];
    const config = createConfig({ options: { url: w.setup.mcpUrl }, env, readTextFile: () => '' });
    expect(
      await runAccountCommand('login', {
        config,
        env,
        logger: pino({ level: 'silent' }),
        redact: createRedactor([]),
        writeStderr: (text) => said.push(text),
        signal: AbortSignal.timeout(20_000),
      }),
    ).toBe('ok');
    expect(said.at(-1)).toMatch(/^fenbs-mcp: signed in to/);
    expect(w.invocations()).toHaveLength(2);
    // The bridge held back takes the token login stored, without a window.
    other.send(initializeRequest('after-login'));
    expect((await other.reply('after-login', 20_000)).result.protocolVersion).toBe('2025-06-18');
    expect(w.invocations()).toHaveLength(2);
  });
});

/** A tmpfs of `bytes` mounted on a new folder (root only), or undefined where mounting is not allowed. */
function smallDisk(bytes: number): string | undefined {
  const dir = mkdtempSync(join(tmpdir(), 'fenbs-oauth-disk-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes},mode=0700`, 'tmpfs', dir], { stdio: 'ignore' });
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return undefined;
  }
  cleanups.push(() => {
    execFileSync('umount', [dir]);
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}
const canMount = process.getuid?.() === 0 && process.platform === 'linux';

describe('the token cache on a hostile or full disk (in-process)', () => {
  it('refuses a cache folder others can write or another user owns: AUTH_REQUIRED naming it, no window, and the token kept there is not sent', async () => {
    const w = await world();
    await signedIn(w);
    const accepted = w.setup.accepted.length;
    const state = join(w.home, 'state');
    chmodSync(state, 0o777);
    const bridge = bridgeFor(w);
    bridge.send(initializeRequest('init'));
    const reply = await bridge.reply('init', 20_000);
    expect(reply.error).toMatchObject({ code: -31015, data: { bridgeCode: 'AUTH_REQUIRED', hint: expect.stringMatching(/chmod 700/) } });
    expect(reply.error.message).toBe(
      `the OAuth token cache folder ${state} can be written by other users (mode 0777): fenbs-mcp neither reads tokens from it nor writes tokens into it`,
    );
    expect(bridge.stderr()).toContain('neither reads tokens from it');
    if (process.getuid?.() === 0) {
      chmodSync(state, 0o700);
      chownSync(state, 65534, 65534);
      bridge.send(initializeRequest('owned'));
      expect((await bridge.reply('owned', 20_000)).error.message).toMatch(/belongs to another user \(uid 65534, not 0\)/);
      chownSync(state, 0, 0);
    }
    expect(w.invocations()).toHaveLength(1);
    expect(w.setup.accepted).toHaveLength(accepted);
  });

  it.skipIf(!canMount)(
    'answers the request when the disk is full while the cache is written, and leaves the old cache as it was (root: a small tmpfs)',
    async () => {
      const w = await world();
      const disk = smallDisk(64 * 1024)!;
      const env = { ...w.env(), FENBS_MCP_HOME: disk };
      const first = startInProcessBridge(['--url', w.setup.mcpUrl], env);
      cleanups.push(() => first.kill());
      await session(first);
      first.end();
      await first.exited;
      const [name] = readdirSync(join(disk, 'oauth')).filter((file) => file.endsWith('.json'));
      const file = join(disk, 'oauth', name!);
      const before = readFileSync(file, 'utf8');
      w.setup.expireAccessTokens();
      // Room for the lock file's one page, none for the new cache file.
      const { bavail, bsize } = statfsSync(disk);
      writeFileSync(join(disk, 'filler'), Buffer.alloc((bavail - 1) * bsize));
      const bridge = startInProcessBridge(['--url', w.setup.mcpUrl], env);
      cleanups.push(() => bridge.kill());
      await session(bridge);
      bridge.send({ jsonrpc: '2.0', id: 'call', method: 'tools/call', params: { name: 'echo', arguments: { text: 'disk full' } } });
      expect((await bridge.reply('call')).result.content[0].text).toBe('disk full');
      expect(w.setup.grants).toEqual(['authorization_code', 'refresh_token']);
      expect(bridge.stderr()).toMatch(/the OAuth token cache could not be written; this bridge keeps its token in memory/);
      expect(bridge.stderr()).toMatch(/ENOSPC/);
      expect(readFileSync(file, 'utf8')).toBe(before);
      expect(readdirSync(join(disk, 'oauth')).sort()).toEqual([name]);
      // Not even the lock file fits: it is not left behind half written, and the request is still answered.
      rmSync(join(disk, 'filler'));
      writeFileSync(join(disk, 'filler'), Buffer.alloc(statfsSync(disk).bavail * bsize));
      w.setup.expireAccessTokens();
      bridge.send({ jsonrpc: '2.0', id: 'full', method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' } } });
      expect((await bridge.reply('full')).error).toMatchObject({ code: -31015, message: expect.stringMatching(/ENOSPC/) });
      expect(readdirSync(join(disk, 'oauth')).sort()).toEqual([name]);
      expect(readFileSync(file, 'utf8')).toBe(before);
    },
  );
});

describe('pre-registered clients, login/logout and doctor (in-process)', () => {
  it('uses --oauth-client-id with its secret from the environment instead of registering, and keeps the secret out of the cache', async () => {
    const preRegistered = { clientId: 'fenbs-pre', clientSecret: 'pre-registered-client-secret-value' };
    const w = await world({ preRegistered });
    const bridge = startInProcessBridge(['--url', w.setup.mcpUrl, '--oauth-client-id', preRegistered.clientId], {
      ...w.env(),
      FENBS_MCP_OAUTH_CLIENT_SECRET: preRegistered.clientSecret,
    });
    cleanups.push(() => bridge.kill());
    await session(bridge);
    expect(new URL(w.invocations()[0]!).searchParams.get('client_id')).toBe('fenbs-pre');
    for (const file of cacheFiles(w)) expect(readFileSync(file, 'utf8')).not.toContain(preRegistered.clientSecret);
  });

  it('login signs in ahead and then finds the cached token; logout forgets it; doctor reports each state', async () => {
    const w = await world();
    const env = w.env();
    const config = createConfig({ options: { url: w.setup.mcpUrl }, env, readTextFile: () => '' });
    const said: string[] = [];
    const run = (command: 'login' | 'logout') =>
      runAccountCommand(command, {
        config,
        env,
        logger: pino({ level: 'silent' }),
        redact: createRedactor([]),
        writeStderr: (text) => said.push(text),
        signal: AbortSignal.timeout(20_000),
      });
    expect(oauthCacheCheck(config, env)).toBeUndefined();
    // On a machine that never signed in: nothing to forget, and no error.
    expect(await run('logout')).toBe('ok');
    expect(said.at(-1)).toMatch(/nothing stored/);
    expect(await run('login')).toBe('ok');
    expect(said.at(-1)).toMatch(/^fenbs-mcp: signed in to/);
    expect(oauthCacheCheck(config, env)).toMatchObject({ ok: true, detail: expect.stringMatching(/is valid until/) });
    expect(oauthCacheCheck(config, env, Date.now() + 7200_000)).toMatchObject({ detail: expect.stringMatching(/refreshes it without a browser/) });
    expect(await run('login')).toBe('ok');
    expect(said.at(-1)).toMatch(/already signed in/);
    expect(await run('logout')).toBe('ok');
    expect(said.at(-1)).toMatch(/signed out of/);
    expect(await run('logout')).toBe('ok');
    expect(said.at(-1)).toMatch(/nothing stored/);
    expect(
      oauthCacheCheck(createConfig({ options: { url: w.setup.mcpUrl }, env: { ...env, FENBS_TOKEN: 'static-token-value' }, readTextFile: () => '' }), env),
    ).toBeUndefined();
  });

  it('login fails with the reason and a hint when the server offers no sign-in', async () => {
    const w = await world({ wrongIssuer: true });
    const env = w.env();
    const said: string[] = [];
    const outcome = await runAccountCommand('login', {
      config: createConfig({ options: { url: w.setup.mcpUrl }, env, readTextFile: () => '' }),
      env,
      logger: pino({ level: 'silent' }),
      redact: createRedactor([]),
      writeStderr: (text) => said.push(text),
      signal: AbortSignal.timeout(20_000),
    });
    expect(outcome).toBe('failed');
    expect(said.join('')).toMatch(/login failed: .*says its issuer is .*but it was looked up for the issuer[\s\S]*\n {2}\S/);
  });
});
