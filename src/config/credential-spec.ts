// Which credential a run sends (the first source set), the warning for each one it shadows, and the start-up refusal of a token no Authorization header can carry.

import { UsageError } from '../core/errors.js';
import { bearerPrefixFix, tokenProblem } from '../core/http-field-grammar.js';

/**
 * The credential the run uses, without its value in any message: the first one set of env
 * `FENBS_TOKEN` (or --token-env), --token-file, --token-command, and an Authorization -H expanded
 * from the environment; `none` otherwise (where an OAuth sign-in takes over).
 */
export type CredentialSpec =
  /** A fixed `Authorization` value (`Bearer <token>`, or a -H value with its own scheme). */
  | { readonly kind: 'static'; readonly source: string; readonly authorization: string; readonly ignored: readonly string[] }
  /** A shell command whose trimmed stdout is the bearer token; run again after a 401. */
  | { readonly kind: 'command'; readonly source: string; readonly command: string; readonly ignored: readonly string[] }
  | { readonly kind: 'none'; readonly source: string; readonly ignored: readonly string[] };

/**
 * The warnings a credential spec calls for: each source that is set but shadowed by the one used.
 * The one rule the bridge logs, the shell commands print and doctor reports.
 */
export function unusedCredentialWarnings(spec: CredentialSpec): string[] {
  return spec.ignored.map((ignored) => `${ignored} is set but not used: ${spec.source} comes first`);
}

/** A credential that is set, before the ones it shadows are known. */
export type SetCredential = { [Kind in CredentialSpec['kind']]: Omit<Extract<CredentialSpec, { kind: Kind }>, 'ignored'> }['static' | 'command'];

/**
 * Refuses at start a token that `Authorization: Bearer <token>` cannot carry as it is (tokenProblem),
 * naming its source and the problem, never the token: sent, it would fail every request or change
 * the header's meaning.
 */
export function refuseUnsendableToken(token: string, source: string): void {
  const problem = tokenProblem(token);
  if (problem !== undefined)
    throw new UsageError(`the token from ${source} contains ${problem}, so it cannot be sent in an Authorization header`, bearerPrefixFix(token));
}
