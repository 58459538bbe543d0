// Expands `${VAR}` in -H values from the bridge's environment, so a desktop config keeps header secrets in its `env` block.

/** A variable name as shells and desktop `env` blocks spell it. */
const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const REFERENCE = /\$\{([^}]*)\}/g;
/**
 * An Authorization value whose credential is wholly a reference: `${VAR}` or `<scheme> ${VAR}`
 * (RFC 9110 §11.4: credentials = auth-scheme [ 1*SP token68 ]). Anything else written around the
 * reference would be a credential typed into argv.
 */
const AUTHORIZATION_FROM_REFERENCE = /^(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]+ +)?\$\{[A-Za-z_][A-Za-z0-9_]*\}$/;

export type Expansion =
  /** `value` is what is sent; `secrets` the values taken from the environment (masked everywhere). */
  | { kind: 'expanded'; value: string; secrets: readonly string[]; variables: readonly string[] }
  /** A referenced variable is unset or empty. */
  | { kind: 'unset'; variable: string }
  /** `${…}` holds something that is not a variable name. */
  | { kind: 'bad-reference'; reference: string };

/**
 * Replaces every `${NAME}` in `value` by the variable's value from `env`. A `$` not followed by
 * `{` stays as written. An empty variable counts as unset: a secret header sent empty is a
 * mistake the server would answer with a 401 far from its cause.
 */
export function expandHeaderValue(value: string, env: Readonly<Record<string, string | undefined>>): Expansion {
  const secrets: string[] = [];
  const variables: string[] = [];
  for (const [reference, name = ''] of value.matchAll(REFERENCE)) {
    if (!VARIABLE_NAME.test(name)) return { kind: 'bad-reference', reference };
    const found = env[name];
    if (found === undefined || found === '') return { kind: 'unset', variable: name };
    secrets.push(found);
    variables.push(name);
  }
  if (variables.length === 0) return { kind: 'expanded', value, secrets, variables };
  return { kind: 'expanded', value: value.replace(REFERENCE, (_reference, name: string) => env[name]!), secrets, variables };
}

/** True when an Authorization value takes its credential from one reference and holds no literal one. */
export function isAuthorizationFromReference(value: string): boolean {
  return AUTHORIZATION_FROM_REFERENCE.test(value);
}

/**
 * The token of an Authorization value under the Bearer scheme (RFC 6750 §2.1: "Bearer" 1*SP
 * b64token; the scheme is case-insensitive, RFC 9110 §11.1), or undefined under any other scheme.
 */
export function bearerTokenOf(authorization: string): string | undefined {
  const bearer = /^bearer(?: +|$)/i.exec(authorization);
  return bearer === null ? undefined : authorization.slice(bearer[0].length);
}
