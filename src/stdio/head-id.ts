// Reads the top-level id from the first bytes of a line too long to read whole, so its refusal goes under that id.

import { isUsableId, type JsonRpcId } from '../core/json-rpc.js';

/** How much of an over-long line is kept to find its id: ids come first or near it in every client's messages. */
export const OVERSIZED_HEAD_BYTES = 64 * 1024;

const WHITESPACE = /\s/;

/**
 * The usable id of the JSON object whose first bytes are `head` (RFC 8259 grammar), when its
 * top-level `id` member stands whole inside them; undefined otherwise (no id yet, a nested one
 * only, one cut at the end, a value that is no usable id). Bounded by the head's length: one pass.
 */
export function idInHead(head: Buffer): JsonRpcId | undefined {
  const text = head.toString('utf8');
  let i = skipSpace(text, 0);
  if (text[i] !== '{') return undefined;
  i++;
  for (;;) {
    i = skipSpace(text, i);
    if (text[i] !== '"') return undefined;
    const keyEnd = endOfString(text, i);
    if (keyEnd === -1) return undefined;
    const key = JSON.parse(text.slice(i, keyEnd)) as string;
    i = skipSpace(text, keyEnd);
    if (text[i] !== ':') return undefined;
    i = skipSpace(text, i + 1);
    const valueEnd = endOfValue(text, i);
    if (valueEnd === -1) return undefined;
    if (key === 'id') {
      let value: unknown;
      try {
        value = JSON.parse(text.slice(i, valueEnd));
      } catch {
        return undefined;
      }
      return isUsableId(value) ? value : undefined;
    }
    i = skipSpace(text, valueEnd);
    if (text[i] !== ',') return undefined;
    i++;
  }
}

function skipSpace(text: string, from: number): number {
  let i = from;
  while (i < text.length && WHITESPACE.test(text[i]!)) i++;
  return i;
}

/** One past the closing quote of the string starting at `from`, or -1 when the head ends first. */
function endOfString(text: string, from: number): number {
  for (let i = from + 1; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === '"') return i + 1;
  }
  return -1;
}

/** One past the value starting at `from` (nested ones counted, strings skipped), or -1 when the head ends first. */
function endOfValue(text: string, from: number): number {
  let depth = 0;
  for (let i = from; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') {
      const end = endOfString(text, i);
      if (end === -1) return -1;
      if (depth === 0) return end;
      i = end - 1;
    } else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      if (depth === 0) return i;
      depth--;
      if (depth === 0) return i + 1;
    } else if (depth === 0 && (c === ',' || WHITESPACE.test(c))) return i;
  }
  return -1;
}
