// Splits a byte stream into UTF-8 lines on "\n", with a byte limit per line; no parsing.

import { isUtf8 } from 'node:buffer';
import { finished, type Readable } from 'node:stream';
import { readableId, type NotUtf8Line } from './large-line.js';
import { CR, LF } from '../core/bytes.js';
import type { JsonRpcId } from '../core/json-rpc.js';
import { idInHead, OVERSIZED_HEAD_BYTES } from './head-id.js';

export type LineEvent =
  | { kind: 'line'; text: string }
  /** A line over LARGE_LINE_BYTES, neither decoded nor checked: its bytes as they came, without the trailing CR. */
  | { kind: 'large-line'; pieces: Buffer[]; bytes: number }
  /** A line over the limit; `id` its top-level id when that stood whole in its first OVERSIZED_HEAD_BYTES. */
  | { kind: 'oversized'; bytes: number; id: JsonRpcId | undefined }
  /** Not UTF-8, so not decoded; `id` is the line's id when it can be read intact from the bytes (large-line.ts). */
  | NotUtf8Line;

/**
 * A line longer than this many bytes is handed on as the pieces it arrived in, not decoded: its
 * checker reads the bytes and the same bytes are posted, so a 50 MiB line never also exists as a
 * 50 MiB string (and a joined copy). Shorter lines are decoded here: for them a string is cheaper.
 */
export const LARGE_LINE_BYTES = 1024 * 1024;

const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/**
 * What a line handler asks of the reader: undefined to go on at once, a promise to read nothing more
 * until it settles (back-pressure: stdin's bytes then wait in the kernel), 'stop' to stop reading.
 */
export type LinePace = undefined | Promise<unknown> | 'stop';

/**
 * Calls `handle` with each line of `input` (stdio framing, 2026-07-28 transports/stdio:
 * newline-delimited UTF-8), in order, one at a time. Resolves once the input ended and every line
 * was handled, or when a handler said 'stop' (the input is then destroyed, as a loop that stops
 * reading lets go of it); rejects when the input fails or closes before its end, or a handler
 * throws or rejects.
 *
 * Driven by 'data' events, not by an async iterator nor by 'readable' and read(): a line reaches its
 * handler in the same callback its bytes arrived in, without the paused stream's next-tick hop and
 * buffer bookkeeping per chunk. A handler's promise pauses the input (its bytes then wait in the
 * stream's buffer, then in the kernel) and the lines still queued wait with it.
 */
export function pumpLines(input: Readable, maxLineBytes: number, handle: (event: LineEvent) => LinePace): Promise<void> {
  const splitter = new LineSplitter(maxLineBytes);
  return new Promise<void>((resolve, reject) => {
    let queue: (LineEvent | undefined)[] = [];
    let next = 0;
    let waiting = false; // a handler's promise holds the queue, and the input is paused
    let draining = false; // drain() runs: a chunk pushed from inside a handler is queued, not drained again
    let ended = false;
    let flushed = false; // the splitter's end-of-input events were taken
    let settled = false;
    const settle = (error?: unknown) => {
      if (settled) return;
      settled = true;
      input.off('data', onData);
      stopWatching();
      queue = [];
      if (error === undefined) return resolve();
      // A reader that gives up lets go of its input (a failed input is already destroyed).
      input.destroy();
      reject(error instanceof Error ? error : new Error('reading the lines failed', { cause: error }));
    };
    // end, error and a close before the end alike (what an async iterator over the stream also watches).
    const stopWatching = finished(input, { writable: false }, (error) => {
      if (error !== undefined && error !== null) return settle(error);
      ended = true;
      if (!waiting) drain();
    });
    const resume = () => {
      waiting = false;
      drain();
      if (!waiting && !settled) input.resume();
    };
    function onData(chunk: Buffer | string): void {
      if (settled) return;
      try {
        const events = splitter.push(chunk);
        // Lines still queued (a chunk pushed from inside a handler) stay ahead of the new ones.
        if (next < queue.length) for (const event of events) queue.push(event);
        else {
          queue = events;
          next = 0;
        }
      } catch (error) {
        return settle(error);
      }
      if (!waiting && !draining) drain();
    }
    /** Hands the queued lines on until one makes the reader wait; at the input's end, the last line too. */
    function drain(): void {
      draining = true;
      try {
        for (;;) {
          while (next < queue.length) {
            const event = queue[next]!;
            // The queue lets go of each event as it is handed on (a large line's bytes with it).
            queue[next++] = undefined;
            const pace = handle(event);
            if (pace === 'stop') {
              input.destroy();
              return settle();
            }
            if (pace !== undefined) {
              waiting = true;
              input.pause();
              pace.then(resume, settle);
              return;
            }
          }
          queue = [];
          next = 0;
          if (!ended) return;
          if (flushed) return settle();
          flushed = true;
          queue = splitter.end();
        }
      } catch (error) {
        settle(error);
      } finally {
        draining = false;
      }
    }
    input.on('data', onData);
  });
}

/**
 * Splits bytes into lines on the byte 0x0A, chunk by chunk.
 *
 * Why not split2: split2 appends every chunk to the pending string and re-splits all of it, so a
 * long line costs O(n²) (a 50 MB line took 17 s here), and its `maxLength` counts characters and
 * drops an over-long line without telling anyone. Here the split is on the byte 0x0A, which never
 * occurs inside a multi-byte UTF-8 sequence, so decoding whole lines is correct across chunk
 * boundaries; the limit is exact bytes; an over-long line is reported once, the moment it crosses
 * the limit, and its remaining bytes are discarded without being buffered.
 *
 * A trailing "\r" is stripped, a BOM at the very start (and at the start of any line) is ignored,
 * blank lines are skipped.
 */
