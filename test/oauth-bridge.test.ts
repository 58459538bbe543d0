// OAuth sign-in through the bridge in-process, against oidc-provider and an MCP server that checks its tokens.

import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startOAuthSetup, type OAuthSetup } from './helpers/oauth-servers.js';
import { startInProcessBridge, type InProcessBridge } from './helpers/in-process-bridge.js';
import { initializedNotification, initializeRequest } from './helpers/spawn-bridge.js';

export const BROWSER_SCRIPT = fileURLToPath(new URL('./helpers/oauth-browser.mjs', import.meta.url));

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
  cleanups.push(() => rmSync(home, { recursive: true, force: true }));
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
    invocations: () => (existsSync(browserLog) ? readFileSync(browserLog, 'utf8').split('\n').filter((line) => line !== '') : []),
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
    expect(signInUrl.searchParams.get('scope')).toBe('mcp:read');
    expect(w.setup.grants).toEqual(['authorization_code']);
  });
});
