// On a terminal: joins the lines of one JSON value typed or pasted across several lines (pretty-printed) into one message.

import { BACKSLASH, CLOSE_BRACE, CLOSE_BRACKET, OPEN_BRACE, OPEN_BRACKET, QUOTE } from '../core/bytes.js';

/**
 * Lines one value may span before the joiner gives up: pretty-printed messages a person pastes run
 * to hundreds of lines; past this it is no paste but a stream of unclosed brackets.
 */
export const MAX_JOINED_LINES = 10_000;

/** What the joiner hands on: a whole line (joined or as it came), or the one answer to a value that grew past its bounds. */
export type Joined = { kind: 'line'; text: string } | { kind: 'too-long'; lines: number; bytes: number };

/** Where a scan of JSON text stands at the end of a line: bracket depth outside strings, and whether a string is open. */
interface ScanState {
  depth: number;
  inString: boolean;
  escaped: boolean;
}

/**
 * Holds the lines of a JSON object or array that does not close on its first line, until its
 * brackets close, and hands them on as one line (a line break between JSON tokens is whitespace,
 * RFC 8259 §2). Only a line that starts a value (`{` or `[`) and leaves a bracket open starts one;
 * every other line passes as it is, so the one-message-per-line rule holds for whatever is not a
 * paste. A string that runs to the end of a line cannot be JSON (RFC 8259 §7: no raw line break in
 * a string), so the lines so far go on at once, to be answered with their one parse error. Bounded
 * by `maxBytes` (--max-line-bytes: the joined value is still one message) and MAX_JOINED_LINES.
 */
export class PasteJoiner {
  readonly #maxBytes: number;
  readonly #maxLines: number;
  #held: string[] = [];
  #bytes = 0;
  #state: ScanState = { depth: 0, inString: false, escaped: false };
  /** Past a value over the bounds: the rest of that paste, scanned to its end and dropped (see push). */
  #skipping: ScanState | undefined;

  constructor(maxBytes: number, maxLines = MAX_JOINED_LINES) {
    this.#maxBytes = maxBytes;
    this.#maxLines = maxLines;
  }

  /** True while the lines of an unclosed value are held. */
  get holding(): boolean {
    return this.#held.length > 0;
  }

  /** Takes one line; returns what goes on now (nothing while a value is still open). */
  push(text: string): Joined[] {
    if (this.#skipping !== undefined) {
      // The rest of a paste already answered as too long gets no answer of its own, line by line:
      // it ends where its brackets close, or where a line starts a new value at its first column
      // (a pretty-printed value's own lines are indented), which is then read afresh.
      const start = text[0];
      if (start !== '{' && start !== '[') {
        this.#skipping = scan(text, this.#skipping);
        if (this.#skipping.depth > 0 || this.#skipping.inString) return [];
        this.#skipping = undefined;
        return [];
      }
      this.#skipping = undefined;
    }
    if (!this.holding) {
      const start = text.trimStart()[0];
      if (start !== '{' && start !== '[') return [{ kind: 'line', text }];
      const state = scan(text, { depth: 0, inString: false, escaped: false });
      if (state.depth <= 0 || state.inString) return [{ kind: 'line', text }];
      this.#state = state;
      this.#held = [text];
      this.#bytes = Buffer.byteLength(text);
      return [];
    }
    this.#held.push(text);
    this.#bytes += Buffer.byteLength(text) + 1;
    if (this.#held.length > this.#maxLines || this.#bytes > this.#maxBytes) {
      const tooLong: Joined = { kind: 'too-long', lines: this.#held.length, bytes: this.#bytes };
      const state = scan(text, this.#state);
      this.#reset();
      if (state.depth > 0 || state.inString) this.#skipping = state;
      return [tooLong];
    }
    this.#state = scan(text, this.#state);
    if (this.#state.depth > 0 && !this.#state.inString) return [];
    return this.flush();
  }

  /** Hands on what is held, as one line (stdin ended, or a line of another kind came). */
  flush(): Joined[] {
    this.#skipping = undefined;
    if (!this.holding) return [];
    const text = this.#held.join('\n');
    this.#reset();
    return [{ kind: 'line', text }];
  }

  #reset(): void {
    this.#held = [];
    this.#bytes = 0;
    this.#state = { depth: 0, inString: false, escaped: false };
  }
}

/** Scans `text` on from `from`: brackets outside strings, strings with their escapes (RFC 8259 §7). */
function scan(text: string, from: ScanState): ScanState {
  let { depth, inString, escaped } = from;
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i);
    if (inString) {
      if (escaped) escaped = false;
      else if (char === BACKSLASH) escaped = true;
      else if (char === QUOTE) inString = false;
    } else if (char === QUOTE) inString = true;
    else if (char === OPEN_BRACE || char === OPEN_BRACKET) depth++;
    else if (char === CLOSE_BRACE || char === CLOSE_BRACKET) {
      depth--;
      // More closers than openers: not one value; what is held goes on to be answered as it is.
      if (depth <= 0) return { depth, inString: false, escaped: false };
    }
  }
  return { depth, inString, escaped };
}
