// Doctor's lines about OAuth: whether a cached token for this server is still valid, and the grant in use.

import type { BridgeConfig } from '../config/config.js';
import type { Credential } from '../core/credential.js';
import { guardedOAuthDispatcher, staticCredential } from '../credentials/create-credential.js';
import { pino } from 'pino';
import { isBridgeError } from '../core/errors.js';
import { toTerminalLine } from '../core/terminal-text.js';
import { discover, NO_CHALLENGE, reasonOf } from '../credentials/oauth/discovery.js';
import { createOAuthHttp } from '../credentials/oauth/http.js';
import { cachedState, chooseSecretsFor, createTokenStore, OAuthCredential } from '../credentials/oauth/oauth-credential.js';
import type { TokenStore } from '../credentials/oauth/token-store.js';
import type { Redactor } from '../logging/redactor.js';

/** The cache of this server as the bridge reads it, its secrets where --token-store puts them (files when the store refuses: doctor reports, never fails). */
function doctorTokenStore(config: BridgeConfig, env: Readonly<Record<string, string | undefined>>): TokenStore {
  let secrets;
  try {
    secrets = chooseSecretsFor(config.url, config.oauth.tokenStore, env).store;
  } catch {
    secrets = undefined;
  }
  return createTokenStore(config.url, env, undefined, undefined, secrets);
}

/** How long doctor's grant check may take (discovery and one token request). */
export const DOCTOR_GRANT_TIMEOUT_MS = 15_000;

/**
 * What the sign-in sends beyond the defaults (--oauth-scope, --oauth-resource / --oauth-no-resource,
 * --oauth-authorize-param, --oauth-client-key), so a user comparing doctor with a provider's recipe
 * sees it; undefined when a token is configured or nothing is set.
 */
export function oauthSettingsCheck(config: BridgeConfig): { name: string; ok: boolean; detail: string } | undefined {
  const { scope, resource, authorizeParams, clientKey } = config.oauth;
  if (config.credential.kind !== 'none') return undefined;
  const said = [
    scope === undefined ? undefined : `scope "${scope}"`,
    resource === false ? 'no resource parameter' : resource === undefined ? undefined : `resource ${resource.href}`,
    ...authorizeParams.map(([name, value]) => `${name}=${value}`),
    clientKey === undefined ? undefined : `private_key_jwt with ${clientKey.file} (${clientKey.algorithm})`,
  ].filter((part) => part !== undefined);
  if (said.length === 0) return undefined;
  return { name: 'oauth', ok: true, detail: toTerminalLine(`the sign-in sends ${said.join(', ')}`) };
}

/** Undefined when a token is configured (OAuth is then not used) or nothing is cached for this server. */
export function oauthCacheCheck(
  config: BridgeConfig,
  env: Readonly<Record<string, string | undefined>>,
  now: number = Date.now(),
): { name: string; ok: boolean; detail: string; hint?: string } | undefined {
  if (config.credential.kind !== 'none') return undefined;
  const state = cachedState(doctorTokenStore(config, env), now);
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
  const contents = doctorTokenStore(config, env).read();
  const tokens = contents.issuer === undefined ? undefined : contents.issuers[contents.issuer]?.tokens;
  if (tokens === undefined || (tokens.expiresAt !== undefined && tokens.expiresAt <= now)) return undefined;
  registerSecret(tokens.accessToken);
  return staticCredential('OAuth (cached token)', `Bearer ${tokens.accessToken}`);
}

/**
 * Doctor's line about the grant a person at no browser uses, checked as far as it can be without
 * that person: the device grant needs the authorization server's device_authorization_endpoint;
 * client credentials get a real token (✓ only if one came). Undefined for the browser's grant or
 * when a token is configured.
 */
export async function oauthGrantCheck(
  config: BridgeConfig,
  env: Readonly<Record<string, string | undefined>>,
  redact: Redactor,
): Promise<{ name: string; ok: boolean; detail: string; hint?: string } | undefined> {
  const grant = config.oauth.grant;
  if (config.credential.kind !== 'none' || grant === 'authorization-code') return undefined;
  // Through the same address guard as the bridge's sign-in: doctor reaches no address it would not.
  const { guard, dispatcher } = await guardedOAuthDispatcher(config, env);
  const signal = AbortSignal.timeout(DOCTOR_GRANT_TIMEOUT_MS);
  try {
    if (grant === 'device-code') {
      const { as } = await discover(createOAuthHttp(dispatcher, config.allowHttp, guard), config.url, NO_CHALLENGE, signal, {
        issuer: config.oauth.issuer,
        grant: config.oauth.grant,
        mask: redact,
      });
      return as.device_authorization_endpoint === undefined
        ? {
            name: 'oauth grant',
            ok: false,
            detail: `device grant: the authorization server ${toTerminalLine(as.issuer)} has no device_authorization_endpoint`,
            hint: 'leave out --oauth-device-code to sign in with a browser, or ask its administrator to enable the device grant',
          }
        : {
            name: 'oauth grant',
            ok: true,
            detail: `device grant: ${toTerminalLine(as.issuer)} offers device authorization (a person approves at the first 401)`,
          };
    }
    const credential = new OAuthCredential({
      url: config.url,
      allowHttp: config.allowHttp,
      settings: config.oauth,
      logger: pino({ level: 'silent' }, { write: () => undefined }),
      env,
      registerSecret: (secret) => void redact.add(secret),
      mask: redact,
      dispatcher,
      addressGuard: guard,
      writeStderr: () => undefined,
    });
    try {
      await credential.login(signal);
    } finally {
      await credential.close();
    }
    return {
      name: 'oauth grant',
      ok: true,
      detail: `client credentials: the authorization server issued a token to ${toTerminalLine(config.oauth.clientId ?? '')}`,
    };
  } catch (error) {
    const hint = isBridgeError(error) && typeof error.context.hint === 'string' ? error.context.hint : undefined;
    return {
      name: 'oauth grant',
      ok: false,
      detail: `${grant === 'device-code' ? 'device grant' : 'client credentials'}: ${toTerminalLine(reasonOf(error))}`,
      ...(hint === undefined ? {} : { hint: toTerminalLine(hint) }),
    };
  } finally {
    await dispatcher.close().catch(() => undefined);
  }
}
