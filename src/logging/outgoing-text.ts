// The one gate for text about a server or a secret on its way out (log fields, error data, warnings, doctor's report, the terminal): every secret masked first, then cut to a named length, then, for a terminal, made safe.

import { toTerminalLine } from '../core/terminal-text.js';

/** How much of a server's text an error reply's `data.bodyExcerpt` keeps. */
export const BODY_EXCERPT_CHARS = 500;
/** How much of a server's text a log line, or a message about the bridge's own exchange, keeps. */
export const LOG_EXCERPT_CHARS = 200;
/** How much of an authorization server's words (an error, its description) a message quotes. */
export const SERVER_WORDS_CHARS = 200;

/**
 * How far past the cut masked text is folded: folding only shortens, so a body of mostly
 * whitespace yields a shorter excerpt rather than a fold of megabytes. Everything folded is
 * already masked, so where this window ends cannot matter to a secret.
 */
const FOLD_WINDOW_PER_CHAR = 16;

/** Masks every secret of the run in a text (the run's Redactor is one). */
export type Mask = (text: string) => string;

/**
 * `text` as it may leave the process: every secret masked in the WHOLE text first, so one lying
 * across the cut is masked whole and never shown in part; whitespace runs folded to one space;
 * then cut to `maxChars`, with … when it was longer. The mask is a required argument: there is no
 * way to cut server text here without it.
 */
export function excerptOf(text: string, mask: Mask, maxChars: number = BODY_EXCERPT_CHARS): string {
  const masked = mask(text);
  const window = maxChars * FOLD_WINDOW_PER_CHAR;
  const flat = masked.slice(0, window).replace(/\s+/g, ' ').trim();
  // Cut when more is kept than fits, or when words lie past the folded window.
  if (flat.length <= maxChars && (masked.length <= window || !/\S/.test(masked.slice(window)))) return flat;
  // Never half a surrogate pair at the cut.
  const end = maxChars > 0 && isHighSurrogate(flat.charCodeAt(maxChars - 1)) ? maxChars - 1 : maxChars;
  return `${flat.slice(0, end)}…`;
}

/** One character a secret is written with in any spelling the redactor knows: the b64token set (RFC 6750 §2.1), `%` escapes, JSON `\u` escapes. */
const SECRET_CHAR = /[A-Za-z0-9\-._~+/=%\\]/;

/**
 * Text that was cut before its end (a read limit, a stall, a break) without its last run of the
 * characters a secret is written with. A secret the cut fell inside is no longer recognised by the
 * redactor, and what comes before it may shrink when masked or folded until its front is inside
 * an excerpt; so whoever cuts what it reads passes the text here before it reaches excerptOf.
 */
export function headBeforeCut(text: string): string {
  // A loop from the end, not a regular expression anchored at it: that one would retry from every
  // start of a long run, quadratic in a body a server chose.
  let end = text.length;
  while (end > 0 && SECRET_CHAR.test(text.charAt(end - 1))) end--;
  return text.slice(0, end);
}

function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

/** The same for a terminal: masked, then cut, then every control character shown, never obeyed. */
export function terminalExcerptOf(text: string, mask: Mask, maxChars: number): string {
  return toTerminalLine(excerptOf(text, mask, maxChars));
}
