// Splits a byte stream into UTF-8 lines on "\n", with a byte limit per line; no parsing.

import { isUtf8 } from 'node:buffer';
import type { Readable } from 'node:stream';

export type LineEvent = { kind: 'line'; text: string } | { kind: 'oversized'; bytes: number } | { kind: 'not-utf8'; bytes: number };

const LF = 0x0a;
const CR = 0x0d;
const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/**
 * Yields each line of `input` (stdio framing, 2026-07-28 transports/stdio: newline-delimited UTF-8).
 *
 * Why not split2: split2 appends every chunk to the pending string and re-splits all of it, so a
 * long line costs O(n²) (a 50 MB line took 17 s here), and its `maxLength` counts characters and
 * drops an over-long line without telling anyone. Here the split is on the byte 0x0A, which never
 * occurs inside a multi-byte UTF-8 sequence, so decoding whole lines is correct across chunk
 * boundaries; the limit is exact bytes; an over-long line is reported once, the moment it crosses
 * the limit, and its remaining bytes are discarded without being buffered.
 *
 * A trailing "\r" is stripped, a BOM at the very start is ignored, blank lines are skipped.
 */
export async function* readLines(input: Readable | AsyncIterable<Buffer | string>, maxLineBytes: number): AsyncGenerator<LineEvent> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let skipping = false; // inside a line already reported as oversized
  let atStart = true;

  for await (const raw of input as AsyncIterable<Buffer | string>) {
    let chunk = typeof raw === 'string' ? Buffer.from(raw, 'utf8') : raw;
    if (atStart) {
      const head = pending.length > 0 ? Buffer.concat([...pending, chunk]) : chunk;
      if (head.length < UTF8_BOM.length && UTF8_BOM.subarray(0, head.length).equals(head)) {
        // Too short to tell yet; keep it until the BOM is complete or disproved.
        pending = [head];
        pendingBytes = head.length;
        continue;
      }
      pending = [];
      pendingBytes = 0;
      atStart = false;
      chunk = head.subarray(0, UTF8_BOM.length).equals(UTF8_BOM) ? head.subarray(UTF8_BOM.length) : head;
    }

    let start = 0;
    while (start <= chunk.length) {
      const newline = chunk.indexOf(LF, start);
      const end = newline === -1 ? chunk.length : newline;
      const piece = chunk.subarray(start, end);
      if (!skipping) {
        if (pendingBytes + piece.length > maxLineBytes) {
          skipping = true;
          yield { kind: 'oversized', bytes: pendingBytes + piece.length };
          pending = [];
          pendingBytes = 0;
        } else if (piece.length > 0) {
          pending.push(piece);
          pendingBytes += piece.length;
        }
      }
      if (newline === -1) break;
      // The pieces are let go of before the line is decoded and handed on: a long line's bytes
      // must not stay alive while its text and its parsed tree exist.
      const pieces = pending;
      const bytes = pendingBytes;
      pending = [];
      pendingBytes = 0;
      const wasSkipping = skipping;
      skipping = false;
      start = newline + 1;
      if (!wasSkipping) {
        const line = takeLine(pieces, bytes);
        if (line !== undefined) yield line;
      }
    }
  }
  if (!skipping && pendingBytes > maxLineBytes) {
    // Only the bytes held back as a possible BOM can get here unchecked.
    yield { kind: 'oversized', bytes: pendingBytes };
  } else if (!skipping && pendingBytes > 0) {
    const pieces = pending;
    pending = [];
    const line = takeLine(pieces, pendingBytes);
    if (line !== undefined) yield line;
  }
}

/**
 * Decodes one line's bytes, without its trailing CR; undefined when it is blank. Bytes that are not
 * UTF-8 are reported, never decoded with U+FFFD in their place: the stdio transport carries UTF-8,
 * and a silently changed message is worse than a refused one.
 */
function takeLine(pieces: Buffer[], totalBytes: number): LineEvent | undefined {
  if (totalBytes === 0) return undefined;
  const bytes = pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces, totalBytes);
  // Only the joined copy is kept: the chunks it came from can be collected while it is decoded.
  pieces.length = 0;
  const length = bytes[bytes.length - 1] === CR ? bytes.length - 1 : bytes.length;
  if (!isUtf8(bytes.subarray(0, length))) return { kind: 'not-utf8', bytes: length };
  const text = bytes.toString('utf8', 0, length);
  return text.trim() === '' ? undefined : { kind: 'line', text };
}
