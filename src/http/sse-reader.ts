// Turns a text/event-stream body into events; knows nothing of JSON-RPC.

import { type BridgeError } from '../core/errors.js';
import { replyTooLarge } from './reply-limit.js';
import { fieldValueProblem } from '../core/http-field-grammar.js';
import { COLON, CR, LF, SPACE } from '../core/bytes.js';
import { JsonScanner, type EarlyRefusal } from '../core/json-scan.js';

export interface SseEvent {
  /** `event:` field; undefined means the default type, "message". */
  type: string | undefined;
  /** The data, decoded; '' when `bytes` holds it instead. */
  data: string;
  id: string | undefined;
  /**
   * For an event whose data exceeds `largeDataBytes`: the data as the server's UTF-8 bytes (its
   * lines joined with LF), not decoded; `data` is then ''.
   */
  bytes?: Buffer;
}

export interface SseReadOptions {
  /** The largest event (its incomplete line and its data so far), in bytes. */
  maxEventChars: number;
  /**
   * The largest first event, in bytes, when it must be smaller (the 2024-11-05 `endpoint` event, a
   * URL); maxEventChars applies from the second event on.
   */
  firstEventMaxChars?: number;
  /** Called with each `retry:` value (milliseconds), 2025-11-25 polling. */
  onRetry?: (ms: number) => void;
  /**
   * Data past this many bytes is handed over as bytes (`SseEvent.bytes`) instead of a decoded
   * string, and a line past it is gathered in one buffer: a caller that scans and forwards the
   * bytes never holds the text beside them. Unset: every event's data is decoded.
   */
  largeDataBytes?: number;
  /** With `largeDataBytes`: a data line past it is scanned as it gathers, and the feed throws this refusal once it settles the event. */
  refuseEarly?: EarlyRefusal | undefined;
}

/**
 * The `largeDataBytes` of the bridge's own streams: below it a string costs little, above it the
 * decoded text would cost as much memory as the bytes again (twice that when not all ASCII).
 */
export const LARGE_EVENT_BYTES = 1024 * 1024;

const NUL = '\0';
const DATA_FIELD = Buffer.from('data:');
/** The UTF-8 byte order mark the stream may start with (WHATWG HTML §9.2.6: one leading U+FEFF is ignored). */
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
/** The longest field name that means anything ("event", "retry") and its colon: a colon further in names no known field. */
const FIELD_HEAD_BYTES = 6;
/**
 * A gathered line first reserves this many times `largeDataBytes`: 64 MiB for the bridge, its
 * default message limit, so a line within that limit is never copied again. Never more than the
 * event limit: a raised --max-message-bytes is not reserved whole for every large line.
 */
const RESERVE_FACTOR = 64;
/** How much larger the reservation becomes when a line fills it. */
const GROWTH_FACTOR = 4;

/**
 * Frames an SSE body into events, per the WHATWG event-stream rules the MCP spec points to
 * (HTML §9.2.6): CR, LF and CRLF line ends, `data:` lines joined with "\n", `:` comments
 * (keep-alives) and unknown fields ignored, an event without data not dispatched, a trailing event
 * without its blank line discarded. Lines are found in the bytes (CR and LF never occur inside a
 * UTF-8 sequence) and each field value is decoded on its own, so a multi-byte character split
 * across chunks stays whole and a large event's data need not be decoded at all. Synchronous: the
 * caller feeds chunks as they arrive and takes the events each one completed.
 */
