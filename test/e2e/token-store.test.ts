// Where the built bin keeps OAuth secrets (--token-store): a real Secret Service when one runs, 0600 files otherwise.

import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startOAuthSetup, type OAuthSetup, type OAuthSetupOptions } from '../helpers/oauth-servers.js';
import { KEYRING_REQUIRED, secretServiceMissing, startSecretService, type SecretService } from '../helpers/secret-service.js';
import { BIN, initializedNotification, initializeRequest, spawnBridge } from '../helpers/spawn-bridge.js';
import { pidIn, waitUntilGone } from '../helpers/processes.js';

const BROWSER_SCRIPT = fileURLToPath(new URL('../helpers/oauth-browser.mjs', import.meta.url));
const SECRET = 'e2e-keyring-machine-secret-0123456789abcdef';
const CLIENT = 'ci-runner';
const missing = secretServiceMissing();

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface World {
  setup: OAuthSetup;
  /** The bridges' HOME: the token cache (~/.config/fenbs-mcp) and the keyring's files live here, and nothing else. */
  home: string;
  /** Outside HOME: the test browser's logs (they hold authorization codes). */
  aside: string;
}

async function world(options: OAuthSetupOptions = {}): Promise<World> {
  const setup = await startOAuthSetup(options);
  cleanups.push(() => setup.close());
  const root = mkdtempSync(join(tmpdir(), 'fenbs-token-store-e2e-'));
  cleanups.push(() => rmSync(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 }));
  mkdirSync(join(root, 'home'));
  mkdirSync(join(root, 'aside'));
  return { setup, home: join(root, 'home'), aside: join(root, 'aside') };
}

async function secretService(home: string): Promise<SecretService> {
  const service = await startSecretService(home);
  cleanups.push(() => service.close());
  return service;
}

function browserEnv(w: World): Record<string, string> {
  return {
    BROWSER: `"${process.execPath}" "${BROWSER_SCRIPT}"`,
    OAUTH_BROWSER_LOG: join(w.aside, 'browser.log'),
    OAUTH_BROWSER_CODES: join(w.aside, 'codes.log'),
    OAUTH_BROWSER_MODE: 'approve',
  };
}

function cli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH ?? '', FENBS_MCP_LOG_LEVEL: 'info', ...env } }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr }),
    );
  });
}

