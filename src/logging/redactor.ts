// Knows the secret values of this run and blanks them out of any text before it leaves the process.

import type { Logger } from 'pino';
import { BACKSLASH, QUOTE } from '../core/bytes.js';

const MASK = '[REDACTED]';
/** What stands for a user name, password, query value or fragment in a URL shown in a message. */
const URL_PART_MASK = '***';

/**
 * Secrets shorter than this are never masked in server messages on stdout: a token like "test"
 * also occurs in ids, tool names and ordinary words, and rewriting those breaks the protocol
 * while hiding nothing (the token is guessable anyway). The CLI warns at start instead.
 */
export const MIN_MASKABLE_SECRET_CHARS = 8;

/**
 * Registers a secret of the run with its redactor and, when it is too short to be masked on
 * stdout, warns, naming where it came from (`source`) and never the value: the one warning for
 * every source, a token from the environment, a file or a command, or a -H value.
 */
export function registerSecret(redact: Redactor, logger: Pick<Logger, 'warn'>, secret: string, source: string): void {
  if (!redact.add(secret)) {
    logger.warn(
      `${source} is shorter than ${MIN_MASKABLE_SECRET_CHARS} characters: too short to tell apart from ordinary text, so it cannot be masked in server replies on stdout`,
    );
  }
}
/** Below this, a secret is not masked even in log text: masking "a" would shred every line. */
const MIN_LOG_SECRET_CHARS = 4;

/** Masks secrets in log text, and in JSON-RPC lines bound for stdout. */
export interface Redactor {
  /** Log text: every occurrence of a secret (as is, JSON-escaped, `\/`-escaped, URL-encoded) is masked. */
  (text: string): string;
  /**
   * One JSON-RPC line bound for stdout: secrets in its string values and keys are masked (an `id`
   * too, unless `ownId` says it is the client's own: a response goes back under exactly the id the
   * client chose, which it knows already), and every other byte stays as the server sent it. Returns
   * the very same value (same reference) when there is nothing to mask, so the common case costs
   * a byte search and no decode.
   */
  maskMessageLine(line: string | Buffer, ownId?: (id: string) => boolean): string | Buffer;
  /** How many of the secrets given are too short to be masked on stdout. */
  readonly unmaskable: number;
  /**
   * Adds a secret learned at run time (a token a command printed, an OAuth token): every later
   * log line and stdout line masks it too. Returns false when it is too short to mask on stdout
   * (see MIN_MASKABLE_SECRET_CHARS). Adding a known or empty secret changes nothing.
   */
  add(secret: string): boolean;
}

/**
 * The spellings a secret takes in text, found by substring search: each of its URL spellings
 * (urlSpellings), as is and as a JSON encoder writes it inside a string literal (RFC 8259 §7),
 * once and twice (a tool result that holds JSON text is JSON inside a JSON string): the shortest
 * escapes, with `/` as is and as `\/` (PHP's json_encode). Other spellings (`\uXXXX` for any
 * character, a mix of `/` and `\/`) are found by decoding the escapes first (see Spellable).
 */
function encodedForms(secret: string): string[] {
  const forms = new Set<string>();
  for (const text of urlSpellings(secret)) {
    const once = jsonEscaped(text);
    const twice = jsonEscaped(once);
    forms
      .add(text)
      .add(once)
      .add(once.replaceAll('/', '\\/'))
      .add(twice)
      .add(jsonEscaped(once.replaceAll('/', '\\/')));
  }
  return [...forms];
}

/**
 * A secret as it is sent and as a server may echo what it received: as is; percent-encoded in a
 * URL (RFC 3986 §2.1, `encodeURIComponent`); in a form body (WHATWG application/x-www-form-urlencoded,
 * which URLSearchParams writes: `~` as `%7E`, a space as `+`); and in the stricter form encoding
 * of a client_secret_basic credential (RFC 6749 §2.3.1, Appendix B: every character but letters
 * and digits escaped); each percent spelling with its hex digits in upper and in lower case, which
 * RFC 3986 §2.1 makes equivalent.
 */
