// Turns a text/event-stream body into events; knows nothing of JSON-RPC.

import { createParser, type EventSourceMessage } from 'eventsource-parser';
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
 * Yields the events of an SSE body as they complete, per the WHATWG event-stream rules the MCP
 * spec points to: CR, LF and CRLF line ends, `data:` lines joined with "\n", `:` comments
 * (keep-alives) ignored, a trailing event without its blank line discarded. eventsource-parser
 * does the framing (linear in the input, bounded by `maxBufferSize`); bytes are decoded with a
 * streaming TextDecoder so a multi-byte character split across chunks stays whole.
 */
export async function* readSseEvents(body: AsyncIterable<Uint8Array | string>, options: SseReadOptions): AsyncGenerator<SseEvent> {
  const ready: SseEvent[] = [];
  let overflow: BridgeError | undefined;
  const parser = createParser({
    onEvent(message: EventSourceMessage) {
      ready.push({ type: message.event, data: message.data, id: message.id });
    },
    onRetry(ms: number) {
      options.onRetry?.(ms);
    },
    onError(error) {
      // Unknown fields and malformed retry values are ignored, as the SSE spec says.
      if (error.type === 'max-buffer-size-exceeded') {
        overflow = new BridgeError('REPLY_TOO_LARGE', `an event in the server's stream exceeds ${options.maxEventChars} characters`, {
          hint: 'raise --max-message-bytes if such large messages are expected',
        });
      }
    },
    maxBufferSize: options.maxEventChars,
  });
  const decoder = new TextDecoder('utf-8');
  let endsWithCr = false;
  const feed = (text: string) => {
    if (text === '') return;
    parser.feed(text);
    endsWithCr = text.endsWith('\r');
  };
  for await (const chunk of body) {
    feed(typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true }));
    if (overflow !== undefined) throw overflow;
    while (ready.length > 0) yield ready.shift()!;
  }
  feed(decoder.decode());
  // The parser holds back a final CR in case LF follows; at the end of the stream it is a line end.
  if (endsWithCr) parser.feed('\n');
  while (ready.length > 0) yield ready.shift()!;
}
