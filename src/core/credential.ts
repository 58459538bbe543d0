// The credential a run sends: what every HTTP request carries, and how it is renewed after a 401.

import type { BridgeError } from './errors.js';

/** What the server said when it refused the credential (authorization §Error Handling). */
export interface CredentialChallenge {
  readonly status: 401 | 403;
  /** The raw `WWW-Authenticate` header, when the server sent one. */
  readonly wwwAuthenticate: string | undefined;
  /** The `Authorization` value the refused request carried (undefined when it had none). */
  readonly sent: string | undefined;
}

/**
 * One source of the `Authorization` header for the whole run: a static token, a token file, a
 * token command, a header expanded from the environment, OAuth, or none.
 */
export interface Credential {
  /** Where the credential comes from, for messages and doctor: `env FENBS_TOKEN`, `--token-command`, `OAuth`… */
  readonly source: string;
  /**
   * The `Authorization` header value to send now (`Bearer …`), or undefined to send none.
   * Synchronous and cheap: it is read for every request.
   */
  authorization(): string | undefined;
  /**
   * Called after the server refused `challenge.sent`. Resolves true when a different credential is
   * now in place and the request should be sent once more (a 401 means it was not processed);
   * false when nothing changed and the refusal stands. Rejects with a BridgeError (for example
   * `AUTH_REQUIRED`) when renewal itself failed. Concurrent calls share one renewal; a call whose
   * `sent` is no longer current resolves true at once.
   */
  renew(challenge: CredentialChallenge, signal: AbortSignal): Promise<boolean>;
  /**
   * Called when the server refused the credential a renew() had just put in place (the request's
   * second refusal): the error the request gets instead of the plain refusal, or undefined for that.
   */
  refusedAfterRenewal?(challenge: CredentialChallenge): BridgeError | undefined;
  /** Releases what the credential holds (a callback server, a lock). Idempotent. */
  close?(): Promise<void>;
}
