// Reads an HTTP reply body: media type, content decoding, bounded JSON, SSE messages, excerpts.

import type { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { BridgeError } from './errors.js';
import { isJsonObject, type JsonObject } from './json-rpc.js';
import type { HttpExchange } from './remote.js';
import { readSseEvents } from './sse-reader.js';

/** How much of an error body is kept for the error reply's `data.bodyExcerpt`. */
export const BODY_EXCERPT_CHARS = 500;
/** How much of an error body is read at most to find a JSON-RPC error in it. */
export const ERROR_BODY_MAX_BYTES = 64 * 1024;

export function headerValue(headers: HttpExchange['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The parsed media type ("text/event-stream"), lower-case, without parameters; never sniffed. */
export function mediaTypeOf(headers: HttpExchange['headers']): string | undefined {
  const raw = headerValue(headers, 'content-type');
  if (raw === undefined) return undefined;
  const type = raw.split(';', 1)[0]!.trim().toLowerCase();
  return type === '' ? undefined : type;
}

/**
 * The body as bytes the server meant. The bridge never asks for compression, but a server or
 * proxy may apply it anyway; gzip, deflate and br are decoded, anything else is refused rather
 * than forwarded as garbage.
 */
export function decodedBody(exchange: HttpExchange): AsyncIterable<Buffer> {
  const encoding = (headerValue(exchange.headers, 'content-encoding') ?? 'identity').trim().toLowerCase();
  const body = exchange.body as unknown as Readable;
  switch (encoding) {
    case 'identity':
    case '':
      return body as AsyncIterable<Buffer>;
    case 'gzip':
    case 'x-gzip':
      return body.pipe(createGunzip());
    case 'deflate':
      return body.pipe(createInflate());
    case 'br':
      return body.pipe(createBrotliDecompress());
    default:
      throw new BridgeError('REMOTE_BAD_REPLY', `the server used the content encoding "${encoding}", which the bridge cannot decode`, {
        status: exchange.status,
      });
  }
}

/** Reads the whole body as UTF-8 text, failing with REPLY_TOO_LARGE past `maxBytes`. */
export async function readBoundedText(exchange: HttpExchange, maxBytes: number): Promise<string> {
  return (await readBoundedBytes(exchange, maxBytes)).toString('utf8');
}

/** Reads the whole body, failing with REPLY_TOO_LARGE past `maxBytes`. */
export async function readBoundedBytes(exchange: HttpExchange, maxBytes: number): Promise<Buffer> {
  const tooLarge = () => {
    exchange.body.destroy();
    return new BridgeError('REPLY_TOO_LARGE', `the reply is larger than ${maxBytes} bytes`, {
      status: exchange.status,
      hint: 'raise --max-message-bytes if such large replies are expected',
    });
  };
  const declared = Number(headerValue(exchange.headers, 'content-length'));
  const encoding = headerValue(exchange.headers, 'content-encoding');
  if (Number.isSafeInteger(declared) && declared > 0 && (encoding === undefined || encoding === 'identity')) {
    // The size is known: each chunk is copied into one buffer as it arrives and is garbage at
    // once, instead of all chunks living until a final concat (a large reply's peak memory).
    if (declared > maxBytes) throw tooLarge();
    const whole = Buffer.allocUnsafe(declared);
    let filled = 0;
    for await (const chunk of decodedBody(exchange)) {
      if (filled + chunk.length > declared) throw tooLarge();
      chunk.copy(whole, filled);
      filled += chunk.length;
    }
    return filled === declared ? whole : whole.subarray(0, filled);
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of decodedBody(exchange)) {
    total += chunk.length;
    if (total > maxBytes) throw tooLarge();
    chunks.push(chunk);
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
}

const WHITESPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);

/** The bytes without JSON whitespace around them (no copy), or undefined if a CR or LF stays inside. */
export function singleLineBytes(bytes: Buffer): Buffer | undefined {
  let start = 0;
  let end = bytes.length;
  while (start < end && WHITESPACE.has(bytes[start]!)) start++;
  while (end > start && WHITESPACE.has(bytes[end - 1]!)) end--;
  const trimmed = bytes.subarray(start, end);
  return trimmed.includes(0x0a) || trimmed.includes(0x0d) ? undefined : trimmed;
}

/** Reads at most ERROR_BODY_MAX_BYTES of an error body and discards the rest; never throws. */
export async function readErrorBody(exchange: HttpExchange): Promise<string> {
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of decodedBody(exchange)) {
      chunks.push(chunk);
      total += chunk.length;
      if (total >= ERROR_BODY_MAX_BYTES) break;
    }
  } catch {
    // A broken error body still leaves the status to report.
  } finally {
    exchange.body.destroy();
  }
  return Buffer.concat(chunks).subarray(0, ERROR_BODY_MAX_BYTES).toString('utf8');
}

/** A short single-line excerpt for error data: enough to recognise an HTML page or a proxy message. */
export function excerptOf(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > BODY_EXCERPT_CHARS ? `${flat.slice(0, BODY_EXCERPT_CHARS)}…` : flat;
}

export function tryParseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** One item of an SSE reply: a parsed message, or an event that carried no usable message. */
export interface StreamItem {
  /** The parsed JSON of the event's data; undefined for priming events and non-JSON data. */
  message: unknown;
  /** The event's `id:` if it had one: the resume point for 2025-11-25 polling. */
  eventId: string | undefined;
  /** The event's data as sent: the message's own serialisation, or the raw text when it was not JSON. */
  data?: string;
  /** True when `data` did not parse as JSON. */
  unparsed?: boolean;
}

export interface StreamOptions {
  maxMessageBytes: number;
  /** Milliseconds without a byte (comments count) before the stream is given up; 0 = never. */
  idleTimeoutMs: number;
  onRetry?: (ms: number) => void;
}

/**
 * Yields each MCP message of a text/event-stream reply as it completes. Only events of the default
 * type or "message" carry MCP messages; events with empty data (2025-11-25 priming events) carry
 * only their id (wire rules §2.2).
 */
export async function* readStreamItems(exchange: HttpExchange, options: StreamOptions): AsyncGenerator<StreamItem> {
  const source = options.idleTimeoutMs > 0 ? withIdleTimeout(decodedBody(exchange), options.idleTimeoutMs, exchange) : decodedBody(exchange);
  const sseOptions = options.onRetry === undefined ? { maxEventChars: options.maxMessageBytes } : { maxEventChars: options.maxMessageBytes, onRetry: options.onRetry };
  for await (const event of readSseEvents(source, sseOptions)) {
    if (event.type !== undefined && event.type !== 'message') {
      if (event.id !== undefined) yield { message: undefined, eventId: event.id };
      continue;
    }
    if (event.data === '') {
      yield { message: undefined, eventId: event.id };
      continue;
    }
    const message = tryParseJson(event.data);
    yield message === undefined ? { message, eventId: event.id, data: event.data, unparsed: true } : { message, eventId: event.id, data: event.data };
  }
}

/** Passes chunks through, failing with STREAM_IDLE_TIMEOUT when none arrives for `idleMs`. */
async function* withIdleTimeout(source: AsyncIterable<Buffer>, idleMs: number, exchange: HttpExchange): AsyncGenerator<Buffer> {
  let timer: NodeJS.Timeout | undefined;
  let idle = false;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      idle = true;
      exchange.body.destroy();
    }, idleMs);
  };
  arm();
  try {
    for await (const chunk of source) {
      arm();
      yield chunk;
    }
  } catch (error) {
    if (!idle) throw error;
  } finally {
    clearTimeout(timer);
  }
  if (idle) {
    throw new BridgeError('STREAM_IDLE_TIMEOUT', `the server's stream sent nothing for ${idleMs} ms`, {
      hint: 'raise --stream-idle-timeout (0 = off) if the server is known to stay silent that long',
    });
  }
}

