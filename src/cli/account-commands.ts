// `fenbs-mcp login` and `fenbs-mcp logout`: sign in ahead of time, or forget a server's credentials.

import type { BridgeConfig } from '../config/config.js';
import { isBridgeError, UsageError } from '../core/errors.js';
import type { Logger } from '../logging/logger.js';
import { maskUrl } from '../logging/redactor.js';
import { toTerminalLine } from '../core/terminal-text.js';
import type { OAuthCredential } from '../credentials/oauth/oauth-credential.js';
import { reasonOf } from '../credentials/oauth/discovery.js';
import type { Redactor } from '../logging/redactor.js';
import { reachServer } from '../connection.js';

export interface AccountCommandOptions {
  config: BridgeConfig;
  env: Readonly<Record<string, string | undefined>>;
  logger: Logger;
  /** The run's redactor: every token the sign-in learns is registered with it before first use. */
  redact: Redactor;
  /** The person at the terminal: the sign-in URL and the one-line outcome. */
  writeStderr: (text: string) => void;
  signal: AbortSignal;
}

/**
 * How `login` or `logout` ended: `unreachable` when the server (or the proxy, or TLS with it) could
 * not be reached, the exit code every command gives that (3); `failed` for any other failure.
 */
export type AccountOutcome = 'ok' | 'failed' | 'unreachable';

/** Failures that say the server could not be reached at all, rather than anything about signing in. */
const UNREACHABLE_CODES: ReadonlySet<string> = new Set(['REMOTE_UNREACHABLE', 'REMOTE_TLS', 'PROXY_FAILED', 'REMOTE_CONNECTION_LOST']);

/** Runs `login` or `logout`. */
export async function runAccountCommand(command: 'login' | 'logout', options: AccountCommandOptions): Promise<AccountOutcome> {
  const { config, writeStderr } = options;
  const server = maskUrl(config.url);
  // The way every command reaches the server, with this server's OAuth credential whatever else is set.
  let reach: Awaited<ReturnType<typeof reachServer>>;
  try {
    reach = await reachServer(config, { env: options.env, logger: options.logger, redact: options.redact, writeStderr, oauth: true });
  } catch (error) {
    // The credential refused to start (--token-store keychain with no store): the same one-line report.
    return reportFailure(command, error, writeStderr);
  }
  const credential = reach.credential as OAuthCredential;
  try {
    if (command === 'logout') {
      const removed = await credential.logout(options.signal);
      writeStderr(
        removed ? `fenbs-mcp: signed out of ${server}: its tokens and client registration are forgotten\n` : `fenbs-mcp: nothing stored for ${server}\n`,
      );
      return 'ok';
    }
    const outcome = await credential.login(options.signal);
    const said = { cached: 'already signed in', refreshed: 'signed in (token refreshed)', 'signed-in': 'signed in' }[outcome];
    writeStderr(`fenbs-mcp: ${said} to ${server}; bridges for this server now start without a browser\n`);
    return 'ok';
  } catch (error) {
    return reportFailure(command, error, writeStderr);
  } finally {
    await reach.close();
  }
}

/** Says why `command` failed, with the hint when there is one, and which failure it was. */
function reportFailure(command: 'login' | 'logout', error: unknown, writeStderr: (text: string) => void): AccountOutcome {
  // The reason may quote the authorization server (error_description): shown, never obeyed.
  const reason = reasonOf(error);
  const given =
    isBridgeError(error) && typeof error.context.hint === 'string'
      ? error.context.hint
      : error instanceof UsageError && error.fix !== undefined
        ? `try ${error.fix}`
        : undefined;
  // A hint that starts by repeating the message says only its rest.
  const hint = given?.startsWith(`${reason}: `) === true ? given.slice(reason.length + 2) : given;
  writeStderr(`fenbs-mcp: ${command} failed: ${toTerminalLine(reason)}${hint === undefined ? '' : `\n  hint: ${toTerminalLine(hint)}`}\n`);
  return isBridgeError(error) && UNREACHABLE_CODES.has(error.code) ? 'unreachable' : 'failed';
}
