// The OAuth grants without a browser on this machine, through the bridge in-process: the device grant (RFC 8628) and client credentials (RFC 6749 §4.4).

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startOAuthSetup, startScriptedAuthorization, type OAuthSetup, type OAuthSetupOptions } from '../../../helpers/oauth-servers.js';
import { approveDevice } from '../../../helpers/oauth-device-driver.js';
import { startInProcessBridge, toRawOptions, type InProcessBridge } from '../../../helpers/in-process-bridge.js';
import { createConfig } from '../../../../src/config/config.js';
import { runDoctor } from '../../../../src/doctor/doctor.js';
import { initializedNotification, initializeRequest } from '../../../helpers/spawn-bridge.js';

const OPENER_RECORDER = fileURLToPath(new URL('../../../helpers/opener-recorder.mjs', import.meta.url));
const SECRET = 'machine-secret-0123456789abcdef';
const CLIENT = 'ci-runner';

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function home(): string {
  const dir = mkdtempSync(join(tmpdir(), 'fenbs-grants-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 }));
  return dir;
}

async function setupWith(options: OAuthSetupOptions): Promise<OAuthSetup> {
  const setup = await startOAuthSetup(options);
  cleanups.push(() => setup.close());
  return setup;
}

function bridge(url: string, args: string[], env: Record<string, string>): InProcessBridge {
  const started = startInProcessBridge(['--url', url, ...args], env);
  cleanups.push(() => started.kill());
  return started;
}

function envFor(dir: string, extra: Record<string, string> = {}): Record<string, string> {
  // Any opener started would leave its line in this file: the grants here must start none.
  return { FENBS_MCP_HOME: join(dir, 'state'), BROWSER: `"${process.execPath}" "${OPENER_RECORDER}" "${join(dir, 'opened.log')}"`, ...extra };
}

async function callEcho(b: InProcessBridge, id: string, text: string): Promise<any> {
  b.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text } } });
  return b.reply(id, 30_000);
}

async function session(b: InProcessBridge): Promise<void> {
  b.send(initializeRequest('init'));
  expect((await b.reply('init', 30_000)).result.protocolVersion).toBe('2025-06-18');
  b.send(initializedNotification);
}

