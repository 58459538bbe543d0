// What an HTTP request header can carry: field names and values (RFC 9110 §5.1, §5.5), bearer tokens (RFC 6750 §2.1), and the names undici refuses to send.

/**
 * Request headers undici, the bridge's HTTP client, refuses to send (its lib/core/request.js), and
 * why: given with -H, every request would fail, so they are refused at start. Content-Length is
 * refused by undici unless it is digits that equal the body's length; the bridge's bodies vary,
 * so no fixed value can be right. test/integration/core/http-field-grammar.test.ts sends each of
 * undici's well-known header names through undici and checks that the ones it refuses are exactly
 * these.
 */
export const UNSENDABLE_HEADERS: ReadonlyMap<string, string> = new Map([
  ['content-length', 'undici sends the length of each body itself, and refuses any other'],
  ['expect', 'undici does not support Expect (100-continue)'],
  ['keep-alive', 'undici manages the connection itself'],
  ['transfer-encoding', 'undici frames each body itself'],
  ['upgrade', 'undici refuses a protocol upgrade on an ordinary request'],
]);

/** An HTTP token (RFC 9110 §5.6.2): what a field name is made of (§5.1). */
export const TOKEN_CHARS = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * What an HTTP field value may hold (RFC 9110 §5.5: VCHAR, obs-text, SP, HTAB), as one character
 * per byte: undici (like Node's http) refuses anything else, so such a value would fail every
 * request. Characters above U+00FF have no single byte; control characters are never allowed.
 */
const FIELD_VALUE_CHAR = /^[\t\x20-\x7E\x80-\xFF]$/;

/** Why `value` cannot be sent as a header value, or undefined when it can; never repeats the value. */
export function fieldValueProblem(value: string): string | undefined {
  for (const char of value) {
    if (FIELD_VALUE_CHAR.test(char)) continue;
    const code = char.codePointAt(0)!;
    if (code === 0x0a || code === 0x0d) return 'a line break';
    if (code < 0x20 || code === 0x7f) return 'a control character';
    return 'a character outside Latin-1 (HTTP header values are bytes; send such text encoded)';
  }
  return undefined;
}

/**
 * Why `token` cannot be sent as `Authorization: Bearer <token>`, or undefined when it can; never
 * repeats the token. Empty, surrounded by whitespace or holding a space, it would change the
 * header's meaning (RFC 6750 §2.1's b64token holds no space); otherwise the field-value rule.
 * Every token is checked here the moment it is learnt (environment, file, command, token
 * endpoint), so a token that no header can carry is refused, never cached and sent.
 */
export function tokenProblem(token: string): string | undefined {
  if (token === '') return 'nothing (it is empty)';
  if (/[ \t]/.test(token)) return 'a space or a tab';
  return fieldValueProblem(token);
}

/**
 * What to do about a token given with its scheme in front (`Bearer abc`), which tokenProblem
 * refuses for its space; undefined for any other token.
 */
export function bearerPrefixFix(token: string): string | undefined {
  return /^bearer[ \t]/i.test(token) ? 'give the token alone, without "Bearer " in front: the bridge sends "Authorization: Bearer <token>" itself' : undefined;
}