function urlSpellings(secret: string): Set<string> {
  const spellings = new Set([secret, new URLSearchParams({ s: secret }).toString().slice(2)]);
  const uriEncoded = encodedUriComponent(secret);
  if (uriEncoded !== undefined) spellings.add(uriEncoded).add(strictFormEncoded(uriEncoded));
  for (const spelling of [...spellings]) spellings.add(spelling.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase()));
  return spellings;
}

/** `encodeURIComponent(text)`, or undefined for text it cannot encode (a lone surrogate). */
function encodedUriComponent(text: string): string | undefined {
  try {
    return encodeURIComponent(text);
  } catch {
    return undefined;
  }
}

/** RFC 6749 Appendix B on top of encodeURIComponent: the marks it leaves (`-_.!~*'()`) escaped too, a space as `+`. */
function strictFormEncoded(uriEncoded: string): string {
  return uriEncoded.replace(/[-_.!~*'()]|%20/g, (part) => (part === '%20' ? '+' : `%${part.charCodeAt(0).toString(16).toUpperCase()}`));
}

/**
 * The client_secret_basic credential (RFC 6749 §2.3.1): base64 of the form-encoded client id, a
 * colon, and the form-encoded secret, as the Authorization header carries it. A secret of its own:
 * an authorization server that echoes the request's headers shows it whole.
 */
export function basicCredentialOf(clientId: string, clientSecret: string): string {
  const encode = (text: string) => strictFormEncoded(encodedUriComponent(text) ?? text);
  return Buffer.from(`${encode(clientId)}:${encode(clientSecret)}`, 'utf8').toString('base64');
}

/** `text` as it stands between the quotes of a JSON string. */
function jsonEscaped(text: string): string {
  return JSON.stringify(text).slice(1, -1);
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

const SHORT_ESCAPES: Readonly<Record<string, string>> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
const ESCAPE = /\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))/g;

/**
 * `text` with every JSON escape decoded once (`\u0026` → `&`, `\/` → `/`, `\\` → `\`), wherever
 * it stands: for finding a secret only, never for output. Linear: one pass, no backtracking.
 */
function decodeEscapes(text: string): string {
  return text.replace(ESCAPE, (_escape, hex: string | undefined, short: string | undefined) =>
    hex === undefined ? SHORT_ESCAPES[short!]! : String.fromCharCode(Number.parseInt(hex, 16)),
  );
}

/**
 * What a text must hold to spell a secret with escapes: an escape of an ASCII character (a
 * backslash included, for JSON inside a string written with `\u005c`) or of another character one
 * of the secret's forms uses, or a `\/` where a form has a `/`. The escapes most text is full of
 * are of other characters (Python's `\u00e9` for é, `\u4e2d` for 中, where secrets are ASCII), so
 * such text is never decoded.
 */
interface Spellable {
  /** The secrets in each of their URL spellings (urlSpellings), longest first. */
  forms: string[];
  /** An escape of a character of `forms`; undefined when there are no forms. */
  escape: RegExp | undefined;
  slashed: boolean;
}

function spellableFor(secrets: readonly string[]): Spellable {
  const forms = byLength(secrets.flatMap((secret) => [...urlSpellings(secret)]));
  // Any ASCII escape (a class V8 searches fast), and the other units of the forms one by one.
  const units = new Set<number>();
  for (const form of forms) for (let i = 0; i < form.length; i++) if (form.charCodeAt(i) >= 0x80) units.add(form.charCodeAt(i));
  const escape = forms.length === 0 ? undefined : new RegExp(`\\\\u00[0-7]${[...units].map((unit) => `|\\\\u${hexPattern(unit)}`).join('')}`);
  return { forms, escape, slashed: forms.some((form) => form.includes('/')) };
}

/** Whether `text` may spell one of the forms with escapes (see Spellable): a regular-expression search, no decode. */
function maySpell(text: string, spellable: Spellable): boolean {
  return spellable.escape !== undefined && (spellable.escape.test(text) || (spellable.slashed && text.includes('\\/')));
}

/**
 * The forms `text` holds spelled with JSON escapes, once or twice over, in any mix: the escapes
 * are decoded, once and again, and searched. Only text that may spell one (maySpell) is decoded.
 */
function holdsSpelled(text: string, spellable: Spellable): string[] {
  if (!maySpell(text, spellable)) return [];
  const once = decodeEscapes(text);
  const twice = once.includes('\\') ? decodeEscapes(once) : once;
  return spellable.forms.filter((form) => once.includes(form) || twice.includes(form));
}

/** One UTF-16 unit as the four hex digits of `\uXXXX`, in a pattern that takes either case. */
function hexPattern(unit: number): string {
  return [...unit.toString(16).padStart(4, '0')].map((digit) => (digit >= 'a' ? `[${digit}${digit.toUpperCase()}]` : digit)).join('');
}

/** The short escape of each character that has one (RFC 8259 §7), the letter after the backslash. */
const SHORT_ESCAPE_OF: Readonly<Record<string, string>> = Object.fromEntries(Object.entries(SHORT_ESCAPES).map(([letter, char]) => [char, letter]));

/**
 * The ways a JSON encoder may write one UTF-16 unit inside a string literal: `\uXXXX` (hex in
 * either case), its short escape if it has one, and itself where JSON allows it raw. Each way is
 * a sequence of slots, a slot the characters that may stand there.
 */
function waysOf(char: string): string[][][] {
  const unit = char.charCodeAt(0);
  const hex = [...unit.toString(16).padStart(4, '0')].map((digit) => (digit >= 'a' ? [digit, digit.toUpperCase()] : [digit]));
  const ways: string[][][] = [[['\\'], ['u'], ...hex]];
  const short = SHORT_ESCAPE_OF[char];
  if (short !== undefined) ways.push([['\\'], [short]]);
  if (unit >= 0x20 && char !== '"' && char !== '\\') ways.push([[char]]);
  return ways;
}

function escapeRegExp(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&');
}

/** A pattern for every way (waysOf) of writing `char` once. */
function writtenOnce(char: string): string {
  return `(?:${waysOf(char)
    .map((way) => way.map((slot) => (slot.length === 1 ? escapeRegExp(slot[0]!) : `[${slot.join('')}]`)).join(''))
    .join('|')})`;
}

/** A pattern for every way of writing `char` twice over: each character of each way itself written in any of its ways. */
function writtenTwice(char: string): string {
  return `(?:${waysOf(char)
    .map((way) => way.map((slot) => (slot.length === 1 ? writtenOnce(slot[0]!) : `(?:${slot.map(writtenOnce).join('|')})`)).join(''))
    .join('|')})`;
}

/**
 * A pattern for every spelling a JSON encoder may give `text` inside a string literal, once or
 * twice over (JSON text inside a JSON string), in any mix of ways per unit. The ways of one unit
 * part within a few characters, so matching backtracks a bounded distance per unit. Built only
 * for a form that a text was found to hold (holdsSpelled).
 */
function spellingPattern(text: string): string {
  const units = [...Array(text.length).keys()].map((i) => text.charAt(i));
  return `${units.map(writtenOnce).join('')}|${units.map(writtenTwice).join('')}`;
}

/** Masks every JSON spelling (spellingPattern) of `forms` in `text`. */
function maskSpelled(text: string, forms: readonly string[]): string {
  if (forms.length === 0) return text;
  return text.replace(
    new RegExp(
      byLength(forms)
        .map((form) => `(?:${spellingPattern(form)})`)
        .join('|'),
      'g',
    ),
    MASK,
  );
}

/** The needles derived from a set of secrets; rebuilt only when a secret is added. */
interface Needles {
  log: string[];
  /** The secrets of log text, for their spellings with escapes. */
  logSpellable: Spellable;
  /** The stdout secrets: inside a decoded JSON string a secret appears as a form (raw or URL-encoded), or spelled by JSON text the string holds. */
  spellable: Spellable;
  line: string[];
  lineBytes: Buffer[];
  unmaskable: number;
}

function needlesFor(given: readonly string[]): Needles {
  const maskable = given.filter((s) => s.length >= MIN_MASKABLE_SECRET_CHARS);
  const line = byLength(maskable.flatMap(encodedForms));
  return {
    log: byLength(given.filter((s) => s.length >= MIN_LOG_SECRET_CHARS).flatMap(encodedForms)),
    logSpellable: spellableFor(given.filter((s) => s.length >= MIN_LOG_SECRET_CHARS)),
    spellable: spellableFor(maskable),
    line,
    lineBytes: line.map((needle) => Buffer.from(needle, 'utf8')),
    unmaskable: given.length - maskable.length,
  };
}

const BACKSLASH_U = '\\u';
const BACKSLASH_SLASH = '\\/';
const BACKSLASH_U_BYTES = Buffer.from(BACKSLASH_U);
const BACKSLASH_SLASH_BYTES = Buffer.from(BACKSLASH_SLASH);

/**
 * Returns a redactor for these secrets (undefined entries are skipped). Log text masks secrets of
 * 4 characters or more; stdout lines only those of `MIN_MASKABLE_SECRET_CHARS` or more. Secrets
 * learned later join through `add`; the masking paths read the current needles on each call, so
 * an added secret costs nothing until it is added.
 */
export function createRedactor(secrets: readonly (string | undefined)[]): Redactor {
  const given = new Set(secrets.filter((secret): secret is string => secret !== undefined && secret !== ''));
  let needles = needlesFor([...given]);

  /**
   * Whether a stdout line may hold a secret: one of its plain spellings as bytes or text, or,
   * in a line with a `\u` escape (or a `\/` where a secret has a `/`), any spelling once the
   * escapes are decoded. A line with neither costs a few substring searches and no decode.
   */
  const mayHold = (line: string | Buffer): boolean => {
    if (Buffer.isBuffer(line) ? needles.lineBytes.some((needle) => line.includes(needle)) : needles.line.some((needle) => line.includes(needle))) return true;
    const { spellable } = needles;
    if (!Buffer.isBuffer(line)) {
      // A substring search first: most lines hold no escape of either kind.
      if (!line.includes(BACKSLASH_U) && !(spellable.slashed && line.includes(BACKSLASH_SLASH))) return false;
      return holdsSpelled(line, spellable).length > 0;
    }
    const backslash = line.indexOf(BACKSLASH);
    if (backslash === -1 || (!line.includes(BACKSLASH_U_BYTES, backslash) && !(spellable.slashed && line.includes(BACKSLASH_SLASH_BYTES, backslash))))
      return false;
    return holdsSpelled(line.toString('utf8'), spellable).length > 0;
  };

  /**
   * One decoded JSON string with its secrets masked: as is, URL-encoded, and as JSON text it may
   * hold spells them (the plain spellings by substring, any other once escapes are decoded).
   */
  const maskDecoded = (decoded: string): string => {
    const masked = replaceAll(decoded, needles.line);
    return maskSpelled(masked, holdsSpelled(masked, needles.spellable));
  };

  const maskMessageLine = (line: string | Buffer, ownId?: (id: string) => boolean): string | Buffer => {
    if (needles.line.length === 0 || !mayHold(line)) return line;
    const text = Buffer.isBuffer(line) ? line.toString('utf8') : line;
    try {
      JSON.parse(text);
    } catch {
      // Not JSON after all: mask the text itself.
      const masked = replaceAll(text, needles.line);
      return maskSpelled(masked, holdsSpelled(masked, needles.spellable));
    }
    const masked = maskJsonStrings(text, maskDecoded, ownId);
    return masked === text ? line : masked;
  };

  const add = (secret: string): boolean => {
    if (secret !== '' && !given.has(secret)) {
      given.add(secret);
      needles = needlesFor([...given]);
    }
    return secret.length >= MIN_MASKABLE_SECRET_CHARS;
  };

  const maskLogText = (text: string): string => {
    const masked = replaceAll(text, needles.log);
    return maskSpelled(masked, holdsSpelled(masked, needles.logSpellable));
  };
  /**
   * A log line is JSON (pino's) or plain text. In JSON each string literal is masked decoded and
   * written back escaped, so a secret that begins inside an escape (`\u0030…` for a secret that
   * starts with `0`, or the hex digits of one) is masked whole and the line stays valid JSON.
   */
  const redact = (text: string): string => {
    const masked = maskLogText(text);
    if (masked === text || !mayBeJson(text)) return masked;
    try {
      JSON.parse(text);
    } catch {
      return masked;
    }
    const structured = maskJsonStrings(text, maskLogText);
    // A secret whose characters stand in the escapes themselves (`\u0030…` holds `30…`) is not in
    // any decoded value: then the text masked as is, valid JSON or not, is what goes out.
    return maskLogText(structured) === structured ? structured : masked;
  };
  return Object.defineProperties(Object.assign(redact, { maskMessageLine, add }), {
    unmaskable: { get: () => needles.unmaskable, enumerable: true },
  }) as Redactor;
}

/** Whether `text` may be one JSON object or array: the first and last characters that are not white space. */
function mayBeJson(text: string): boolean {
  const first = text.trimStart().charAt(0);
  const last = text.trimEnd().slice(-1);
  return (first === '{' && last === '}') || (first === '[' && last === ']');
}

/** The index just past the string literal that starts at `start` (a quote); `text` is valid JSON. */
function endOfString(text: string, start: number): number {
  for (let from = start + 1; ;) {
    const quote = text.indexOf('"', from);
    if (quote === -1) return text.length;
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

/**
 * Masks secrets inside every string literal (values and keys) of one JSON text, a top-level `id`
 * too, unless `ownId` says it is the client's own: a response pairs with its request by that id
 * (JSON-RPC 2.0 §5), and the client chose it; but an id a server chose (its own request's, a
 * duplicate key) that carries a secret of the run is that server echoing it, and goes out masked.
 * Each literal is decoded first, so every escaped form of a secret is found (`\/`, `\uXXXX`).
 * Everything outside a changed literal (numbers, spacing, key order) keeps the server's bytes.
 * `text` must be valid JSON.
 */
function maskJsonStrings(text: string, mask: (decoded: string) => string, ownId?: (id: string) => boolean): string {
  let out = '';
  let copied = 0;
  let depth = 0;
  let idValueAt = -1;
  // The next backslash at or after the literal being read: found again only once passed, so a
  // line of many short literals and one late backslash is searched once, not once per literal.
  let backslash = -2;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x7b || code === 0x5b)
      depth++; // { [
    else if (code === 0x7d || code === 0x5d)
      depth--; // } ]
    else if (code === QUOTE) {
      const end = endOfString(text, i);
      if (backslash !== -1 && backslash < i) backslash = text.indexOf('\\', i);
      // A literal without a backslash is its own decoding.
      const decoded = backslash === -1 || backslash >= end ? text.slice(i + 1, end - 1) : (JSON.parse(text.slice(i, end)) as string);
      if (i !== idValueAt || ownId?.(decoded) !== true) {
        const masked = mask(decoded);
        if (masked !== decoded) {
          out += text.slice(copied, i) + JSON.stringify(masked);
          copied = end;
        }
      }
      if (ownId !== undefined && depth === 1 && decoded === 'id') idValueAt = stringValueAfterColon(text, end);
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
      .replace(
        /^([^/?#]*\/\/)([^/?#]*)@/,
        (_match, scheme: string, userinfo: string) => `${scheme}${userinfo.includes(':') ? `${URL_PART_MASK}:${URL_PART_MASK}` : URL_PART_MASK}@`,
      )
      .replace(/#.*$/, `#${URL_PART_MASK}`)
      .replace(
        /\?(.*)$/,
        (_match, query: string) =>
          `?${query
            .split('&')
            .map((pair) => (pair.includes('=') ? `${pair.slice(0, pair.indexOf('='))}=${URL_PART_MASK}` : pair))
            .join('&')}`,
      )
  );
}
