// Knows the secret values of this run and blanks them out of any text before it leaves the process.

const MASK = '[REDACTED]';
/** What stands for a user name, password, query value or fragment in a URL shown in a message. */
const URL_PART_MASK = '***';

/**
 * Secrets shorter than this are never masked in server messages on stdout: a token like "test"
 * also occurs in ids, tool names and ordinary words, and rewriting those breaks the protocol
 * while hiding nothing (the token is guessable anyway). The CLI warns at start instead.
 */
export const MIN_MASKABLE_SECRET_CHARS = 8;
/** Below this, a secret is not masked even in log text: masking "a" would shred every line. */
const MIN_LOG_SECRET_CHARS = 4;

/** Masks secrets in log text, and in JSON-RPC lines bound for stdout. */
export interface Redactor {
  /** Log text: every occurrence of a secret (as is, JSON-escaped, `\/`-escaped, URL-encoded) is masked. */
  (text: string): string;
  /**
   * One JSON-RPC line bound for stdout: secrets in its string values and keys are masked, the
   * top-level `id` is never touched, and every other byte stays as the server sent it. Returns
   * the very same value (same reference) when there is nothing to mask, so the common case costs
   * a byte search and no decode.
   */
  maskMessageLine(line: string | Buffer): string | Buffer;
  /** How many of the secrets given are too short to be masked on stdout. */
  readonly unmaskable: number;
  /**
   * Adds a secret learned at run time (a token a command printed, an OAuth token): every later
   * log line and stdout line masks it too. Returns false when it is too short to mask on stdout
   * (see MIN_MASKABLE_SECRET_CHARS). Adding a known or empty secret changes nothing.
   */
  add(secret: string): boolean;
}

/** The forms a secret takes in a serialised JSON line. */
function encodedForms(secret: string): string[] {
  const jsonEscaped = JSON.stringify(secret).slice(1, -1);
  // PHP's json_encode (and others) escape "/" as "\/" (RFC 8259 §7 allows it).
  return [secret, jsonEscaped, jsonEscaped.replaceAll('/', '\\/'), encodeURIComponent(secret)];
}

function replaceAll(text: string, needles: readonly string[]): string {
  let out = text;
  for (const needle of needles) {
    if (out.includes(needle)) out = out.split(needle).join(MASK);
  }
  return out;
}

/** Longest first, so a secret that contains another is masked whole. */
function byLength(values: Iterable<string>): string[] {
  return [...new Set(values)].sort((a, b) => b.length - a.length);
}

/** The needles derived from a set of secrets; rebuilt only when a secret is added. */
interface Needles {
  log: string[];
  /** Inside a decoded JSON string a secret appears raw or URL-encoded. */
  decoded: string[];
  line: string[];
  lineBytes: Buffer[];
  unmaskable: number;
}

function needlesFor(given: readonly string[]): Needles {
  const maskable = given.filter((s) => s.length >= MIN_MASKABLE_SECRET_CHARS);
  const line = byLength(maskable.flatMap(encodedForms));
  return {
    log: byLength(given.filter((s) => s.length >= MIN_LOG_SECRET_CHARS).flatMap(encodedForms)),
    decoded: byLength(maskable.flatMap((s) => [s, encodeURIComponent(s)])),
    line,
    lineBytes: line.map((needle) => Buffer.from(needle, 'utf8')),
    unmaskable: given.length - maskable.length,
  };
}

/**
 * Returns a redactor for these secrets (undefined entries are skipped). Log text masks secrets of
 * 4 characters or more; stdout lines only those of `MIN_MASKABLE_SECRET_CHARS` or more. Secrets
 * learned later join through `add`; the masking paths read the current needles on each call, so
 * an added secret costs nothing until it is added.
 */
