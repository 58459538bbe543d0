// The OAuth grants without a browser, through the built bin at --log-level trace: no secret or token in any output.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startOAuthSetup, type OAuthSetup, type OAuthSetupOptions } from '../helpers/oauth-servers.js';
import { approveDevice } from '../helpers/oauth-device-driver.js';
import { initializedNotification, initializeRequest, spawnBridge, type BridgeProcess } from '../helpers/spawn-bridge.js';

const SECRET = 'e2e-machine-secret-0123456789abcdef';
const CLIENT = 'ci-runner';

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function world(options: OAuthSetupOptions): Promise<{ setup: OAuthSetup; dir: string }> {
  const setup = await startOAuthSetup(options);
  cleanups.push(() => setup.close());
  const dir = mkdtempSync(join(tmpdir(), 'fenbs-grants-e2e-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 }));
  return { setup, dir };
}

function start(args: string[], env: Record<string, string>): BridgeProcess {
  const bridge = spawnBridge(args, env);
  cleanups.push(() => bridge.kill());
  return bridge;
}

async function callEcho(bridge: BridgeProcess, id: string): Promise<void> {
  bridge.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text: id } } });
  expect((await bridge.reply(id, 30_000)).result.content[0].text).toBe(id);
}

function expectNoSecret(secrets: Iterable<string>, ...outputs: string[]): void {
  const all = outputs.join('\n');
  for (const secret of secrets) expect(all).not.toContain(secret);
}

describe('the OAuth grants without a browser, through the built bin', () => {
  it('signs in with the device grant: the code on stderr only, approved elsewhere, the token used, no secret in any output at trace level', async () => {
    const { setup, dir } = await world({ deviceFlow: { intervalSeconds: 1 } });
    const logFile = join(dir, 'bridge.log');
    const bridge = start(['--url', setup.mcpUrl, '--oauth-device-code', '--log-level', 'trace', '--log-file', logFile], { FENBS_MCP_HOME: join(dir, 'state') });
    bridge.send(initializeRequest('init'));
    const device = await setup.nextDeviceAuthorization();
    await expect.poll(() => bridge.stderr(), { timeout: 20_000 }).toContain(device.userCode);
    expect(bridge.stderr()).toContain(device.verificationUriComplete);
    await approveDevice(device.verificationUriComplete);
    expect((await bridge.reply('init', 30_000)).result.protocolVersion).toBe('2025-06-18');
    bridge.send(initializedNotification);
    await callEcho(bridge, 'after-device');
    // The user code is for the person at the terminal: never on stdout.
    expect(bridge.lines.join('\n')).not.toContain(device.userCode);
    bridge.end();
    await bridge.exited;
    expectNoSecret(setup.secrets, bridge.lines.join('\n'), bridge.stderr(), readFileSync(logFile, 'utf8'));
  });

  it.each([
    ['the environment', false],
    ['--oauth-client-secret-file', true],
  ])('gets client credentials tokens with the secret from %s, a new one after a 401, and no secret in any output at trace level', async (_, fromFile) => {
    const { setup, dir } = await world({ machineClient: { clientId: CLIENT, clientSecret: SECRET, authMethod: 'client_secret_basic' } });
    const logFile = join(dir, 'bridge.log');
    const secretFile = join(dir, 'secret');
    writeFileSync(secretFile, SECRET, { mode: 0o600 });
    const bridge = start(
      [
        '--url',
        setup.mcpUrl,
        '--oauth-client-credentials',
        '--oauth-client-id',
        CLIENT,
        '--log-level',
        'trace',
        '--log-file',
        logFile,
        ...(fromFile ? ['--oauth-client-secret-file', secretFile] : []),
      ],
      { FENBS_MCP_HOME: join(dir, 'state'), ...(fromFile ? {} : { FENBS_MCP_OAUTH_CLIENT_SECRET: SECRET }) },
    );
    bridge.send(initializeRequest('init'));
    expect((await bridge.reply('init', 30_000)).result.protocolVersion).toBe('2025-06-18');
    bridge.send(initializedNotification);
    await callEcho(bridge, 'first');
    setup.expireAccessTokens();
    await callEcho(bridge, 'after-expiry');
    expect(setup.grants).toEqual(['client_credentials', 'client_credentials']);
    bridge.end();
    await bridge.exited;
    expectNoSecret(setup.secrets, bridge.lines.join('\n'), bridge.stderr(), readFileSync(logFile, 'utf8'));
  });

  it('answers a wrong client secret with one AUTH_REQUIRED error, and never shows the secret at trace level', async () => {
    const { setup, dir } = await world({ machineClient: { clientId: CLIENT, clientSecret: SECRET, authMethod: 'client_secret_basic' } });
    const wrong = 'e2e-wrong-secret-9876543210fedcba';
    const logFile = join(dir, 'bridge.log');
    const bridge = start(['--url', setup.mcpUrl, '--oauth-client-credentials', '--oauth-client-id', CLIENT, '--log-level', 'trace', '--log-file', logFile], {
      FENBS_MCP_HOME: join(dir, 'state'),
      FENBS_MCP_OAUTH_CLIENT_SECRET: wrong,
    });
    bridge.send(initializeRequest('init'));
    const reply = await bridge.reply('init', 30_000);
    expect(reply.error.data.bridgeCode).toBe('AUTH_REQUIRED');
    expect(reply.error.message).toMatch(/refused the client authentication/);
    bridge.end();
    await bridge.exited;
    expect(setup.tokenOutcomes).toEqual(['invalid_client']);
    expectNoSecret([...setup.secrets, wrong], bridge.lines.join('\n'), bridge.stderr(), readFileSync(logFile, 'utf8'));
  });
});