class LineSplitter {
  readonly #maxLineBytes: number;
  readonly #line = new PendingLine();
  #skipping = false; // inside a line already reported as oversized
  #atStart = true;

  constructor(maxLineBytes: number) {
    this.#maxLineBytes = maxLineBytes;
  }

  /** The events the bytes of `raw` complete, in order. */
  push(raw: Buffer | string): LineEvent[] {
    const events: LineEvent[] = [];
    const line = this.#line;
    let chunk = typeof raw === 'string' ? Buffer.from(raw, 'utf8') : raw;
    if (this.#atStart) {
      const head = line.bytes > 0 ? Buffer.concat([...line.take(), chunk]) : chunk;
      if (head.length < UTF8_BOM.length && UTF8_BOM.subarray(0, head.length).equals(head)) {
        // Too short to tell yet; keep it until the BOM is complete or disproved.
        if (head.length > 0) line.add(head);
        return events;
      }
      this.#atStart = false;
      chunk = head.subarray(0, UTF8_BOM.length).equals(UTF8_BOM) ? head.subarray(UTF8_BOM.length) : head;
    }
    let start = 0;
    while (start <= chunk.length) {
      const newline = chunk.indexOf(LF, start);
      const end = newline === -1 ? chunk.length : newline;
      if (!this.#skipping) {
        if (line.bytes + end - start > this.#maxLineBytes) {
          this.#skipping = true;
          const bytes = line.bytes + end - start;
          const head = firstBytes([...line.take(), chunk.subarray(start, end)], OVERSIZED_HEAD_BYTES);
          events.push({ kind: 'oversized', bytes, id: idInHead(head) });
        } else if (end > start) {
          line.add(chunk.subarray(start, end));
        }
      }
      if (newline === -1) break;
      const wasSkipping = this.#skipping;
      this.#skipping = false;
      start = newline + 1;
      if (!wasSkipping) {
        const event = line.end();
        if (event !== undefined) events.push(event);
      }
    }
    return events;
  }

  /** The events of the input's end: a last line without a newline, if any. */
  end(): LineEvent[] {
    const line = this.#line;
    if (!this.#skipping && line.bytes > this.#maxLineBytes) {
      // Only the bytes held back as a possible BOM can get here unchecked.
      return [{ kind: 'oversized', bytes: line.bytes, id: undefined }];
    }
    if (this.#skipping || line.bytes === 0) return [];
    const event = line.end();
    return event === undefined ? [] : [event];
  }
}

/** The first `count` bytes of `pieces` (fewer when they hold fewer), copying no more than that. */
function firstBytes(pieces: readonly Buffer[], count: number): Buffer {
  const kept: Buffer[] = [];
  let size = 0;
  for (const piece of pieces) {
    if (size >= count) break;
    const part = piece.subarray(0, count - size);
    kept.push(part);
    size += part.length;
  }
  return Buffer.concat(kept, size);
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
 * Decodes one line's bytes, without a leading BOM (see dropBom) and its trailing CR; undefined when it is blank. Bytes that are not
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
  // Compared byte by byte: this runs for every line, and a subarray per line is garbage for nothing.
  const start = length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? UTF8_BOM.length : 0;
  const content = bytes.subarray(start, length);
  if (!isUtf8(content)) return { kind: 'not-utf8', bytes: content.length, id: readableId([content]) };
  const text = content.toString('utf8');
  return text.trim() === '' ? undefined : { kind: 'line', text };
}

/**
 * Drops a byte order mark that starts a line (pieces are never empty); returns the bytes dropped.
 * RFC 8259 §8.1 lets a parser ignore one, and a writer that makes a fresh UTF-8 encoder for every
 * message starts each line with it; JSON.parse would refuse the line, and its id with it.
 */
function dropBom(pieces: Buffer[]): number {
  const head =
    pieces[0]!.length >= UTF8_BOM.length
      ? pieces[0]!.subarray(0, UTF8_BOM.length)
      : Buffer.concat(pieces.slice(0, UTF8_BOM.length)).subarray(0, UTF8_BOM.length);
  if (!head.equals(UTF8_BOM)) return 0;
  for (let left = UTF8_BOM.length; left > 0;) {
    const first = pieces[0]!;
    if (first.length > left) {
      pieces[0] = first.subarray(left);
      break;
    }
    pieces.shift();
    left -= first.length;
  }
  return UTF8_BOM.length;
}

/** A large line's pieces without a leading BOM and its trailing CR (the last piece holds it: pieces are never empty). */
function largeLine(pieces: Buffer[], lineBytes: number): LineEvent {
  const totalBytes = lineBytes - dropBom(pieces);
  const last = pieces[pieces.length - 1]!;
  if (last[last.length - 1] !== CR) return { kind: 'large-line', pieces, bytes: totalBytes };
  if (last.length === 1) pieces.pop();
  else pieces[pieces.length - 1] = last.subarray(0, last.length - 1);
  return { kind: 'large-line', pieces, bytes: totalBytes - 1 };
}