export function createRedactor(secrets: readonly (string | undefined)[]): Redactor {
  const given = new Set(secrets.filter((secret): secret is string => secret !== undefined && secret !== ''));
  let needles = needlesFor([...given]);

  const mayHold = (line: string | Buffer) =>
    Buffer.isBuffer(line) ? needles.lineBytes.some((needle) => line.includes(needle)) : needles.line.some((needle) => line.includes(needle));

  const maskMessageLine = (line: string | Buffer): string | Buffer => {
    if (needles.line.length === 0 || !mayHold(line)) return line;
    const text = Buffer.isBuffer(line) ? line.toString('utf8') : line;
    try {
      JSON.parse(text);
    } catch {
      return replaceAll(text, needles.line); // not JSON after all: mask the text itself
    }
    const masked = maskJsonStrings(text, needles.decoded);
    return masked === text ? line : masked;
  };

  const add = (secret: string): boolean => {
    if (secret !== '' && !given.has(secret)) {
      given.add(secret);
      needles = needlesFor([...given]);
    }
    return secret.length >= MIN_MASKABLE_SECRET_CHARS;
  };

  const redact = (text: string) => replaceAll(text, needles.log);
  return Object.defineProperties(Object.assign(redact, { maskMessageLine, add }), {
    unmaskable: { get: () => needles.unmaskable, enumerable: true },
  }) as Redactor;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** The index just past the string literal that starts at `start` (a quote); `text` is valid JSON. */
function endOfString(text: string, start: number): number {
  for (let from = start + 1; ; ) {
    const quote = text.indexOf('"', from);
    if (quote === -1) return text.length;
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

/**
 * Masks `needles` inside every string literal (values and keys) of one JSON text, except the
 * value of the top-level `id`: the id pairs a reply with its request (JSON-RPC 2.0 §5) and goes
 * back exactly as sent. Each literal is decoded first, so every escaped form of a secret is found
 * (`\/`, `\uXXXX`). Everything outside a changed literal (numbers, spacing, key order) keeps the
 * server's bytes. `text` must be valid JSON.
 */
function maskJsonStrings(text: string, needles: readonly string[]): string {
  let out = '';
  let copied = 0;
  let depth = 0;
  let idValueAt = -1;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x7b || code === 0x5b) depth++; // { [
    else if (code === 0x7d || code === 0x5d) depth--; // } ]
    else if (code === QUOTE) {
      const end = endOfString(text, i);
      if (i !== idValueAt) {
        const decoded = JSON.parse(text.slice(i, end)) as string;
        const masked = replaceAll(decoded, needles);
        if (masked !== decoded) {
          out += text.slice(copied, i) + JSON.stringify(masked);
          copied = end;
        }
        if (depth === 1 && decoded === 'id') idValueAt = stringValueAfterColon(text, end);
      }
      i = end - 1;
    }
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/** Where the string value after `"key"` starts (its quote), or -1 when the value is not a string. */
function stringValueAfterColon(text: string, from: number): number {
  let i = from;
  while (/\s/.test(text.charAt(i))) i++;
  if (text.charAt(i) !== ':') return -1; // a string value "id", not a key
  i++;
  while (/\s/.test(text.charAt(i))) i++;
  return text.charCodeAt(i) === QUOTE ? i : -1;
}

/**
 * A URL as it may appear in a message: user name, password, every query value and the fragment
 * masked, since each may carry a credential (`?api_key=…`). Works on text that does not parse as
 * a URL too, so a usage error can say which URL it refused without repeating its secrets.
 */
export function maskUrl(input: string | URL): string {
  let url: URL | undefined;
  try {
    url = new URL(String(input));
  } catch {
    url = undefined;
  }
  if (url === undefined) return maskUnparsedUrl(String(input));
  if (url.username !== '') url.username = URL_PART_MASK;
  if (url.password !== '') url.password = URL_PART_MASK;
  if (url.hash !== '') url.hash = URL_PART_MASK;
  if (url.search === '') return url.href;
  const query = url.search
    .slice(1)
    .split('&')
    .map((pair) => {
      const equals = pair.indexOf('=');
      return equals === -1 ? pair : `${pair.slice(0, equals)}=${URL_PART_MASK}`;
    })
    .join('&');
  url.search = '';
  const base = url.href.replace(/#.*$/, '');
  return `${base}?${query}${url.hash}`;
}

function maskUnparsedUrl(text: string): string {
  return (
    text
      // user info: everything between "//" and the last "@" before the path
      .replace(/^([^/?#]*\/\/)([^/?#]*)@/, (_match, scheme: string, userinfo: string) => `${scheme}${userinfo.includes(':') ? `${URL_PART_MASK}:${URL_PART_MASK}` : URL_PART_MASK}@`)
      .replace(/#.*$/, `#${URL_PART_MASK}`)
      .replace(/\?(.*)$/, (_match, query: string) => `?${query.split('&').map((pair) => (pair.includes('=') ? `${pair.slice(0, pair.indexOf('='))}=${URL_PART_MASK}` : pair)).join('&')}`)
  );
}
