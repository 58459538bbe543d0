// Small readings of a body's text: JSON parsed or not, the bytes of one line.

import { CR, LF, SPACE, TAB } from '../core/bytes.js';

export function tryParseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** JSON's insignificant whitespace (RFC 8259 §2): space, tab, LF, CR. */
const WHITESPACE = new Set([SPACE, TAB, LF, CR]);

/** The bytes without JSON whitespace around them (no copy), or undefined if a CR or LF stays inside. */
export function singleLineBytes(bytes: Buffer): Buffer | undefined {
  let start = 0;
  let end = bytes.length;
  while (start < end && WHITESPACE.has(bytes[start]!)) start++;
  while (end > start && WHITESPACE.has(bytes[end - 1]!)) end--;
  const trimmed = bytes.subarray(start, end);
  return trimmed.includes(LF) || trimmed.includes(CR) ? undefined : trimmed;
}