export class SseFramer {
  readonly #options: SseReadOptions;
  readonly #ready: SseEvent[] = [];
  // The line not yet ended: pieces of the chunks it spans (views, not copies).
  #line: Buffer[] = [];
  #lineBytes = 0;
  // A line past `largeDataBytes` is copied into this one buffer as it arrives instead: each chunk
  // is garbage at once, and the finished line needs no second copy. Only the pages written become
  // resident memory, so it is reserved generously (RESERVE_FACTOR) and rarely has to grow.
  #big: Buffer | undefined;
  // The gathered line's data, scanned as it arrives, when a refusal may settle its event early.
  #lineScanner: JsonScanner | undefined;
  // The chunk ended with CR: an LF starting the next chunk belongs to that line end.
  #skipLf = false;
  // The bytes seen before the stream's first three, while they may still be a BOM.
  #head: Buffer | undefined = Buffer.alloc(0);
  // The event being read: its first data line where it lies (most events have one), views of the others.
  #first: Buffer | undefined;
  #firstStart = 0;
  #firstEnd = 0;
  #more: Buffer[] = [];
  #dataLines = 0;
  #dataBytes = 0;
  #type: string | undefined;
  #id: string | undefined;
  // The limit in force: firstEventMaxChars until the first event is complete, then maxEventChars.
  #maxChars: number;
  // A failure met after events in the same chunk were complete: they are handed over first, and
  // the next feed() or end() throws it.
  #failed: BridgeError | undefined;

  constructor(options: SseReadOptions) {
    this.#options = options;
    this.#maxChars = Math.min(options.maxEventChars, options.firstEventMaxChars ?? options.maxEventChars);
  }

