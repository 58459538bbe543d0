// Makes text a server chose safe to print on a terminal: every control character shown, never obeyed.

/**
 * What a terminal would act on instead of print (CWE-150): the C0 controls (BEL, BS, CR, ESC, which
 * starts every CSI/OSC sequence: window titles, OSC 52 clipboard writes, OSC 8 links, screen clears),
 * DEL, the C1 controls (U+0080–U+009F; U+009B is a one-character CSI and U+009D an OSC on terminals
 * that read 8-bit controls), the Unicode line and paragraph separators, and the bidirectional
 * overrides and isolates that make a terminal show characters in another order than they are
 * (the "Trojan Source" reordering, CVE-2021-42574).
 */
// eslint-disable-next-line no-control-regex -- matching control characters is this module's whole job
const UNSAFE_IN_LINE = /[\x00-\x1F\x7F-\x9F\u2028\u2029\u202A-\u202E\u2066-\u2069]/g;
/** The same, less the line feed and the tab that multi-line text (a tool's result) may keep. */
// eslint-disable-next-line no-control-regex -- as above
const UNSAFE_IN_TEXT = /[\x00-\x08\x0B-\x1F\x7F-\x9F\u2028\u2029\u202A-\u202E\u2066-\u2069]/g;

/** `\x1b` for a character of one byte, `\u202e` above: what a reader of a JSON or JS string would recognise. */
function visible(char: string): string {
  const code = char.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * `text` on one line with every control character made visible (`\x1b[2J` prints as those six
 * characters): for names, titles, summaries, URLs and messages. A line break is shown as `\x0a`,
 * so one server string can never look like two lines of output.
 */
export function toTerminalLine(text: string): string {
  UNSAFE_IN_LINE.lastIndex = 0;
  return UNSAFE_IN_LINE.test(text) ? text.replace(UNSAFE_IN_LINE, visible) : text;
}

/**
 * Multi-line `text` (a tool result, a prompt's messages) with line feeds and tabs kept and every
 * other control character made visible. A CRLF line end is printed as LF: a lone CR, which would
 * return the cursor and let later text hide earlier text, is shown as `\x0d`.
 */
export function toTerminalText(text: string): string {
  const lines = text.includes('\r\n') ? text.replace(/\r\n/g, '\n') : text;
  UNSAFE_IN_TEXT.lastIndex = 0;
  return UNSAFE_IN_TEXT.test(lines) ? lines.replace(UNSAFE_IN_TEXT, visible) : lines;
}

/**
 * Longest server text one line shows on a terminal, in characters before escapes: a shell
 * command's line on stderr, a doctor check's detail or hint. A JSON-RPC error message, a schema's
 * property names or a WWW-Authenticate header come from the server, and may be megabytes.
 */
export const MAX_MESSAGE_CHARS = 4096;

/**
 * `text` cut to at most `maxChars` code points, the last one `…` when anything was cut. Counted by
 * code point, so no surrogate pair is split; the loop stops one past the limit, whatever the length.
 * Cut after masking (a secret cut in half is no longer recognised) and before escaping (an escape
 * is never cut in half, and adds at most a few characters per character kept).
 */
export function shorten(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  let count = 0;
  let kept = 0;
  let end = 0;
  for (const char of text) {
    if (count === maxChars) return `${text.slice(0, kept)}…`;
    count++;
    end += char.length;
    if (count === maxChars - 1) kept = end;
  }
  return text;
}

/**
 * What a terminal may obey inside a JSON line that JSON leaves raw (RFC 8259 §7 escapes only
 * U+0000–U+001F): C1 controls, U+0080–U+009F (CSI U+009B and OSC U+009D are whole escape sequences
 * to a terminal that reads 8-bit controls, ECMA-48 §5.3); the bidirectional marks, embeddings,
 * overrides and isolates (Unicode UAX #9: U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069),
 * which reorder what is shown around them; and the line and paragraph separators U+2028 and
 * U+2029, which some terminals break a line at.
 */
const TERMINAL_UNSAFE_IN_JSON = /[\u0080-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * One JSON text as it may go to a terminal: each of those characters written as its `\uXXXX`
 * escape. Valid JSON stays valid and means the same value: in JSON they can stand only inside a
 * string, where the escape is the same character. Text without them is returned as it is.
 */
export function toTerminalJson(json: string): string {
  TERMINAL_UNSAFE_IN_JSON.lastIndex = 0;
  return TERMINAL_UNSAFE_IN_JSON.test(json) ? json.replace(TERMINAL_UNSAFE_IN_JSON, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`) : json;
}