describe('the device authorization grant (RFC 8628) against oidc-provider', () => {
  it('keeps polling while authorization is pending, then uses the token once the user approves on another device', async () => {
    const setup = await setupWith({ deviceFlow: { intervalSeconds: 1 } });
    const dir = home();
    const b = bridge(setup.mcpUrl, ['--oauth-device-code'], envFor(dir));
    b.send(initializeRequest('init'));
    const device = await setup.nextDeviceAuthorization();
    // Approved only after the bridge has polled once and been told to wait (RFC 8628 §3.5 authorization_pending).
    await expect.poll(() => setup.tokenOutcomes.length, { timeout: 20_000 }).toBeGreaterThan(0);
    await approveDevice(device.verificationUriComplete);
    expect((await b.reply('init', 30_000)).result.protocolVersion).toBe('2025-06-18');
    b.send(initializedNotification);
    expect((await callEcho(b, 'call', 'hello')).result.content[0].text).toBe('hello');
    const issued = setup.tokenOutcomes.indexOf('issued');
    expect(setup.tokenOutcomes.slice(0, issued)).toEqual(Array(issued).fill('authorization_pending'));
    expect(issued).toBeGreaterThan(0);
    expect(setup.grants[issued]).toBe('urn:ietf:params:oauth:grant-type:device_code');

    // The token went to the same cache as the browser flow's: the next bridge asks for no code.
    b.kill();
    const again = bridge(setup.mcpUrl, ['--oauth-device-code'], envFor(dir));
    await session(again);
    expect((await callEcho(again, 'call-2', 'again')).result.content[0].text).toBe('again');
    expect(setup.deviceAuthorizations).toHaveLength(1);
    for (const secret of setup.secrets) expect(b.stderr() + again.stderr() + b.lines.join('\n') + again.lines.join('\n')).not.toContain(secret);
  });

  it('answers the waiting request with AUTH_REQUIRED saying the sign-in was denied when the user denies it', async () => {
    const setup = await setupWith({ deviceFlow: { intervalSeconds: 1 } });
    const b = bridge(setup.mcpUrl, ['--oauth-device-code'], envFor(home()));
    b.send(initializeRequest('init'));
    await approveDevice((await setup.nextDeviceAuthorization()).verificationUriComplete, 'deny');
    const reply = await b.reply('init', 30_000);
    expect(reply.error).toMatchObject({ code: -31015, data: { bridgeCode: 'AUTH_REQUIRED', hint: expect.stringMatching(/--oauth-device-code/) } });
    expect(reply.error.message).toMatch(/device sign-in was denied/);
    expect(setup.tokenOutcomes.at(-1)).toBe('access_denied');
  });

  it('stops polling when expires_in has passed and answers the waiting request with AUTH_REQUIRED saying nobody approved', async () => {
    // Three seconds, so a machine that stalls for one still polls before the code expires.
    const setup = await setupWith({ deviceFlow: { intervalSeconds: 1, codeTtlSeconds: 3 } });
    const b = bridge(setup.mcpUrl, ['--oauth-device-code'], envFor(home()));
    b.send(initializeRequest('init'));
    const reply = await b.reply('init', 30_000);
    expect(reply.error).toMatchObject({ code: -31015, data: { bridgeCode: 'AUTH_REQUIRED', hint: expect.stringMatching(/--oauth-device-code/) } });
    expect(reply.error.message).toMatch(/nobody approved the device sign-in within 3 s/);
    expect(setup.tokenOutcomes.length).toBeGreaterThan(0);
  });

  it('stops polling at the login timeout when that comes before the code expires, and says nobody approved', async () => {
    const setup = await setupWith({ deviceFlow: { intervalSeconds: 1 } });
    const b = bridge(setup.mcpUrl, ['--oauth-device-code', '--oauth-login-timeout', '2500'], envFor(home()));
    b.send(initializeRequest('init'));
    const reply = await b.reply('init', 30_000);
    expect(reply.error).toMatchObject({ code: -31015, data: { bridgeCode: 'AUTH_REQUIRED', hint: expect.stringMatching(/--oauth-login-timeout/) } });
    expect(reply.error.message).toMatch(/nobody approved the device sign-in within 3 s/);
    expect(setup.tokenOutcomes.every((outcome) => outcome === 'authorization_pending')).toBe(true);
  });
});

/**
 * A device-grant authorization server that enforces its interval the way RFC 8628 §3.5 lets it:
 * the first poll is told slow_down, and from then on a poll sooner than the grown interval is told
 * slow_down again; the third poll in time gets the token.
 */
