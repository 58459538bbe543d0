// Doctor's line about OAuth: whether a cached token for this server is still valid.

import type { BridgeConfig } from '../config.js';
import { cachedState, createTokenStore } from './oauth-credential.js';

/** Undefined when a token is configured (OAuth is then not used) or nothing is cached for this server. */
export function oauthCacheCheck(config: BridgeConfig, env: Readonly<Record<string, string | undefined>>, now: number = Date.now()): { name: string; ok: boolean; detail: string; hint?: string } | undefined {
  if (config.token !== undefined) return undefined;
  const state = cachedState(createTokenStore(config.url, env), now);
  switch (state.kind) {
    case 'valid':
      return { name: 'oauth', ok: true, detail: `a cached OAuth token from ${state.issuer} is valid${state.expiresAt === undefined ? '' : ` until ${new Date(state.expiresAt).toISOString()}`}` };
    case 'refreshable':
      return { name: 'oauth', ok: true, detail: `the cached OAuth token from ${state.issuer} has expired; the bridge refreshes it without a browser` };
    case 'expired':
      return { name: 'oauth', ok: true, detail: `the cached OAuth token from ${state.issuer} has expired and cannot be refreshed`, hint: 'the bridge opens a browser to sign in again, or run fenbs-mcp login' };
    default:
      return undefined;
  }
}
