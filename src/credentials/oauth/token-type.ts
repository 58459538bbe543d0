// Reads a token response's token_type: Bearer when it is missing, Bearer when it says so, anything else refused.

/** What the bridge makes of a token response's `token_type`. */
export type TokenTypeReading = { kind: 'bearer'; defaulted: boolean } | { kind: 'refused'; type: string };

/**
 * RFC 6749 §5.1 makes `token_type` REQUIRED and case-insensitive, but some authorization servers
 * (openauth among them) leave it out of a response that is otherwise a plain Bearer token. Read
 * leniently: a missing (or empty) token_type is Bearer, the only kind a bearer-header client can
 * use (RFC 6750). Strict where it matters: a type that is named and is not Bearer (DPoP needs a
 * proof key, RFC 9449; MAC a signing key) is refused, since RFC 6749 §7.1 forbids using a token
 * whose type the client does not understand.
 */
export function readTokenType(value: unknown): TokenTypeReading {
  if (value === undefined || value === null || value === '') return { kind: 'bearer', defaulted: true };
  if (typeof value !== 'string') return { kind: 'refused', type: JSON.stringify(value) };
  return value.toLowerCase() === 'bearer' ? { kind: 'bearer', defaulted: false } : { kind: 'refused', type: value };
}

/**
 * A successful token response with `token_type` missing, given it as "Bearer" before oauth4webapi
 * reads it (oauth4webapi enforces RFC 6749 §5.1 and would refuse the whole response). Any other
 * response is handed on with its body unchanged; the body was already bounded by the OAuth fetch.
 */
export async function withBearerDefault(response: Response): Promise<Response> {
  if (response.status !== 200) return response;
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const fields = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
  const reading = fields === undefined ? undefined : readTokenType(fields.token_type);
  const defaulted = reading?.kind === 'bearer' && reading.defaulted;
  const out = defaulted ? JSON.stringify({ ...fields, token_type: 'Bearer' }) : text;
  return new Response(out, { status: response.status, statusText: response.statusText, headers: response.headers });
}
