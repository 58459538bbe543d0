// createCredential: the one place that turns the configured credential into the Credential a run sends.

import type { BridgeConfig } from '../config/config.js';
import { unusedCredentialWarnings } from '../config/credential-spec.js';
import type { Credential } from '../core/credential.js';
import type { Logger } from '../logging/logger.js';
import { registerSecret, type Redactor } from '../logging/redactor.js';
import type { Dispatcher } from '../http/undici-parts.js';
import type { OAuthCredential } from './oauth/oauth-credential.js';
import type { AddressGuard } from './oauth/address-guard.js';
import { createDispatcher, remoteOptionsOf } from '../http/dispatcher.js';

export interface CredentialDeps {
  env: Readonly<Record<string, string | undefined>>;
  logger: Logger;
  /**
   * The run's redactor. A credential that learns a secret at run time (a token a command printed,
   * an OAuth access or refresh token, a code, a verifier) registers it with `redact.add(secret)`
   * before the secret is first used, so no log line, stdout line or doctor report shows it.
   */
  redact: Redactor;
  /** The run's HTTP dispatcher, for OAuth discovery and token requests; without it no OAuth. */
  dispatcher?: Dispatcher;
  /** Where text for the person at the terminal goes (the OAuth sign-in URL); nowhere when absent. */
  writeStderr?: (text: string) => void;
  /** Where a warning for the person goes (a credential set but not used); `logger.warn` when absent. */
  warn?: (message: string) => void;
  /** For tests: a shorter --token-command deadline. */
  tokenCommandTimeoutMs?: number;
}

/** A fixed Authorization value (env token, --token-file, -H Authorization from the environment). */
export function staticCredential(source: string, authorization: string): Credential {
  return {
    source,
    authorization: () => authorization,
    // The same value again would be refused again: the refusal stands.
    renew: () => Promise.resolve(false),
  };
}

/** No credential: requests go without Authorization, and a 401 stays a 401. */
export function noCredential(): Credential {
  return { source: 'none', authorization: () => undefined, renew: () => Promise.resolve(false) };
}

/**
 * The credential a config names when it needs nothing started: static or none. A token command
 * must be run first, so it comes from createCredential only.
 */
export function fixedCredential(config: BridgeConfig): Credential {
  const spec = config.credential;
  if (spec.kind === 'command') throw new TypeError('a --token-command credential is made by createCredential');
  return spec.kind === 'static' ? staticCredential(spec.source, spec.authorization) : noCredential();
}

/** The secrets a config holds at start, each once, with where it came from for a warning that must not show it. */
function startSecrets(config: BridgeConfig): Map<string, string> {
  const secrets = new Map<string, string>();
  const spec = config.credential;
  if (spec.kind === 'static') secrets.set(spec.authorization.slice(spec.authorization.lastIndexOf(' ') + 1), `the credential from ${spec.source}`);
  for (const { header, variable, value } of config.headerSecrets) if (!secrets.has(value)) secrets.set(value, `the -H ${header} value from $${variable}`);
  return secrets;
}

/**
 * The credential for this run, in the order the config chose: env token, --token-file,
 * --token-command, -H Authorization from the environment; else none. Runs --token-command once
 * before resolving. Sources set but not used are named in a warning.
 */
export async function createCredential(config: BridgeConfig, deps: CredentialDeps): Promise<Credential> {
  const spec = config.credential;
  for (const warning of unusedCredentialWarnings(spec)) (deps.warn ?? ((message: string) => deps.logger.warn(message)))(warning);
  // Every secret known at start, registered (and warned about when too short) in one place; a
  // value that is both the credential and a -H secret (-H Authorization) is named once.
  for (const [secret, source] of startSecrets(config)) registerSecret(deps.redact, deps.logger, secret, source);
  switch (spec.kind) {
    case 'static':
      return staticCredential(spec.source, spec.authorization);
    case 'command': {
      // Loaded here: only a --token-command run needs child_process and its start-up cost.
      const { TokenCommandCredential } = await import('./token-command.js');
      return TokenCommandCredential.start(spec.command, {
        env: deps.env,
        logger: deps.logger,
        redact: deps.redact,
        ...(deps.tokenCommandTimeoutMs === undefined ? {} : { timeoutMs: deps.tokenCommandTimeoutMs }),
      });
    }
    case 'none':
      // OAuth sign-in: when no credential is set, the server's 401 with `WWW-Authenticate: Bearer`
      // starts it (authorization §Error Handling, §Protected Resource Metadata Discovery); a cached
      // token is sent from the start. Without a dispatcher there is no OAuth.
      return deps.dispatcher === undefined ? noCredential() : createOAuthCredential(config, { ...deps, dispatcher: deps.dispatcher });
  }
}

/**
 * The OAuth credential of the configured server: what a run without a credential sends, and what
 * `login` and `logout` act on. Every token it learns is registered with deps.redact.add.
 */
export async function createOAuthCredential(config: BridgeConfig, deps: CredentialDeps & { dispatcher: Dispatcher }): Promise<OAuthCredential> {
  // Loaded here, not at the top: a run with a token never needs the OAuth client, and its code
  // (oauth4webapi, the callback server) would otherwise be read and compiled at every start.
  const { OAuthCredential } = await import('./oauth/oauth-credential.js');
  const { guard, dispatcher } = await guardedOAuthDispatcher(config, deps.env);
  return new OAuthCredential({
    url: config.url,
    allowHttp: config.allowHttp,
    settings: config.oauth,
    logger: deps.logger,
    env: deps.env,
    registerSecret: (secret) => void deps.redact.add(secret),
    mask: deps.redact,
    dispatcher,
    addressGuard: guard,
    closeDispatcher: true,
    writeStderr: deps.writeStderr ?? (() => undefined),
  });
}

/**
 * The dispatcher OAuth requests go through: the run's settings (proxy, CA store, client
 * certificate, timeouts), with every name resolved through the address guard at connect time, so
 * an authorization server can point the bridge at no address of the user's own network. A proxy
 * resolves names itself: then an IP address in the URL is still checked, before connecting.
 */
export async function guardedOAuthDispatcher(
  config: BridgeConfig,
  env: Readonly<Record<string, string | undefined>>,
): Promise<{ guard: AddressGuard; dispatcher: Dispatcher }> {
  const { createAddressGuard } = await import('./oauth/address-guard.js');
  const guard = createAddressGuard(config.url, config.oauth.allowPrivateNetwork);
  return { guard, dispatcher: createDispatcher({ ...remoteOptionsOf(config, env), lookup: guard.lookup }) };
}
