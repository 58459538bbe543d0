// Encodes Mcp-Name and Mcp-Param-* header values with the SEP-2243 Base64 sentinel.

/** Marks a Base64-encoded value; case-sensitive, lowercase (2026-07-28 Streamable HTTP §Value Encoding). */
const SENTINEL_PREFIX = '=?base64?';
const SENTINEL_SUFFIX = '?=';

/**
 * Visible ASCII (0x21-0x7E) words separated by single spaces: no leading, trailing or doubled
 * whitespace, no TAB, no control characters, nothing outside ASCII. The empty string does not
 * match. This is stricter than RFC 9110's field-value (which allows HTAB and runs of spaces) on
 * purpose: the spec says control characters force Base64, and any value we are unsure of is
 * sent encoded, which a conforming server decodes before comparing.
 */
const SAFE_PLAIN_VALUE = /^[\x21-\x7E]+(?: [\x21-\x7E]+)*$/;

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

function looksLikeSentinel(value: string): boolean {
  return value.startsWith(SENTINEL_PREFIX) && value.endsWith(SENTINEL_SUFFIX);
}

/**
 * Returns `value` unchanged when it is a safe plain header value, else
 * `=?base64?{Base64 of the UTF-8 bytes}?=` (standard alphabet, padded).
 *
 * Also encoded (2026-07-28 Streamable HTTP §Value Encoding):
 * - a plain value that looks like the sentinel, "to avoid ambiguity";
 * - the empty string, as the official TypeScript SDK v2 does (`=?base64??=`). undici would
 *   send an empty field, but intermediaries may drop empty fields and a dropped `Mcp-Param-*`
 *   header for a present argument is a `-32020`; the encoded form always survives and servers
 *   decode it to "".
 *
 * Lone surrogates do not throw: they become U+FFFD in the UTF-8 bytes.
 */
export function encodeHeaderValue(value: string): string {
  if (SAFE_PLAIN_VALUE.test(value) && !looksLikeSentinel(value)) return value;
  return `${SENTINEL_PREFIX}${Buffer.from(value, 'utf8').toString('base64')}${SENTINEL_SUFFIX}`;
}

/**
 * The inverse of `encodeHeaderValue`: decodes a sentinel-wrapped value, returns any other value
 * unchanged. Throws a TypeError when the payload is not canonical Base64 of valid UTF-8 (a
 * server MUST reject such a header).
 */
export function decodeHeaderValue(value: string): string {
  if (value.length < SENTINEL_PREFIX.length + SENTINEL_SUFFIX.length || !looksLikeSentinel(value)) return value;
  const payload = value.slice(SENTINEL_PREFIX.length, value.length - SENTINEL_SUFFIX.length);
  const bytes = Buffer.from(payload, 'base64');
  if (bytes.toString('base64') !== payload) {
    throw new TypeError(`header value ${JSON.stringify(value)} does not carry canonical Base64`);
  }
  try {
    return STRICT_UTF8.decode(bytes);
  } catch (cause) {
    throw new TypeError(`header value ${JSON.stringify(value)} does not carry valid UTF-8`, { cause });
  }
}

/**
 * The raw (unencoded) source of the `Mcp-Name` header: `params.name` for `tools/call` and
 * `prompts/get`, `params.uri` for `resources/read`, when it is a string
 * (2026-07-28 Streamable HTTP §Standard Request Headers). Undefined for every other method.
 */
export function mcpNameFor(method: string, params: unknown): string | undefined {
  const key = method === 'resources/read' ? 'uri' : method === 'tools/call' || method === 'prompts/get' ? 'name' : undefined;
  if (key === undefined || typeof params !== 'object' || params === null) return undefined;
  const value: unknown = (params as Record<string, unknown>)[key];
  return typeof value === 'string' ? value : undefined;
}
