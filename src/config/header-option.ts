// One -H option → a header the run adds to every request: name and value checked, `${VAR}` expanded, credentials and the bridge's own headers refused; throws UsageError.

import { UsageError } from '../core/errors.js';
import { fieldValueProblem, TOKEN_CHARS, UNSENDABLE_HEADERS } from '../core/http-field-grammar.js';
import { expandHeaderValue, isAuthorizationFromReference } from './header-references.js';

/**
 * Headers the bridge sets itself from the message and its state. A user value would contradict
 * the protocol (the Streamable HTTP transport has the client set Accept, Content-Type, the session
 * and version headers, and the 2026-07-28 Mcp-* headers from each message), carry a credential
 * into argv, where process lists and shell history show it (Authorization, Proxy-Authorization,
 * Cookie: the cookie jar fills Cookie), or undo what the bridge relies on: it decodes the
 * encodings it is sent but asks for none (Accept-Encoding), Host names the --url's host (RFC 9110
 * §7.2), and undici keeps the connection alive (Connection: close would open one per message).
 */
const OWNED_HEADERS = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'content-type',
  'accept',
  'accept-encoding',
  'mcp-protocol-version',
  'mcp-method',
  'mcp-name',
  'mcp-session-id',
  'last-event-id',
  'host',
  'connection',
]);

const CREDENTIAL_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie']);

/** A value one -H option took from the environment, with where it came from for messages that never show it. */
export interface HeaderSecret {
  /** The -H header name, as written. */
  readonly header: string;
  /** The variable it came from, without `$`. */
  readonly variable: string;
  readonly value: string;
}

/** One -H option, its `${VAR}` references expanded. */
export interface ParsedHeader {
  name: string;
  value: string;
  /** Values taken from the environment. */
  secrets: readonly string[];
  /** The variables referenced, for naming an Authorization header's source. */
  variables: readonly string[];
}

export function parseHeader(raw: string, tokenEnv: string, env: Readonly<Record<string, string | undefined>>): ParsedHeader {
  const colon = raw.indexOf(':');
  const name = colon === -1 ? '' : raw.slice(0, colon).trim();
  const written = colon === -1 ? '' : raw.slice(colon + 1).trim();
  if (colon === -1 || !TOKEN_CHARS.test(name)) {
    // The text is not repeated: without a colon it may be "Authorization Bearer <token>".
    throw new UsageError(
      colon === -1
        ? '-H expects "Name: value" with a colon after the name'
        : '-H expects "Name: value"; the name may hold only letters, digits and !#$%&\'*+-.^_`|~',
      `fenbs-mcp -H "X-Team: platform"`,
    );
  }
  const lower = name.toLowerCase();
  // Authorization is taken only from the environment: `Authorization: <scheme> ${VAR}`.
  if (CREDENTIAL_HEADERS.has(lower) && !(lower === 'authorization' && isAuthorizationFromReference(written))) {
    // Never echo the value: it is the secret we are refusing to take from argv.
    throw new UsageError(
      `-H ${name} is refused: credentials written on the command line show up in process lists and shell history`,
      lower === 'authorization'
        ? `put the secret in the environment and name it: -H 'Authorization: Bearer \${MY_TOKEN}' with MY_TOKEN set (a desktop config's "env" block), or ${tokenEnv}=<token> fenbs-mcp, --token-file <path>, --token-command <cmd>`
        : `put the token in the environment instead: ${tokenEnv}=<token> fenbs-mcp (or --token-file <path>)`,
    );
  }
  if ((OWNED_HEADERS.has(lower) && lower !== 'authorization') || lower.startsWith('mcp-param-')) {
    throw new UsageError(`-H ${name} is refused: the bridge sets that header itself for every message`);
  }
  const unsendable = UNSENDABLE_HEADERS.get(lower);
  if (unsendable !== undefined) {
    throw new UsageError(`-H ${name} is refused: ${unsendable}, so every request carrying it would fail`);
  }
  const expansion = expandHeaderValue(written, env);
  if (expansion.kind === 'unset') {
    throw new UsageError(
      `-H ${name} refers to \${${expansion.variable}}, but ${expansion.variable} is not set (or is empty) in the environment`,
      `set ${expansion.variable} where the bridge starts (in a desktop config, its "env" block)`,
    );
  }
  if (expansion.kind === 'bad-reference') {
    throw new UsageError(`-H ${name}: ${expansion.reference} is not a variable reference; write \${NAME} with a name of letters, digits and _`);
  }
  const problem = fieldValueProblem(expansion.value);
  if (problem !== undefined) {
    const where = expansion.variables.length === 0 ? 'the value' : `the value (after expanding ${expansion.variables.map((v) => `$${v}`).join(', ')})`;
    throw new UsageError(`-H ${name}: ${where} contains ${problem}, which no HTTP request can carry`);
  }
  return { name, value: expansion.value, secrets: expansion.secrets, variables: expansion.variables };
}