async function startSlowDownServer(options: { finalAnswer?: string } = {}) {
  const answers: string[] = [];
  let lastPoll: number | undefined;
  let intervalMs = 1000;
  let polls = 0;
  const server = await startScriptedAuthorization(
    (origin) => ({ device_authorization_endpoint: `${origin}/device/auth`, grant_types_supported: ['urn:ietf:params:oauth:grant-type:device_code'] }),
    (method, path, form, origin) => {
      if (method === 'POST' && path === '/device/auth') {
        const uri = `${origin}/device`;
        return {
          status: 200,
          body: { device_code: 'scripted-device-code-0123456789', user_code: 'WDJB-MJHT', verification_uri: uri, expires_in: 60, interval: 1 },
        };
      }
      if (method !== 'POST' || path !== '/token' || form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:device_code') return undefined;
      const now = Date.now();
      const early = lastPoll !== undefined && now - lastPoll < intervalMs;
      lastPoll = now;
      polls++;
      const answer = polls === 1 || early ? 'slow_down' : polls === 2 ? 'authorization_pending' : 'issued';
      if (answer === 'slow_down') intervalMs += 5000;
      answers.push(early ? 'too-early' : answer);
      if (answer === 'issued' && options.finalAnswer !== undefined) return { status: 400, body: { error: options.finalAnswer } };
      return answer === 'issued'
        ? { status: 200, body: { access_token: 'scripted-access-token-0123456789', token_type: 'Bearer', expires_in: 3600 } }
        : { status: 400, body: { error: answer } };
    },
  );
  return { ...server, answers };
}

describe('the device authorization grant against an authorization server that asks the bridge to slow down', () => {
  it('adds 5 s to the interval for good after slow_down, so no later poll comes too early', async () => {
    const server = await startSlowDownServer();
    cleanups.push(() => server.close());
    const b = bridge(server.mcpUrl, ['--oauth-device-code'], envFor(home()));
    b.send(initializeRequest('init'));
    // The scripted MCP endpoint refuses every token, so the request ends in an error once the token is issued.
    await b.reply('init', 40_000);
    expect(server.answers).toEqual(['slow_down', 'authorization_pending', 'issued']);
  }, 60_000);

  it('answers the waiting request with AUTH_REQUIRED saying the code expired when the server answers expired_token', async () => {
    const server = await startSlowDownServer({ finalAnswer: 'expired_token' });
    cleanups.push(() => server.close());
    const b = bridge(server.mcpUrl, ['--oauth-device-code'], envFor(home()));
    b.send(initializeRequest('init'));
    const reply = await b.reply('init', 40_000);
    expect(reply.error).toMatchObject({ code: -31015, data: { bridgeCode: 'AUTH_REQUIRED', hint: expect.stringMatching(/--oauth-device-code/) } });
    expect(reply.error.message).toMatch(/device code expired before anyone approved/);
  }, 60_000);

  it('refuses a verification URI that is plain http to another host, and shows nothing', async () => {
    const server = await startScriptedAuthorization(
      (origin) => ({ device_authorization_endpoint: `${origin}/device/auth` }),
      (method, path) =>
        method === 'POST' && path === '/device/auth'
          ? {
              status: 200,
              body: { device_code: 'dc-0123456789abcdef', user_code: 'ABCD-EFGH', verification_uri: 'http://evil.example/device', expires_in: 60 },
            }
          : undefined,
    );
    cleanups.push(() => server.close());
    const b = bridge(server.mcpUrl, ['--oauth-device-code'], envFor(home()));
    b.send(initializeRequest('init'));
    const reply = await b.reply('init', 20_000);
    expect(reply.error).toMatchObject({ code: -31015, data: { bridgeCode: 'AUTH_REQUIRED' } });
    expect(reply.error.message).toMatch(/refused the device sign-in page/);
    expect(server.requests.filter((request) => request === 'POST /token')).toEqual([]);
  });

  it.each([
    [
      'a 600 KB user code',
      { user_code: 'W'.repeat(600_000), verification_uri: 'https://login.example/device' },
      /its user_code is 600000 characters long, more than the 64/,
    ],
    [
      'a 100 KB verification URI',
      { user_code: 'ABCD-EFGH', verification_uri: `https://login.example/${'d'.repeat(100_000)}` },
      /its verification_uri is 100022 characters long, more than the 2048/,
    ],
  ])('refuses %s, naming the bound, and shows nothing of it on stderr or stdout', async (_, fields, message) => {
    const server = await startScriptedAuthorization(
      (origin) => ({ device_authorization_endpoint: `${origin}/device/auth` }),
      (method, path) =>
        method === 'POST' && path === '/device/auth' ? { status: 200, body: { device_code: 'dc-0123456789abcdef', expires_in: 60, ...fields } } : undefined,
    );
    cleanups.push(() => server.close());
    const b = bridge(server.mcpUrl, ['--oauth-device-code'], envFor(home()));
    b.send(initializeRequest('init'));
    const reply = await b.reply('init', 20_000);
    expect(reply.error).toMatchObject({ code: -31015, data: { bridgeCode: 'AUTH_REQUIRED' } });
    expect(reply.error.message).toMatch(message);
    expect(b.stderr().length + b.lines.join('').length).toBeLessThan(20_000);
    expect(server.requests.filter((request) => request === 'POST /token')).toEqual([]);
  });

  it('answers with one clear error when the authorization server has no device_authorization_endpoint', async () => {
    const server = await startScriptedAuthorization(() => ({}));
    cleanups.push(() => server.close());
    const b = bridge(server.mcpUrl, ['--oauth-device-code'], envFor(home()));
    b.send(initializeRequest('init'));
    const reply = await b.reply('init', 20_000);
    expect(reply.error).toMatchObject({ code: -31015, data: { bridgeCode: 'AUTH_REQUIRED', hint: expect.stringMatching(/leave out --oauth-device-code/) } });
    expect(reply.error.message).toMatch(/no device_authorization_endpoint/);
  });
});

describe('the client credentials grant (RFC 6749 §4.4) against oidc-provider', () => {
  const machine = (authMethod: 'client_secret_basic' | 'client_secret_post' = 'client_secret_basic', clientSecret = SECRET) => ({
    clientId: CLIENT,
    clientSecret,
    authMethod,
  });

  it('gets a token with the secret from FENBS_MCP_OAUTH_CLIENT_SECRET by HTTP Basic, and calls a tool with it', async () => {
    const setup = await setupWith({ machineClient: machine() });
    const b = bridge(setup.mcpUrl, ['--oauth-client-credentials', '--oauth-client-id', CLIENT], envFor(home(), { FENBS_MCP_OAUTH_CLIENT_SECRET: SECRET }));
    await session(b);
    expect((await callEcho(b, 'call', 'hi')).result.content[0].text).toBe('hi');
    expect(setup.grants).toEqual(['client_credentials']);
    expect(setup.clientAuthentications).toEqual(['basic']);
  });

  it('sends the secret in the form body when the metadata lists only client_secret_post', async () => {
    const setup = await setupWith({ machineClient: machine('client_secret_post') });
    const b = bridge(setup.mcpUrl, ['--oauth-client-credentials', '--oauth-client-id', CLIENT], envFor(home(), { FENBS_MCP_OAUTH_CLIENT_SECRET: SECRET }));
    await session(b);
    expect(setup.clientAuthentications).toEqual(['post']);
    expect(setup.tokenOutcomes).toEqual(['issued']);
  });

  it('reads the secret from --oauth-client-secret-file', async () => {
    const setup = await setupWith({ machineClient: machine() });
    const dir = home();
    writeFileSync(join(dir, 'secret'), `${SECRET}\n`, { mode: 0o600 });
    const b = bridge(setup.mcpUrl, ['--oauth-client-credentials', '--oauth-client-id', CLIENT, '--oauth-client-secret-file', join(dir, 'secret')], envFor(dir));
    await session(b);
    expect(setup.tokenOutcomes).toEqual(['issued']);
  });

  it('gets a new token by the same grant after a 401, with no refresh token and no browser', async () => {
    const setup = await setupWith({ machineClient: machine() });
    const dir = home();
    const b = bridge(setup.mcpUrl, ['--oauth-client-credentials', '--oauth-client-id', CLIENT], envFor(dir, { FENBS_MCP_OAUTH_CLIENT_SECRET: SECRET }));
    await session(b);
    setup.expireAccessTokens();
    expect((await callEcho(b, 'after', 'still here')).result.content[0].text).toBe('still here');
    expect(setup.grants).toEqual(['client_credentials', 'client_credentials']);
    expect(new Set(setup.accepted).size).toBe(2);
  });

  it('gets a new token shortly before the old one expires, so no request meets the expiry', async () => {
    const setup = await setupWith({ machineClient: machine(), accessTokenTtlSeconds: 2 });
    const b = bridge(setup.mcpUrl, ['--oauth-client-credentials', '--oauth-client-id', CLIENT], envFor(home(), { FENBS_MCP_OAUTH_CLIENT_SECRET: SECRET }));
    await session(b);
    // A quarter of a 2 s lifetime before expiry, the next request starts a new token request.
    await expect
      .poll(
        async () => {
          expect((await callEcho(b, `tick-${Date.now()}`, 'tick')).result.content[0].text).toBe('tick');
          return setup.grants.length;
        },
        { timeout: 20_000, interval: 200 },
      )
      .toBeGreaterThan(1);
    expect(setup.grants.every((grant) => grant === 'client_credentials')).toBe(true);
  });

  it('answers a wrong secret with one AUTH_REQUIRED error naming the client authentication, and asks the server no more', async () => {
    const setup = await setupWith({ machineClient: machine() });
    const dir = home();
    const wrong = 'not-the-machine-secret-987654321';
    const b = bridge(setup.mcpUrl, ['--oauth-client-credentials', '--oauth-client-id', CLIENT], envFor(dir, { FENBS_MCP_OAUTH_CLIENT_SECRET: wrong }));
    b.send(initializeRequest('init'));
    const reply = await b.reply('init', 20_000);
    expect(reply.error).toMatchObject({ code: -31015, data: { bridgeCode: 'AUTH_REQUIRED', hint: expect.stringMatching(/FENBS_MCP_OAUTH_CLIENT_SECRET/) } });
    expect(reply.error.message).toMatch(/refused the client authentication of ci-runner \(client_secret_basic\)/);
    b.send(initializeRequest('again'));
    expect((await b.reply('again', 20_000)).error.data.bridgeCode).toBe('AUTH_REQUIRED');
    expect(setup.tokenOutcomes).toEqual(['invalid_client']);
    expect(b.stderr() + b.lines.join('\n')).not.toContain(wrong);
  });
});

describe('doctor with a grant that needs no browser', () => {
  const doctorFor = async (url: string, args: string[], env: Record<string, string>) => {
    const options = toRawOptions(['--url', url, ...args]);
    const config = createConfig({ options, env, readTextFile: (path) => readFileSync(path, 'utf8') });
    return (await runDoctor(config, env)).checks.find((check) => check.name === 'oauth grant');
  };

  it('says ✓ for client credentials only when the authorization server actually issued a token', async () => {
    const setup = await setupWith({ machineClient: { clientId: CLIENT, clientSecret: SECRET, authMethod: 'client_secret_basic' } });
    const dir = home();
    const good = await doctorFor(
      setup.mcpUrl,
      ['--oauth-client-credentials', '--oauth-client-id', CLIENT],
      envFor(dir, { FENBS_MCP_OAUTH_CLIENT_SECRET: SECRET }),
    );
    expect(good).toMatchObject({ ok: true, detail: expect.stringMatching(/client credentials: the authorization server issued a token to ci-runner/) });
    const bad = await doctorFor(
      setup.mcpUrl,
      ['--oauth-client-credentials', '--oauth-client-id', CLIENT],
      envFor(home(), { FENBS_MCP_OAUTH_CLIENT_SECRET: 'wrong-secret-0123456789' }),
    );
    expect(bad).toMatchObject({ ok: false, detail: expect.stringMatching(/refused the client authentication/) });
    expect(setup.tokenOutcomes).toEqual(['issued', 'invalid_client']);
  });

  it('checks that the authorization server offers device authorization, without starting one', async () => {
    const setup = await setupWith({ deviceFlow: { intervalSeconds: 1 } });
    expect(await doctorFor(setup.mcpUrl, ['--oauth-device-code'], envFor(home()))).toMatchObject({
      ok: true,
      detail: expect.stringMatching(/offers device authorization/),
    });
    expect(setup.deviceAuthorizations).toEqual([]);
    const without = await startScriptedAuthorization(() => ({}));
    cleanups.push(() => without.close());
    expect(await doctorFor(without.mcpUrl, ['--oauth-device-code'], envFor(home()))).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/no device_authorization_endpoint/),
    });
  });

  it('fails the device grant check, through the bridge’s address guard, when the device endpoint is the cloud metadata service', async () => {
    const metadata = await startScriptedAuthorization(() => ({ device_authorization_endpoint: 'https://169.254.169.254/device' }));
    cleanups.push(() => metadata.close());
    expect(await doctorFor(metadata.mcpUrl, ['--oauth-device-code'], envFor(home()))).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/device_authorization_endpoint at 169\.254\.169\.254: it is a cloud metadata service's address/),
    });
  });
});
