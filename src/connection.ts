// How every command reaches the server: the run's one dispatcher, its credential and the endpoint, made from the config in one place.

import type { BridgeConfig } from './config/config.js';
import type { Credential } from './core/credential.js';
import { createCredential, createOAuthCredential } from './credentials/create-credential.js';
import { createDispatcher, remoteOptionsOf } from './http/dispatcher.js';
import { Endpoint } from './http/endpoint.js';
import type { Dispatcher } from './http/undici-parts.js';
import type { Logger } from './logging/logger.js';
import type { Redactor } from './logging/redactor.js';

export interface ReachOptions {
  env: Readonly<Record<string, string | undefined>>;
  logger: Logger;
  redact: Redactor;
  /** Where warnings about the user's own settings go (a credential set but not used); `logger.warn` otherwise. */
  warn?: ((message: string) => void) | undefined;
  /** Where text for the person at the terminal goes (the OAuth sign-in URL); nowhere when absent. */
  writeStderr?: ((text: string) => void) | undefined;
  /** Injected for tests; made from the config otherwise (and closed with the reach). */
  dispatcher?: Dispatcher | undefined;
  /** The credential to send; made from the config otherwise (and closed with the reach). */
  credential?: Credential | undefined;
  /** `login` and `logout`: the OAuth credential of this server, whatever else the config names. */
  oauth?: boolean;
}

/** The dispatcher, credential and endpoint every request of a run goes through. */
export interface Reach {
  readonly dispatcher: Dispatcher;
  readonly credential: Credential;
  readonly endpoint: Endpoint;
  /** Closes what the reach made itself (a credential, the dispatcher), not what it was given. */
  close(): Promise<void>;
}

/** The run's one keep-alive dispatcher: direct or through the proxy, with the CAs and client certificate the config names. */
export function createRunDispatcher(config: BridgeConfig, env: Readonly<Record<string, string | undefined>>): Dispatcher {
  return createDispatcher(remoteOptionsOf(config, env));
}

/**
 * Builds the dispatcher, then the credential (a token command runs once here, so requests go with
 * its token), then the endpoint. The bridge, the shell commands, doctor and login all start here,
 * so a credential, a proxy or a CA store is judged by one rule everywhere.
 */
export async function reachServer(config: BridgeConfig, options: ReachOptions): Promise<Reach> {
  const dispatcher = options.dispatcher ?? createRunDispatcher(config, options.env);
  const deps = {
    env: options.env,
    logger: options.logger,
    redact: options.redact,
    dispatcher,
    ...(options.warn === undefined ? {} : { warn: options.warn }),
    ...(options.writeStderr === undefined ? {} : { writeStderr: options.writeStderr }),
  };
  const credential = options.credential ?? (options.oauth === true ? await createOAuthCredential(config, deps) : await createCredential(config, deps));
  const endpoint = new Endpoint(config, dispatcher, options.env, credential, { logger: options.logger, redact: options.redact });
  return {
    dispatcher,
    credential,
    endpoint,
    async close() {
      if (options.credential === undefined) await credential.close?.();
      // Destroyed, not closed: closing waits for every open exchange (a listen stream never ends),
      // and nothing of the run may wait on the server once it is over.
      if (options.dispatcher === undefined) void dispatcher.destroy().catch(() => undefined);
    },
  };
}
