// Doctor's line about OAuth: whether a cached token for this server is still valid.

import type { BridgeConfig } from '../config/config.js';
import type { Credential } from '../core/credential.js';
import { staticCredential } from '../credentials/create-credential.js';
import { cachedState, createTokenStore } from '../credentials/oauth/oauth-credential.js';

/** Undefined when a token is configured (OAuth is then not used) or nothing is cached for this server. */
export function oauthCacheCheck(
  config: BridgeConfig,
  env: Readonly<Record<string, string | undefined>>,
  now: number = Date.now(),
): { name: string; ok: boolean; detail: string; hint?: string } | undefined {
  if (config.credential.kind !== 'none') return undefined;
  const state = cachedState(createTokenStore(config.url, env), now);
  switch (state.kind) {
    case 'valid':
      return {
        name: 'oauth',
        ok: true,
        detail: `a cached OAuth token from ${state.issuer} is valid${state.expiresAt === undefined ? '' : ` until ${new Date(state.expiresAt).toISOString()}`}`,
      };
    case 'refreshable':
      return { name: 'oauth', ok: true, detail: `the cached OAuth token from ${state.issuer} has expired; the bridge refreshes it without a browser` };
    case 'expired':
      return {
        name: 'oauth',
        ok: true,
        detail: `the cached OAuth token from ${state.issuer} has expired and cannot be refreshed`,
        hint: 'the bridge opens a browser to sign in again, or run fenbs-mcp login',
      };
    default:
      return undefined;
  }
}

/**
 * The cached access token as doctor's credential while it is valid, so doctor checks the server
 * with what the bridge would send; undefined otherwise. Doctor never opens a browser or refreshes.
 */
export function cachedOAuthCredential(
  config: BridgeConfig,
  env: Readonly<Record<string, string | undefined>>,
  registerSecret: (secret: string) => void,
  now: number = Date.now(),
): Credential | undefined {
  if (config.credential.kind !== 'none') return undefined;
  const contents = createTokenStore(config.url, env).read();
  const tokens = contents.issuer === undefined ? undefined : contents.issuers[contents.issuer]?.tokens;
  if (tokens === undefined || (tokens.expiresAt !== undefined && tokens.expiresAt <= now)) return undefined;
  registerSecret(tokens.accessToken);
  return staticCredential('OAuth (cached token)', `Bearer ${tokens.accessToken}`);
}