/** Retry-After as milliseconds (delta-seconds or an HTTP date), undefined when absent or unreadable. */
export function retryAfterMs(headers: HttpExchange['headers'], now: number = Date.now()): number | undefined {
  const raw = headerValue(headers, 'retry-after')?.trim();
  if (raw === undefined || raw === '') return undefined;
  if (/^\d+$/.test(raw)) return Number(raw) * 1000;
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Reads the response to a request the bridge sent for itself (JSON or SSE); other messages are ignored. */
export async function readPrivateResponse(exchange: HttpExchange, id: string, maxMessageBytes: number): Promise<JsonObject> {
  const type = mediaTypeOf(exchange.headers);
  if (exchange.status < 200 || exchange.status >= 300) {
    const text = await readErrorBody(exchange);
    throw new BridgeError('REMOTE_HTTP_STATUS', `the server answered ${exchange.status}`, { status: exchange.status, bodyExcerpt: text.slice(0, 200) });
  }
  if (type === 'application/json') {
    const message = tryParseJson(await readBoundedText(exchange, maxMessageBytes));
    if (isJsonObject(message) && message.id === id) return message;
  } else if (type === 'text/event-stream') {
    try {
      for await (const item of readStreamItems(exchange, { maxMessageBytes, idleTimeoutMs: 0 })) {
        if (isJsonObject(item.message) && item.message.id === id && !('method' in item.message)) return item.message;
      }
    } finally {
      exchange.body.destroy();
    }
  } else {
    await exchange.body.dump();
  }
  throw new BridgeError('REMOTE_BAD_REPLY', 'the server did not answer the request the bridge sent', { status: exchange.status });
}
