// Turns a text/event-stream body into events; knows nothing of JSON-RPC.

import { createParser, type EventSourceMessage, type EventSourceParser } from 'eventsource-parser';
import { BridgeError } from './errors.js';

export interface SseEvent {
  /** `event:` field; undefined means the default type, "message". */
  type: string | undefined;
  data: string;
  id: string | undefined;
}

export interface SseReadOptions {
  /** The largest event (its buffered lines and data), in UTF-16 code units as buffered. */
  maxEventChars: number;
  /** Called with each `retry:` value (milliseconds), 2025-11-25 polling. */
  onRetry?: (ms: number) => void;
}

/**
 * Frames an SSE body into events, per the WHATWG event-stream rules the MCP spec points to: CR, LF
 * and CRLF line ends, `data:` lines joined with "\n", `:` comments (keep-alives) ignored, a
 * trailing event without its blank line discarded. eventsource-parser does the framing (linear in
 * the input, bounded by `maxBufferSize`); bytes are decoded with a streaming TextDecoder so a
 * multi-byte character split across chunks stays whole. Synchronous: the caller feeds chunks as
 * they arrive and takes the events each one completed, with no stream or generator in between.
 */
export class SseFramer {
  readonly #ready: SseEvent[] = [];
  readonly #decoder = new TextDecoder('utf-8');
  readonly #parser: EventSourceParser;
  #overflow: BridgeError | undefined;
  #endsWithCr = false;

  constructor(options: SseReadOptions) {
    this.#parser = createParser({
      onEvent: (message: EventSourceMessage) => {
        this.#ready.push({ type: message.event, data: message.data, id: message.id });
      },
      onRetry: (ms: number) => options.onRetry?.(ms),
      onError: (error) => {
        // Unknown fields and malformed retry values are ignored, as the SSE spec says.
        if (error.type === 'max-buffer-size-exceeded') {
          this.#overflow = new BridgeError('REPLY_TOO_LARGE', `an event in the server's stream exceeds ${options.maxEventChars} characters`, {
            hint: 'raise --max-message-bytes if such large messages are expected',
          });
        }
      },
      maxBufferSize: options.maxEventChars,
    });
  }

  /** Takes one chunk; returns the events it completed (throws REPLY_TOO_LARGE past the limit). */
  feed(chunk: Uint8Array | string): SseEvent[] {
    this.#feedText(typeof chunk === 'string' ? chunk : this.#decoder.decode(chunk, { stream: true }));
    if (this.#overflow !== undefined) throw this.#overflow;
    return this.#take();
  }

  /** The body ended: returns the events still complete in what was fed. */
  end(): SseEvent[] {
    this.#feedText(this.#decoder.decode());
    // The parser holds back a final CR in case LF follows; at the end of the stream it is a line end.
    if (this.#endsWithCr) this.#parser.feed('\n');
    return this.#take();
  }

  #feedText(text: string): void {
    if (text === '') return;
    this.#parser.feed(text);
    this.#endsWithCr = text.endsWith('\r');
  }

  #take(): SseEvent[] {
    return this.#ready.length === 0 ? NO_EVENTS : this.#ready.splice(0);
  }
}

const NO_EVENTS: SseEvent[] = [];

/** Yields the events of an SSE body as they complete (SseFramer over an iterable of chunks). */
export async function* readSseEvents(body: AsyncIterable<Uint8Array | string>, options: SseReadOptions): AsyncGenerator<SseEvent> {
  const framer = new SseFramer(options);
  for await (const chunk of body) yield* framer.feed(chunk);
  yield* framer.end();
}