/** Every spelling a secret could take in a file: as is, JSON-escaped, percent-encoded, base64 (alone and as HTTP Basic's `id:secret`). */
function spellings(secret: string, clientIds: readonly string[]): string[] {
  const b64 = (text: string) => Buffer.from(text).toString('base64');
  const b64url = (text: string) => Buffer.from(text).toString('base64url');
  const basic = clientIds.flatMap((id) => [b64(`${id}:${secret}`), b64(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`)]);
  return [secret, JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret), b64(secret), b64url(secret), ...basic];
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((name) => join(dir, name))
    .filter((path) => statSync(path, { throwIfNoEntry: false })?.isFile() === true);
}

/** Fails naming the file and the secret's spelling when any regular file under `dir` holds one. */
function expectNoSecretInFiles(dir: string, secrets: Iterable<string>, clientIds: readonly string[]): void {
  const files = filesUnder(dir);
  expect(files.length).toBeGreaterThan(0);
  for (const file of files) {
    const text = readFileSync(file).toString('latin1');
    for (const secret of secrets)
      for (const spelling of spellings(secret, clientIds)) if (text.includes(spelling)) expect.fail(`${file} holds a secret: ${spelling}`);
  }
}

/** Registered client ids, for the Basic spellings of their secrets. */
function clientIdsIn(home: string): string[] {
  return filesUnder(join(home, '.config', 'fenbs-mcp'))
    .filter((file) => file.endsWith('.json'))
    .flatMap((file) => [...readFileSync(file, 'utf8').matchAll(/"clientId":"([^"]+)"/g)].map((match) => match[1]!));
}

async function callEchoThrough(url: string, args: string[], env: Record<string, string>, text: string): Promise<string> {
  const bridge = spawnBridge(['--url', url, ...args], { FENBS_MCP_LOG_LEVEL: 'info', ...env });
  cleanups.push(() => bridge.kill());
  bridge.send(initializeRequest('init'));
  expect((await bridge.reply('init', 30_000)).result.protocolVersion).toBe('2025-06-18');
  bridge.send(initializedNotification);
  bridge.send({ jsonrpc: '2.0', id: 'echo', method: 'tools/call', params: { name: 'echo', arguments: { text } } });
  expect((await bridge.reply('echo', 30_000)).result.content[0].text).toBe(text);
  bridge.end();
  await bridge.exited;
  return bridge.stderr();
}

const runKeychain = missing === undefined || KEYRING_REQUIRED;

describe.skipIf(!runKeychain)(`the OS credential store, through a private Secret Service${runKeychain ? '' : ` (skipped: ${missing})`}`, () => {
  it('keeps client credentials tokens in the Secret Service only: no file holds one, doctor and a second bridge read them there, logout leaves no entry', async () => {
    const w = await world({ machineClient: { clientId: CLIENT, clientSecret: SECRET, authMethod: 'client_secret_basic' } });
    const service = await secretService(w.home);
    const env = { HOME: w.home, FENBS_MCP_OAUTH_CLIENT_SECRET: SECRET, ...service.env };
    const args = ['--url', w.setup.mcpUrl, '--oauth-client-credentials', '--oauth-client-id', CLIENT];
    const login = await cli(['login', ...args], env);
    expect(login).toMatchObject({ code: 0, stderr: expect.stringMatching(/fenbs-mcp: signed in to/) });
    expect(login.stderr).toMatch(/OAuth tokens are kept in the Secret Service \(secret-tool\)/);
    expect(w.setup.grants).toEqual(['client_credentials']);
    expect(service.search()).toMatch(/attribute\.service = fenbs-mcp/);
    expectNoSecretInFiles(w.home, w.setup.secrets, [CLIENT]);

    const doctor = await cli(['doctor', ...args], env);
    expect(doctor.stdout).toMatch(/oauth\s+a cached OAuth token from http:\/\/127\.0\.0\.1:\d+ is valid until/);
    await callEchoThrough(w.setup.mcpUrl, args.slice(2), env, 'reused');
    expect(w.setup.grants).toEqual(['client_credentials']);
    expect(w.setup.accepted.length).toBeGreaterThan(0);
    expect(new Set(w.setup.accepted).size).toBe(1);

    expect(await cli(['logout', ...args], env)).toMatchObject({ code: 0, stderr: expect.stringMatching(/signed out of/) });
    expect(service.search()).toBe('');
  });

  it('keeps the tokens of a browser sign-in in the Secret Service only, and a second bridge signs in no more', async () => {
    const w = await world();
    const service = await secretService(w.home);
    const env = { HOME: w.home, ...browserEnv(w), ...service.env };
    const login = await cli(['login', '--url', w.setup.mcpUrl], env);
    expect(login).toMatchObject({ code: 0, stderr: expect.stringMatching(/fenbs-mcp: signed in to/) });
    expect(w.setup.grants).toEqual(['authorization_code']);
    expectNoSecretInFiles(w.home, w.setup.secrets, clientIdsIn(w.home));

    const stderr = await callEchoThrough(w.setup.mcpUrl, [], env, 'after-browser');
    expect(w.setup.grants).toEqual(['authorization_code']);
    expect(stderr).not.toMatch(/sign in to .* in your browser/);

    expect(await cli(['logout', '--url', w.setup.mcpUrl], env)).toMatchObject({ code: 0 });
    expect(service.search()).toBe('');
  });
});

describe('without an OS credential store', () => {
  it('keeps tokens in the cache file as before, and says so once at info level', async () => {
    const w = await world({ machineClient: { clientId: CLIENT, clientSecret: SECRET, authMethod: 'client_secret_basic' } });
    // No DBUS_SESSION_BUS_ADDRESS: a headless Linux session, where secret-tool reaches no Secret Service.
    const env = { HOME: w.home, FENBS_MCP_OAUTH_CLIENT_SECRET: SECRET };
    const stderr = await callEchoThrough(w.setup.mcpUrl, ['--oauth-client-credentials', '--oauth-client-id', CLIENT], env, 'in-files');
    expect(stderr.match(/OAuth tokens are kept in private \(0600\) files under [^:]+: no OS credential store is reachable/g)).toHaveLength(1);
    const cache = filesUnder(join(w.home, '.config', 'fenbs-mcp')).filter((file) => file.endsWith('.json'));
    expect(cache).toHaveLength(1);
    expect(readFileSync(cache[0]!, 'utf8')).toContain(w.setup.accepted[0]);
  });

  it('counts a keyring that never answers (locked, waiting for a password) as no store: the probe is killed at its deadline and the bridge goes on with files', async () => {
    const w = await world({ machineClient: { clientId: CLIENT, clientSecret: SECRET, authMethod: 'client_secret_basic' } });
    // A stand-in secret-tool that hangs the way one waiting on an unlock prompt does.
    const tools = join(w.aside, 'bin');
    mkdirSync(tools);
    writeFileSync(join(tools, 'secret-tool'), `#!/bin/sh\necho $$ > ${join(w.aside, 'pid')}\nexec sleep 60\n`);
    chmodSync(join(tools, 'secret-tool'), 0o755);
    const env = {
      HOME: w.home,
      FENBS_MCP_OAUTH_CLIENT_SECRET: SECRET,
      PATH: `${tools}:${process.env.PATH ?? ''}`,
      DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent',
    };
    const stderr = await callEchoThrough(w.setup.mcpUrl, ['--oauth-client-credentials', '--oauth-client-id', CLIENT], env, 'after-a-hung-keyring');
    expect(
      stderr.match(/no OS credential store is reachable: the Secret Service \(secret-tool\) is not reachable \(probe: it did not answer within 5000 ms/g),
    ).toHaveLength(1);
    await waitUntilGone(pidIn(join(w.aside, 'pid')));
  });

  it('refuses --token-store keychain in login and in the bridge (exit 2), naming the fix, and requests no token', async () => {
    const w = await world({ machineClient: { clientId: CLIENT, clientSecret: SECRET, authMethod: 'client_secret_basic' } });
    const env = { HOME: w.home, FENBS_MCP_OAUTH_CLIENT_SECRET: SECRET };
    const login = await cli(['login', '--url', w.setup.mcpUrl, '--oauth-client-credentials', '--oauth-client-id', CLIENT, '--token-store', 'keychain'], env);
    expect(login.code).not.toBe(0);
    expect(login.stderr).toMatch(/--token-store keychain: .* is not reachable/);
    expect(login.stderr).toMatch(/install secret-tool \(libsecret-tools\) and run a Secret Service/);
    expect(login.stderr).toMatch(/hint: try fenbs-mcp --token-store auto/);
    const bridge = spawnBridge(['--url', w.setup.mcpUrl, '--oauth-client-credentials', '--oauth-client-id', CLIENT, '--token-store', 'keychain'], env);
    cleanups.push(() => bridge.kill());
    expect((await bridge.exited).code).toBe(2);
    expect(bridge.stderr()).toMatch(/--token-store keychain: .* is not reachable[^\n]*install secret-tool/);
    expect(w.setup.grants).toEqual([]);
  });
});
