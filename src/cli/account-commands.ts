// `fenbs-mcp login` and `fenbs-mcp logout`: sign in ahead of time, or forget a server's credentials.

import type { BridgeConfig } from '../config/config.js';
import { isBridgeError } from '../core/errors.js';
import type { Logger } from '../logging/logger.js';
import { maskUrl } from '../logging/redactor.js';
import { toTerminalLine } from '../core/terminal-text.js';
import { OAuthCredential } from '../credentials/oauth/oauth-credential.js';
import { reasonOf } from '../credentials/oauth/discovery.js';
import { createDispatcher } from '../http/dispatcher.js';

export interface AccountCommandOptions {
  config: BridgeConfig;
  env: Readonly<Record<string, string | undefined>>;
  logger: Logger;
  registerSecret: (secret: string) => void;
  /** The person at the terminal: the sign-in URL and the one-line outcome. */
  writeStderr: (text: string) => void;
  signal: AbortSignal;
}

/** Runs `login` or `logout`; resolves true on success. */
export async function runAccountCommand(command: 'login' | 'logout', options: AccountCommandOptions): Promise<boolean> {
  const { config, writeStderr } = options;
  const server = maskUrl(config.url);
  const dispatcher = createDispatcher({ connectTimeoutMs: config.connectTimeoutMs, caFile: config.caFile, env: options.env });
  const credential = new OAuthCredential({
    url: config.url,
    allowHttp: config.allowHttp,
    settings: config.oauth,
    logger: options.logger,
    env: options.env,
    registerSecret: options.registerSecret,
    dispatcher,
    writeStderr,
  });
  try {
    if (command === 'logout') {
      const removed = await credential.logout(options.signal);
      writeStderr(
        removed ? `fenbs-mcp: signed out of ${server}: its tokens and client registration are forgotten\n` : `fenbs-mcp: nothing stored for ${server}\n`,
      );
      return true;
    }
    const outcome = await credential.login(options.signal);
    const said = { cached: 'already signed in', refreshed: 'signed in (token refreshed)', 'signed-in': 'signed in' }[outcome];
    writeStderr(`fenbs-mcp: ${said} to ${server}; bridges for this server now start without a browser\n`);
    return true;
  } catch (error) {
    // The reason may quote the authorization server (error_description): shown, never obeyed.
    const hint = isBridgeError(error) && typeof error.context.hint === 'string' ? `\n  ${toTerminalLine(error.context.hint)}` : '';
    writeStderr(`fenbs-mcp: ${command} failed: ${toTerminalLine(reasonOf(error))}${hint}\n`);
    return false;
  } finally {
    await credential.close();
    await dispatcher.close().catch(() => undefined);
  }
}
