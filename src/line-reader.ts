// Splits a byte stream into UTF-8 lines on "\n", with a byte limit per line; no parsing.

import { isUtf8 } from 'node:buffer';
import type { Readable } from 'node:stream';

export type LineEvent =
  | { kind: 'line'; text: string }
  /** A line over LARGE_LINE_BYTES, neither decoded nor checked: its bytes as they came, without the trailing CR. */
  | { kind: 'large-line'; pieces: Buffer[]; bytes: number }
  | { kind: 'oversized'; bytes: number }
  | { kind: 'not-utf8'; bytes: number };

/**
 * A line longer than this many bytes is handed on as the pieces it arrived in, not decoded: its
 * checker reads the bytes and the same bytes are posted, so a 50 MiB line never also exists as a
 * 50 MiB string (and a joined copy). Shorter lines are decoded here: for them a string is cheaper.
 */
export const LARGE_LINE_BYTES = 1024 * 1024;

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
  // The line being collected lives in `line`, never in this generator's own variables: a suspended
  // generator keeps every value its frame held, so a large line's bytes would stay alive until the
  // next line replaced them.
  const line = new PendingLine();
  let skipping = false; // inside a line already reported as oversized
  let atStart = true;

  for await (const raw of input as AsyncIterable<Buffer | string>) {
    let chunk = typeof raw === 'string' ? Buffer.from(raw, 'utf8') : raw;
    if (atStart) {
      const head = line.bytes > 0 ? Buffer.concat([...line.take(), chunk]) : chunk;
      if (head.length < UTF8_BOM.length && UTF8_BOM.subarray(0, head.length).equals(head)) {
        // Too short to tell yet; keep it until the BOM is complete or disproved.
        if (head.length > 0) line.add(head);
        continue;
      }
      atStart = false;
      chunk = head.subarray(0, UTF8_BOM.length).equals(UTF8_BOM) ? head.subarray(UTF8_BOM.length) : head;
    }

    let start = 0;
    while (start <= chunk.length) {
      const newline = chunk.indexOf(LF, start);
      const end = newline === -1 ? chunk.length : newline;
      if (!skipping) {
        if (line.bytes + end - start > maxLineBytes) {
          skipping = true;
          yield { kind: 'oversized', bytes: line.bytes + end - start };
          line.take();
        } else if (end > start) {
          line.add(chunk.subarray(start, end));
        }
      }
      if (newline === -1) break;
      const wasSkipping = skipping;
      skipping = false;
      start = newline + 1;
      if (!wasSkipping) {
        const event = line.end();
        if (event !== undefined) yield event;
      }
    }
  }
  if (!skipping && line.bytes > maxLineBytes) {
    // Only the bytes held back as a possible BOM can get here unchecked.
    yield { kind: 'oversized', bytes: line.bytes };
  } else if (!skipping && line.bytes > 0) {
    const event = line.end();
    if (event !== undefined) yield event;
  }
}

/** The bytes of the line being read, as the pieces they arrived in. */
class PendingLine {
  #pieces: Buffer[] = [];
  bytes = 0;

  add(piece: Buffer): void {
    this.#pieces.push(piece);
    this.bytes += piece.length;
  }

  /** Hands the pieces over and starts empty. */
  take(): Buffer[] {
    const pieces = this.#pieces;
    this.#pieces = [];
    this.bytes = 0;
    return pieces;
  }

  /** The line ends here: its event (undefined when blank); the pieces are let go of first. */
  end(): LineEvent | undefined {
    const bytes = this.bytes;
    return takeLine(this.take(), bytes);
  }
}

/**
 * Takes a large line's pieces out of its event, which keeps none: the reader's suspended frame may
 * hold the event until the next line is read, and must not hold the line's bytes with it.
 */
export function takePieces(event: Extract<LineEvent, { kind: 'large-line' }>): Buffer[] {
  const pieces = event.pieces;
  event.pieces = [];
  return pieces;
}

/**
 * Decodes one line's bytes, without its trailing CR; undefined when it is blank. Bytes that are not
 * UTF-8 are reported, never decoded with U+FFFD in their place: the stdio transport carries UTF-8,
 * and a silently changed message is worse than a refused one. A large line is handed on undecoded.
 */
function takeLine(pieces: Buffer[], totalBytes: number): LineEvent | undefined {
  if (totalBytes === 0) return undefined;
  if (totalBytes > LARGE_LINE_BYTES) return largeLine(pieces, totalBytes);
  const bytes = pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces, totalBytes);
  // Only the joined copy is kept: the chunks it came from can be collected while it is decoded.
  pieces.length = 0;
  const length = bytes[bytes.length - 1] === CR ? bytes.length - 1 : bytes.length;
  if (!isUtf8(bytes.subarray(0, length))) return { kind: 'not-utf8', bytes: length };
  const text = bytes.toString('utf8', 0, length);
  return text.trim() === '' ? undefined : { kind: 'line', text };
}

/** A large line's pieces without its trailing CR (the last piece holds it: pieces are never empty). */
function largeLine(pieces: Buffer[], totalBytes: number): LineEvent {
  const last = pieces[pieces.length - 1]!;
  if (last[last.length - 1] !== CR) return { kind: 'large-line', pieces, bytes: totalBytes };
  if (last.length === 1) pieces.pop();
  else pieces[pieces.length - 1] = last.subarray(0, last.length - 1);
  return { kind: 'large-line', pieces, bytes: totalBytes - 1 };
}
