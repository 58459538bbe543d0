// OAuth through the built bin, as a desktop client runs it: sign-in, reuse, refresh, login/logout, doctor, and no secret in any output.

import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOAuthSetup, startScriptedAuthorization, type OAuthSetup } from '../helpers/oauth-servers.js';
import { BIN, initializedNotification, initializeRequest, spawnBridge, type BridgeProcess } from '../helpers/spawn-bridge.js';

const exec = promisify(execFile);
const BROWSER_SCRIPT = fileURLToPath(new URL('../helpers/oauth-browser.mjs', import.meta.url));
const OPENER_RECORDER = fileURLToPath(new URL('../helpers/opener-recorder.mjs', import.meta.url));

/** Everything any run wrote (stdout, stderr, log files, doctor), searched for secrets at the end. */
const outputs: { what: string; text: string }[] = [];
const setups: { close(): Promise<void> }[] = [];
let home: string;

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), 'fenbs-oauth-e2e-'));
});
afterAll(async () => {
  await Promise.all(setups.map((setup) => setup.close()));
  rmSync(home, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
});

function envFor(name: string, mode = 'approve'): Record<string, string> {
  return {
    FENBS_MCP_HOME: join(home, name, 'state'),
    BROWSER: `"${process.execPath}" "${BROWSER_SCRIPT}"`,
    OAUTH_BROWSER_LOG: join(home, name, 'browser.log'),
    OAUTH_BROWSER_CODES: join(home, name, 'codes.log'),
    OAUTH_BROWSER_MODE: mode,
    FENBS_MCP_LOG_LEVEL: 'info',
  };
}

function invocations(name: string): number {
  const file = join(home, name, 'browser.log');
  return existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter((line) => line !== '').length
    : 0;
}

const oauthSetups: OAuthSetup[] = [];
async function newSetup(): Promise<OAuthSetup> {
  const setup = await startOAuthSetup();
  setups.push(setup);
  oauthSetups.push(setup);
  return setup;
}

function bridge(setup: OAuthSetup, name: string, mode?: string): { process: BridgeProcess; logFile: string } {
  // --log-file needs its folder to exist.
  mkdirSync(join(home, name), { recursive: true });
  const logFile = join(home, name, `bridge-${outputs.length}-${Math.random().toString(36).slice(2)}.log`);
  return { process: spawnBridge(['--url', setup.mcpUrl, '--log-file', logFile], envFor(name, mode)), logFile };
}

async function finish(run: { process: BridgeProcess; logFile: string }, what: string): Promise<void> {
  run.process.end();
  await run.process.exited;
  outputs.push({ what: `${what} stdout`, text: run.process.lines.join('\n') }, { what: `${what} stderr`, text: run.process.stderr() });
  if (existsSync(run.logFile)) outputs.push({ what: `${what} log file`, text: readFileSync(run.logFile, 'utf8') });
}

async function cli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const done = await exec(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH ?? '', ...env } }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );
  outputs.push({ what: `fenbs-mcp ${args[0]} stdout`, text: done.stdout }, { what: `fenbs-mcp ${args[0]} stderr`, text: done.stderr });
  return done;
}

async function useTools(run: BridgeProcess, tag: string): Promise<void> {
  run.send(initializeRequest(`init-${tag}`));
  expect((await run.reply(`init-${tag}`, 30_000)).result.protocolVersion).toBe('2025-06-18');
  run.send(initializedNotification);
  run.send({ jsonrpc: '2.0', id: `list-${tag}`, method: 'tools/list' });
  expect((await run.reply(`list-${tag}`)).result.tools.map((tool: { name: string }) => tool.name)).toContain('echo');
  run.send({ jsonrpc: '2.0', id: `call-${tag}`, method: 'tools/call', params: { name: 'echo', arguments: { text: tag } } });
  expect((await run.reply(`call-${tag}`)).result.content[0].text).toBe(tag);
}