  /** Takes one chunk; returns the events it completed (throws REPLY_TOO_LARGE past the limit). */
  feed(chunk: Uint8Array | string): SseEvent[] {
    if (this.#failed !== undefined) throw this.#failed;
    let bytes =
      typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.#head !== undefined) {
      const head = this.#head.length === 0 ? bytes : Buffer.concat([this.#head, bytes]);
      if (head.length < BOM.length && BOM.subarray(0, head.length).equals(head)) {
        this.#head = head;
        return NO_EVENTS;
      }
      this.#head = undefined;
      bytes = head.subarray(0, BOM.length).equals(BOM) ? head.subarray(BOM.length) : head;
    }
    try {
      this.#frame(bytes);
    } catch (error) {
      if (this.#ready.length === 0) throw error;
      this.#failed = error as BridgeError;
      return this.#take();
    }
    // The data so far counts with its line separators, as the joined text would.
    const buffered = this.#lineBytes + this.#dataBytes + Math.max(0, this.#dataLines - 1);
    if (buffered > this.#maxChars) throw this.#tooLarge();
    return this.#take();
  }

  #tooLarge(): BridgeError {
    return replyTooLarge(this.#maxChars);
  }

  /** Keeps a piece of the line not yet ended. */
  #keep(piece: Buffer): void {
    const total = this.#lineBytes + piece.length;
    const large = this.#options.largeDataBytes;
    if (this.#big === undefined && (large === undefined || total <= large)) {
      this.#line.push(piece);
      this.#lineBytes = total;
      return;
    }
    // Past the limit the event fails anyway; checked here so the buffer never outgrows it.
    const max = this.#maxChars;
    if (total > max) throw this.#tooLarge();
    if (this.#big === undefined) {
      this.#big = Buffer.allocUnsafeSlow(Math.min(max, Math.max(total, large! * RESERVE_FACTOR)));
      let at = 0;
      for (const earlier of this.#line) at += earlier.copy(this.#big, at);
      this.#line = [];
      this.#watchLine(this.#big.subarray(0, at));
    } else if (total > this.#big.length) {
      const grown = Buffer.allocUnsafeSlow(Math.min(max, Math.max(total, this.#big.length * GROWTH_FACTOR)));
      this.#big.copy(grown, 0, 0, this.#lineBytes);
      this.#big = grown;
    }
    piece.copy(this.#big, this.#lineBytes);
    this.#lineBytes = total;
    if (this.#lineScanner !== undefined) this.#scanLine(piece);
  }

  /** A line became large: with a refusal to watch for, a `data:` line's value so far is scanned, and the rest as it comes. */
  #watchLine(line: Buffer): void {
    const refuseEarly = this.#options.refuseEarly;
    if (refuseEarly === undefined || line.length < DATA_FIELD.length || !line.subarray(0, DATA_FIELD.length).equals(DATA_FIELD)) return;
    // One space after the colon is not part of the value (HTML §9.2.6 "Process the field").
    const from = line[DATA_FIELD.length] === SPACE ? DATA_FIELD.length + 1 : DATA_FIELD.length;
    this.#lineScanner = new JsonScanner(refuseEarly.watch);
    this.#scanLine(line.subarray(from));
  }

  #scanLine(piece: Buffer): void {
    this.#lineScanner!.feed(piece);
    const refusal = this.#options.refuseEarly!.refusal(this.#lineScanner!.watched);
    if (refusal !== undefined) throw refusal;
  }

  /** The kept pieces and `last`, the end of the line, as one buffer; nothing is kept after. */
  #takeLine(last: Buffer): Buffer {
    this.#keep(last);
    const line = this.#big === undefined ? Buffer.concat(this.#line, this.#lineBytes) : this.#big.subarray(0, this.#lineBytes);
    this.#big = undefined;
    this.#lineScanner = undefined;
    this.#line = [];
    this.#lineBytes = 0;
    return line;
  }

  /** The body ended: returns the events still complete in what was fed (an unfinished line or event is dropped). */
  end(): SseEvent[] {
    if (this.#failed !== undefined) throw this.#failed;
    return this.#take();
  }

  #frame(chunk: Buffer): void {
    const n = chunk.length;
    let at = 0;
    if (this.#skipLf && n > 0) {
      this.#skipLf = false;
      if (chunk[0] === LF) at = 1;
    }
    // The next CR and LF at or after `at`; -1 when none is left, so each is searched again only
    // once passed (a stream with one kind of line end never searches the whole chunk per line).
    let cr = chunk.indexOf(CR, at);
    let lf = chunk.indexOf(LF, at);
    while (at < n) {
      if (cr !== -1 && cr < at) cr = chunk.indexOf(CR, at);
      if (lf !== -1 && lf < at) lf = chunk.indexOf(LF, at);
      let end: number;
      let next: number;
      if (cr !== -1 && (lf === -1 || cr < lf)) {
        end = cr;
        next = cr + 1;
        if (next === n) this.#skipLf = true;
        else if (chunk[next] === LF) next++;
      } else if (lf !== -1) {
        end = lf;
        next = lf + 1;
      } else {
        this.#keep(chunk.subarray(at));
        return;
      }
      if (this.#lineBytes === 0) this.#onLine(chunk, at, end);
      else {
        const line = this.#takeLine(chunk.subarray(at, end));
        this.#onLine(line, 0, line.length);
      }
      at = next;
    }
  }

  /** One line, `line[start, end)` without its line end (HTML §9.2.6 "process the field"). */
  #onLine(line: Buffer, start: number, end: number): void {
    if (start === end) return this.#dispatch();
    // The field name is found by comparing bytes: no view or string is made for it.
    let colon = start;
    const head = Math.min(end, start + FIELD_HEAD_BYTES);
    while (colon < head && line[colon] !== COLON) colon++;
    if (colon === start) return; // a comment
    // A field name longer than any the rules know (no colon among the first bytes) is ignored.
    if (colon === head && head < end) return;
    let valueStart = colon === end ? end : colon + 1;
    if (valueStart < end && line[valueStart] === SPACE) valueStart++;
    switch (fieldOf(line, start, colon)) {
      case DATA:
        return this.#addData(line, valueStart, end);
      case EVENT:
        this.#type = valueStart === end ? undefined : line.toString('utf8', valueStart, end);
        return;
      case ID: {
        const id = line.toString('utf8', valueStart, end);
        if (!id.includes(NUL)) this.#id = id;
        return;
      }
      case RETRY: {
        const value = line.toString('latin1', valueStart, end);
        if (/^\d+$/.test(value)) this.#options.onRetry?.(Number.parseInt(value, 10));
        return;
      }
      default:
      // Unknown fields are ignored, as the SSE rules say.
    }
  }

  /** A data line's value: the first is kept as where it lies, later ones as views. */
  #addData(line: Buffer, start: number, end: number): void {
    if (this.#dataLines === 0) {
      this.#first = line;
      this.#firstStart = start;
      this.#firstEnd = end;
    } else this.#more.push(line.subarray(start, end));
    this.#dataLines++;
    this.#dataBytes += end - start;
    // A whole event can arrive inside one chunk, never buffered as a partial line: its data is
    // checked here, each line as it is added, with the separators the joined text will have.
    if (this.#dataBytes + this.#dataLines - 1 > this.#maxChars) throw this.#tooLarge();
  }

  /** A blank line: the event read so far is complete, and dispatched if it had a data line. */
  #dispatch(): void {
    if (this.#dataLines > 0) {
      const size = this.#dataBytes + this.#dataLines - 1;
      const large = this.#options.largeDataBytes;
      const first = this.#first!;
      if (large !== undefined && size > large) {
        const bytes =
          this.#dataLines === 1
            ? first.subarray(this.#firstStart, this.#firstEnd)
            : joinLines([first.subarray(this.#firstStart, this.#firstEnd), ...this.#more], size);
        this.#ready.push({ type: this.#type, data: '', id: this.#id, bytes });
      } else {
        let data = first.toString('utf8', this.#firstStart, this.#firstEnd);
        for (const more of this.#more) data += `\n${more.toString('utf8')}`;
        this.#ready.push({ type: this.#type, data, id: this.#id });
      }
      this.#maxChars = this.#options.maxEventChars;
      this.#first = undefined;
      if (this.#more.length > 0) this.#more = [];
      this.#dataLines = 0;
      this.#dataBytes = 0;
    }
    this.#type = undefined;
    this.#id = undefined;
  }

  #take(): SseEvent[] {
    return this.#ready.length === 0 ? NO_EVENTS : this.#ready.splice(0);
  }
}

const NO_EVENTS: SseEvent[] = [];

// The fields the rules know (HTML §9.2.6), told apart by their bytes.
const OTHER = 0;
const DATA = 1;
const EVENT = 2;
const ID = 3;
const RETRY = 4;

/** Which field `line[start, end)` names. */
function fieldOf(line: Buffer, start: number, end: number): number {
  switch (end - start) {
    case 2:
      return line[start] === 0x69 && line[start + 1] === 0x64 ? ID : OTHER;
    case 4:
      return line[start] === 0x64 && line[start + 1] === 0x61 && line[start + 2] === 0x74 && line[start + 3] === 0x61 ? DATA : OTHER;
    case 5:
      if (line[start] === 0x65)
        return line[start + 1] === 0x76 && line[start + 2] === 0x65 && line[start + 3] === 0x6e && line[start + 4] === 0x74 ? EVENT : OTHER;
      return line[start] === 0x72 && line[start + 1] === 0x65 && line[start + 2] === 0x74 && line[start + 3] === 0x72 && line[start + 4] === 0x79
        ? RETRY
        : OTHER;
    default:
      return OTHER;
  }
}

/** The data lines joined with LF, in one buffer of `size` bytes. */
function joinLines(lines: readonly Buffer[], size: number): Buffer {
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const [i, line] of lines.entries()) {
    if (i > 0) out[at++] = LF;
    at += line.copy(out, at);
  }
  return out;
}

/** Yields the events of an SSE body as they complete (SseFramer over an iterable of chunks). */
export async function* readSseEvents(body: AsyncIterable<Uint8Array | string>, options: SseReadOptions): AsyncGenerator<SseEvent> {
  const framer = new SseFramer(options);
  for await (const chunk of body) yield* framer.feed(chunk);
  yield* framer.end();
}

/**
 * The event id to resume from, or undefined when there is none: an id no header can carry (a
 * character outside Latin-1, a control) cannot be sent back as Last-Event-ID, and resuming from the
 * id before it would replay the events after that one, since the newest id is the stream's position
 * (HTML §9.2.6, "last event ID buffer"). Such a stream is not resumable from there.
 */
export function resumableEventId(id: string): string | undefined {
  return fieldValueProblem(id) === undefined ? id : undefined;
}
