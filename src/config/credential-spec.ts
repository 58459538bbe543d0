// Which credential a run sends (the first source set), the warning for each one it shadows, and the start-up refusal of a token no Authorization header can carry.

import { UsageError } from '../core/errors.js';
import { bearerPrefixFix, tokenProblem } from '../core/http-field-grammar.js';
import { bearerTokenOf } from './header-references.js';
import type { ParsedHeader } from './header-option.js';

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
type SetCredential = { [Kind in CredentialSpec['kind']]: Omit<Extract<CredentialSpec, { kind: Kind }>, 'ignored'> }['static' | 'command'];

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

/** The credential sources as given, each already checked on its own. */
export interface CredentialSources {
  /** The variable the token is read from, `FENBS_TOKEN` or --token-env's. */
  readonly tokenEnv: string;
  /** --token-file as given, for the source's name. */
  readonly tokenFile: string | undefined;
  readonly envToken: string | undefined;
  readonly fileToken: string | undefined;
  readonly tokenCommand: string | undefined;
  /** The one -H Authorization, its `${VAR}` expanded. */
  readonly authorizationHeader: Pick<ParsedHeader, 'value' | 'variables'> | undefined;
}

/** The credential a run sends, and the bearer token and its source when the environment or a file gave it. */
export interface ChosenCredential {
  readonly credential: CredentialSpec;
  readonly token: string | undefined;
  readonly tokenSource: string;
}

/**
 * The first credential set, in the order CredentialSpec names; refuses a -H Authorization beside
 * any other source, and a `Bearer ${VAR}` whose token no header can carry.
 */
export function chooseCredential({ tokenEnv, tokenFile, envToken, fileToken, tokenCommand, authorizationHeader }: CredentialSources): ChosenCredential {
  // Which credential, in order; the ones after the first set are named in a warning.
  const envSource = `env ${tokenEnv}`;
  const fileSource = `file ${tokenFile ?? ''}`;
  const found: SetCredential[] = [];
  if (envToken !== undefined) found.push({ kind: 'static', source: envSource, authorization: `Bearer ${envToken}` });
  if (fileToken !== undefined) found.push({ kind: 'static', source: fileSource, authorization: `Bearer ${fileToken}` });
  if (tokenCommand !== undefined) found.push({ kind: 'command', source: '--token-command', command: tokenCommand });
  if (authorizationHeader !== undefined) {
    // Two credentials in one run would leave the user guessing which one the server saw.
    if (found.length > 0)
      throw new UsageError(
        `-H Authorization cannot be combined with ${found.map((c) => c.source).join(' or ')}: a run sends one credential`,
        'keep one of them',
      );
    const variables = authorizationHeader.variables.map((name) => `$${name}`).join('');
    // `Bearer ${VAR}`: the variable's value is the token, under the rule every token meets.
    const bearerToken = bearerTokenOf(authorizationHeader.value);
    if (bearerToken !== undefined) refuseUnsendableToken(bearerToken, `-H Authorization from ${variables}`);
    found.push({ kind: 'static', source: `-H Authorization from ${variables}`, authorization: authorizationHeader.value });
  }
  const [chosen, ...unused] = found;
  const credential: CredentialSpec = chosen === undefined ? { kind: 'none', source: 'none', ignored: [] } : { ...chosen, ignored: unused.map((c) => c.source) };
  const token = chosen?.source === envSource ? envToken : chosen?.source === fileSource ? fileToken : undefined;
  const tokenSource = chosen?.source === fileSource ? fileSource : envSource;
  return { credential, token, tokenSource };
}