describe('OAuth through the built bridge', () => {
  let setup: OAuthSetup;

  it('signs in with no token set, then initializes, lists and calls tools; prints the sign-in URL on stderr', async () => {
    setup = await newSetup();
    const run = bridge(setup, 'main');
    await useTools(run.process, 'first');
    expect(invocations('main')).toBe(1);
    expect(run.process.stderr()).toMatch(/in your browser\. If no browser opened, open this URL/);
    await finish(run, 'first run');
  });

  it('opens no browser on a second run, and refreshes an expired token without one', async () => {
    const run = bridge(setup, 'main');
    await useTools(run.process, 'second');
    setup.expireAccessTokens();
    run.process.send({ jsonrpc: '2.0', id: 'after-expiry', method: 'tools/call', params: { name: 'echo', arguments: { text: 'refreshed' } } });
    expect((await run.process.reply('after-expiry')).result.content[0].text).toBe('refreshed');
    expect(invocations('main')).toBe(1);
    expect(setup.grants).toEqual(['authorization_code', 'refresh_token']);
    await finish(run, 'second run');
  });

  it('doctor says the cached token is valid, and checks the server with it', async () => {
    const { stdout, code } = await cli(['doctor', '--url', setup.mcpUrl, '--allow-http'], envFor('main'));
    expect(stdout).toMatch(/oauth\s+a cached OAuth token from http:\/\/127\.0\.0\.1:\d+ is valid until/);
    expect(stdout).toMatch(/credential\s+OAuth \(cached token\)/);
    expect(stdout).toContain('fenbs-mcp can bridge to this server.');
    expect(code).toBe(0);
  });

  it('logout forgets the server; login signs in ahead (exit 0) and then finds itself signed in', async () => {
    const logout = await cli(['logout', '--url', setup.mcpUrl], envFor('main'));
    expect(logout).toMatchObject({ code: 0, stderr: expect.stringMatching(/signed out of/) });
    const login = await cli(['login', '--url', setup.mcpUrl], envFor('main'));
    expect(login).toMatchObject({ code: 0, stderr: expect.stringMatching(/fenbs-mcp: signed in to/) });
    expect(invocations('main')).toBe(2);
    const again = await cli(['login', '--url', setup.mcpUrl], envFor('main'));
    expect(again).toMatchObject({ code: 0, stderr: expect.stringMatching(/already signed in/) });
    expect(invocations('main')).toBe(2);
  });

  it('runs one sign-in for two bridges started at once (a desktop app starting several)', async () => {
    const shared = await newSetup();
    const runs = [bridge(shared, 'pair'), bridge(shared, 'pair')];
    await Promise.all(runs.map((run, i) => useTools(run.process, `pair-${i}`)));
    expect(invocations('pair')).toBe(1);
    expect(shared.grants.filter((grant) => grant === 'authorization_code')).toHaveLength(1);
    for (const [i, run] of runs.entries()) await finish(run, `pair run ${i}`);
  });

  it('answers a denied sign-in with an AUTH_REQUIRED error reply, not a hang', async () => {
    const denied = await newSetup();
    const run = bridge(denied, 'denied', 'deny');
    run.process.send(initializeRequest('init'));
    expect((await run.process.reply('init', 30_000)).error).toMatchObject({ data: { bridgeCode: 'AUTH_REQUIRED' }, message: expect.stringMatching(/denied/) });
    await finish(run, 'denied run');
  });

  it('starts no browser for a file: sign-in page, in the bridge and in login, and answers each request once (CVE-2025-6514)', async () => {
    const hostile = await startScriptedAuthorization(() => ({ authorization_endpoint: 'file:///etc/passwd' }));
    setups.push(hostile);
    const record = join(home, 'opened-hostile.jsonl');
    const env = { ...envFor('hostile'), BROWSER: `"${process.execPath}" "${OPENER_RECORDER}"`, OPENER_RECORD: record };
    const run = spawnBridge(['--url', hostile.mcpUrl], env);
    for (const id of ['a', 'b']) {
      run.send(initializeRequest(id));
      expect((await run.reply(id, 30_000)).error).toMatchObject({
        data: { bridgeCode: 'AUTH_REQUIRED' },
        message: expect.stringMatching(/authorization_endpoint .* will not be opened in a browser: its scheme is file:/),
      });
    }
    run.end();
    expect(await run.exited).toMatchObject({ code: 0 });
    expect(run.lines.filter((line) => /"id":"[ab]"/.test(line))).toHaveLength(2);
    const login = await cli(['login', '--url', hostile.mcpUrl], env);
    expect(login).toMatchObject({ code: 1, stderr: expect.stringMatching(/login failed: refused the authorization server .*its scheme is file:/) });
    expect(existsSync(record)).toBe(false);
  });

  it('is stalled by no FIFO in place of the token cache or its lock: it signs in and puts a private file of its own there', async () => {
    const fifo = await newSetup();
    const dir = join(home, 'fifo', 'state', 'oauth');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const key = createHash('sha256').update(new URL(fifo.mcpUrl).href).digest('hex').slice(0, 32);
    // Opened to read, a FIFO blocks until a writer comes: the whole bridge with it.
    execFileSync('mkfifo', ['-m', '600', join(dir, `${key}.json`), join(dir, `${key}.lock`)]);
    const run = bridge(fifo, 'fifo');
    try {
      await useTools(run.process, 'fifo');
    } catch (error) {
      run.process.kill();
      throw error;
    }
    expect(lstatSync(join(dir, `${key}.json`)).isFile()).toBe(true);
    expect(existsSync(join(dir, `${key}.lock`))).toBe(false);
    expect(invocations('fifo')).toBe(1);
    await finish(run, 'fifo run');
  });

  it('writes no token, code or verifier to any stdout, stderr, log file or doctor report', () => {
    const secrets = new Set(oauthSetups.flatMap((s) => [...s.secrets]));
    for (const name of ['main', 'pair', 'denied', 'fifo']) {
      const codes = join(home, name, 'codes.log');
      if (!existsSync(codes)) continue;
      for (const line of readFileSync(codes, 'utf8')
        .split('\n')
        .filter((l) => l !== '')) {
        const code = new URL(line).searchParams.get('code');
        if (code !== null) secrets.add(code);
      }
    }
    // What was seen: codes, verifiers, access and refresh tokens of every run above.
    expect(secrets.size).toBeGreaterThan(10);
    expect(outputs.length).toBeGreaterThan(10);
    const leaks = outputs.flatMap(({ what, text }) =>
      [...secrets].filter((secret) => text.includes(secret)).map((secret) => `${what}: ${secret.slice(0, 4)}…`),
    );
    expect(leaks).toEqual([]);
  });
});
