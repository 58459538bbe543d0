// Reads HTTP replies: the one owner of every response body, which it reads, drains or destroys in one place.

import { isUtf8 } from 'node:buffer';
import { Readable, pipeline } from 'node:stream';
import { type Deadline, DeadlineList } from '../core/deadlines.js';
import { BridgeError } from '../core/errors.js';
import { isJsonObject, type JsonObject } from '../core/json-rpc.js';
import { JsonScanner, MAX_SMALL_MEMBER_BYTES, scanJson, type EarlyRefusal, type JsonScan } from '../core/json-scan.js';
import { LARGE_EVENT_BYTES, SseFramer, type SseEvent, type SseReadOptions } from './sse-reader.js';
import { type AbortSource } from '../core/abort.js';
import { type HttpExchange } from './send.js';
import { headerValue, mediaTypeOf } from './header-values.js';
import { decoderFor } from './content-decoding.js';
import { replyTooLarge } from './reply-limit.js';
import { singleLineBytes, tryParseJson } from './body-text.js';
import { excerptOf, headBeforeCut, LOG_EXCERPT_CHARS, type Mask } from '../logging/outgoing-text.js';
import { defineOpenedOnRead, keepMemberBytes, setMember } from '../core/lazy-object.js';

/** Every stream's linger after its answer, on one timer: one per event-stream reply would be one timer per message. */
const lingers = new DeadlineList();
/**
 * Every stream's idle deadline, on one timer too. A chunk only notes when it came; the deadline is
 * moved when it falls due and bytes came since, so a chunk costs no timer work at all.
 */
const idles = new DeadlineList();

/** How much of an error body is read at most to find a JSON-RPC error in it. */
export const ERROR_BODY_MAX_BYTES = 64 * 1024;
/**
 * How long an error body, or a body nobody needs (a 202, a redirect), may take to arrive before it
 * is cut: a server that sends the headers and then stalls must not hold a connection (or a listen
 * loop with no deadline) for good.
 */
export const SIDE_BODY_TIMEOUT_MS = 5_000;
/**
 * An application/json body larger than this is scanned instead of decoded and parsed when the
 * caller asks (`scanLarge`): below it JSON.parse is faster, above it the decoded text and the
 * parsed tree would each cost as much memory as the body again.
 */
export const LARGE_REPLY_BYTES = 1024 * 1024;

/** What a reply turned out to be. Whatever the kind, its body is finished with when the read resolves. */
export type Reply =
  /** 2xx without a body the bridge reads (202 Accepted, 204, or any 2xx to a notification). */
  | { kind: 'accepted'; status: number }
  /**
   * application/json: the parsed body and the bytes it came from. A scanned large body has `line`
   * (its bytes without surrounding whitespace, proven one line of valid UTF-8 JSON), and its
   * `value` decodes each large top-level member only when something reads it.
   */
  | { kind: 'json'; status: number; value: unknown; bytes: Buffer; line?: Buffer }
  /** text/event-stream: every event went to the stream handler; `answered` once it said so. */
  | { kind: 'stream'; status: number; answered: boolean }
  | { kind: 'redirect'; status: number; location: string | undefined }
  /**
   * Any other status: at most ERROR_BODY_MAX_BYTES of the body, and its JSON if it parsed, with
   * the `WWW-Authenticate` challenge a 401/403 renewal needs (authorization §Error Handling).
   */
  | { kind: 'http-error'; status: number; text: string; parsed: unknown; wwwAuthenticate?: string | undefined }
  /** 2xx with a content type that is neither JSON nor an event stream. */
  | { kind: 'unexpected-type'; status: number; type: string | undefined; text: string };

/** One event of an event stream: a parsed message, or an event that carried no usable message. */
export interface StreamItem {
  /** The parsed JSON of the event's data; undefined for priming events and non-JSON data. */
  message: unknown;
  /** The event's `id:` if it had one: the resume point for 2025-11-25 polling. */
  eventId: string | undefined;
  /** The event's data as sent: the message's own serialisation, or the raw text when it was not JSON. */
  data?: string;
  /**
   * Instead of `data`, for an event past LARGE_EVENT_BYTES read with `scanLarge` and proven one
   * JSON object on one line of valid UTF-8: that line as the server's bytes. `message` is then a
   * stand-in that decodes its large members only when something reads one (see standIn).
   */
  bytes?: Buffer;
  /** True when `data` did not parse as JSON. */
  unparsed?: boolean;
  /**
   * An event of another type than "message" (the 2024-11-05 `endpoint` event): its type, with its
   * data in `data` as sent; `message` is then undefined.
   */
  type?: string;
}

export interface StreamHandler {
  /** Called for each event in order; resolves 'answered' once the event carried what the reader waited for. */
  onItem(item: StreamItem): Promise<'continue' | 'answered'>;
  /** Called with each `retry:` value (milliseconds). */
  onRetry?(ms: number): void;
  /**
   * After the answer the rest of the stream is read and dropped for at most this long, then cut:
   * a stream read to its end leaves the connection reusable, one left early costs a reset.
   */
  lingerMs: number;
  /** Milliseconds without a byte (comments count) before the stream is given up; 0 = never. */
  idleTimeoutMs: number;
  /**
   * The largest first event, in bytes, when it must be small (the 2024-11-05 `endpoint` event,
   * a URL): the stream is given up past it, long before the message limit.
   */
  firstEventMaxBytes?: number;
  /** True to be handed events of other types than "message" too, with their `type` and `data`. */
  typedEvents?: boolean;
}

export interface ReadOptions {
  maxMessageBytes: number;
  /** Aborting it destroys the body at once; the read then rejects. */
  signal: AbortSource | undefined;
  /** Back-pressure: returns a promise while the consumer (stdout) is full; reading waits for it. */
  room?: (() => Promise<void> | undefined) | undefined;
  /** How a text/event-stream 2xx reply is read; without it such a reply is only drained. */
  stream?: StreamHandler | undefined;
  /** True when no reply body is expected (a notification or response was posted): any 2xx is accepted. */
  acceptAny2xx?: boolean;
  /**
   * True when the caller routes a JSON reply on its top-level members and forwards its bytes: a
   * body over LARGE_REPLY_BYTES is then scanned rather than decoded and parsed (see toJsonReply),
   * and so is an event's data over LARGE_EVENT_BYTES (see toStreamItem).
   */
  scanLarge?: boolean | undefined;
  /** With `scanLarge`: a large JSON body, or an event's large data line, is refused as soon as this settles it, without reading the rest. */
  refuseEarly?: EarlyRefusal | undefined;
}

/**
 * A whole reply at most this long may be read from undici's callback, before the reply reader runs;
 * well under BODY_QUEUE_HIGH_WATER_BYTES, so such a reply arrives whole without the socket pausing.
 */
export const ARRIVED_REPLY_MAX_BYTES = 16 * 1024;

/**
 * A 2xx JSON reply that has arrived whole, small (ARRIVED_REPLY_MAX_BYTES, and `maxBytes`) and not
 * encoded, on one line of valid UTF-8: its value and that line, read without taking the body. For
 * anything else undefined, and readReply decides as always. The body stays for its reader.
 */
export function arrivedJsonLine(exchange: HttpExchange, maxBytes: number): { value: unknown; line: Buffer } | undefined {
  const { status } = exchange;
  // 202 and 204 answer nothing (readReply: accepted).
  if (status < 200 || status >= 300 || status === 202 || status === 204) return undefined;
  if (mediaTypeOf(exchange.headers) !== 'application/json') return undefined;
  const encoding = (headerValue(exchange.headers, 'content-encoding') ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity' && encoding !== '') return undefined;
  const chunks = exchange.body.arrived();
  if (chunks === undefined || chunks.length === 0) return undefined;
  const bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
  if (bytes.length > ARRIVED_REPLY_MAX_BYTES || bytes.length > maxBytes) return undefined;
  const line = singleLineBytes(bytes);
  if (line === undefined || !isUtf8(line)) return undefined;
  const value = tryParseJson(line.toString('utf8'));
  return value === undefined ? undefined : { value, line };
}

/**
 * The events of a 2xx event-stream reply that has arrived whole, small (ARRIVED_REPLY_MAX_BYTES,
 * and `maxBytes`) and not encoded, framed and read as readReply's stream reading would hand them
 * on (the same framer, the same StreamItem for each event of the default type or "message"). For
 * anything else, or a body the framer refuses, undefined: readReply decides as always. The body
 * stays for its reader.
 */
export function arrivedStreamItems(exchange: HttpExchange, maxBytes: number): StreamItem[] | undefined {
  const { status } = exchange;
  if (status < 200 || status >= 300 || mediaTypeOf(exchange.headers) !== 'text/event-stream') return undefined;
  const encoding = (headerValue(exchange.headers, 'content-encoding') ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity' && encoding !== '') return undefined;
  const chunks = exchange.body.arrived();
  if (chunks === undefined || chunks.length === 0) return undefined;
  let size = 0;
  for (const chunk of chunks) size += chunk.length;
  if (size > ARRIVED_REPLY_MAX_BYTES || size > maxBytes) return undefined;
  const framer = new SseFramer({ maxEventChars: maxBytes });
  const items: StreamItem[] = [];
  try {
    for (const chunk of chunks) for (const event of framer.feed(chunk)) items.push(toStreamItem(event, false));
    for (const event of framer.end()) items.push(toStreamItem(event, false));
  } catch {
    return undefined;
  }
  return items;
}

/** Lets go of a body whose whole content was used through arrivedJsonLine or arrivedStreamItems: there is nothing left to read. */
export function releaseArrived(exchange: HttpExchange): void {
  exchange.body.destroy();
}

/**
 * Reads `exchange` to the end that fits its kind and always releases its body: read to the end,
 * or destroyed together with the decoder piped from it. Nothing else in the bridge touches a body.
 * Throws a BridgeError for a reply that cannot be used (too large, undecodable), or the raw
 * failure of the connection for the caller to classify.
 */
export async function readReply(exchange: HttpExchange, options: ReadOptions): Promise<Reply> {
  const { status } = exchange;
  const body = openBody(exchange);
  if (body.unsupportedEncoding !== undefined) {
    // Only a reply that would be forwarded needs its bytes: an error status keeps its meaning
    // (a 401 stays a 401) with an empty excerpt.
    if (status >= 200 && status < 300) {
      throw new BridgeError('REMOTE_BAD_REPLY', `the server used the content encoding "${body.unsupportedEncoding}", which the bridge cannot decode`, {
        status,
      });
    }
    if (status >= 300 && status < 400) return { kind: 'redirect', status, location: headerValue(exchange.headers, 'location') };
    return { kind: 'http-error', status, text: '', parsed: undefined, wwwAuthenticate: headerValue(exchange.headers, 'www-authenticate') };
  }
  const abort = () => body.release();
  options.signal?.addEventListener('abort', abort, { once: true });
  try {
    if (options.signal?.aborted === true) throw options.signal.reason;
    const type = mediaTypeOf(exchange.headers);
    if (status >= 200 && status < 300) {
      if (type === 'text/event-stream' && options.stream !== undefined) {
        return { kind: 'stream', status, answered: await readStream(body, options.stream, options) };
      }
      if (options.acceptAny2xx === true || status === 202 || status === 204) {
        await drainUpTo(body, ERROR_BODY_MAX_BYTES);
        return { kind: 'accepted', status };
      }
      if (type === 'application/json') {
        const { bytes, scanner } = await readBounded(body, exchange, options);
        return toJsonReply(status, bytes, scanner?.end());
      }
      return { kind: 'unexpected-type', status, type, text: await readExcerpt(body) };
    }
    if (status >= 300 && status < 400) {
      await drainUpTo(body, ERROR_BODY_MAX_BYTES);
      return { kind: 'redirect', status, location: headerValue(exchange.headers, 'location') };
    }
    const text = await readExcerpt(body);
    return { kind: 'http-error', status, text, parsed: tryParseJson(text), wwwAuthenticate: headerValue(exchange.headers, 'www-authenticate') };
  } finally {
    options.signal?.removeEventListener('abort', abort);
    body.release();
  }
}

/** A body with its decoder (if any), and the one way to let go of both. */
interface OpenBody {
  chunks: AsyncIterable<Buffer>;
  /** Destroys body and decoder unless the body was read to its end; safe to call again. */
  release(): void;
  /** The decoded bytes cannot be trusted to match Content-Length. */
  encoded: boolean;
  /** Set (and the body already released) when the content encoding is one the bridge cannot decode. */
  unsupportedEncoding?: string;
}

/**
 * The body as the bytes the server meant. The bridge never asks for compression, but a server or
 * proxy may apply it anyway; gzip, deflate and br are decoded, anything else is refused rather
 * than forwarded as garbage. The decoding streams get an 'error' listener that stays for their
 * lifetime: an error nobody listens to ends the process.
 */
function openBody(exchange: HttpExchange): OpenBody {
  const { body } = exchange;
  const encoding = (headerValue(exchange.headers, 'content-encoding') ?? 'identity').trim().toLowerCase();
  const decoder = decoderFor(encoding);
  const releaseBody = () => body.destroy();
  if (decoder === undefined) {
    body.destroy();
    return { chunks: body, encoded: true, release: releaseBody, unsupportedEncoding: encoding };
  }
  if (decoder === null) return { chunks: body, encoded: false, release: releaseBody };
  const source = Readable.from(body, { objectMode: false });
  source.on('error', ignore);
  decoder.on('error', ignore);
  // pipeline tears the pair down together: a broken body fails the decoder and the other way round.
  pipeline(source, decoder, ignore);
  const release = () => {
    if (!decoder.readableEnded) decoder.destroy();
    if (!source.readableEnded) source.destroy();
    body.destroy();
  };
  return { chunks: decoder, encoded: true, release };
}

function ignore(): void {
  // Failures surface through the iterator that reads the stream; this only keeps them handled.
}

/** Feeds one chunk to the scanner, and throws the early refusal once what the watch saw settles it. */
function feedOrRefuse(scanner: JsonScanner, chunk: Buffer, refuseEarly: EarlyRefusal | undefined): void {
  scanner.feed(chunk);
  const refusal = refuseEarly?.refusal(scanner.watched);
  if (refusal !== undefined) throw refusal;
}

/**
 * Reads the whole body, failing with REPLY_TOO_LARGE past the limit (counted after decoding). With
 * `scanLarge`, a body past LARGE_REPLY_BYTES is also fed to a JSON scanner chunk by chunk as it arrives.
 */
async function readBounded(body: OpenBody, exchange: HttpExchange, options: ReadOptions): Promise<{ bytes: Buffer; scanner: JsonScanner | undefined }> {
  const maxBytes = options.maxMessageBytes;
  const declared = Number(headerValue(exchange.headers, 'content-length'));
  const scan = options.scanLarge === true;
  let scanner: JsonScanner | undefined;
  if (Number.isSafeInteger(declared) && declared > 0 && !body.encoded) {
    // The size is known: each chunk is copied into one buffer as it arrives and is garbage at
    // once, instead of all chunks living until a final concat (a large reply's peak memory).
    if (declared > maxBytes) throw replyTooLarge(maxBytes, exchange.status);
    if (scan && declared > LARGE_REPLY_BYTES) scanner = new JsonScanner(options.refuseEarly?.watch);
    const whole = Buffer.allocUnsafe(declared);
    let filled = 0;
    for await (const chunk of body.chunks) {
      const wait = options.room?.();
      if (wait !== undefined) await wait;
      if (filled + chunk.length > declared) throw replyTooLarge(maxBytes, exchange.status);
      chunk.copy(whole, filled);
      filled += chunk.length;
      if (scanner !== undefined) feedOrRefuse(scanner, chunk, options.refuseEarly);
    }
    return { bytes: filled === declared ? whole : whole.subarray(0, filled), scanner };
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body.chunks) {
    const wait = options.room?.();
    if (wait !== undefined) await wait;
    total += chunk.length;
    if (total > maxBytes) throw replyTooLarge(maxBytes, exchange.status);
    chunks.push(chunk);
    if (scanner !== undefined) feedOrRefuse(scanner, chunk, options.refuseEarly);
    else if (scan && total > LARGE_REPLY_BYTES) {
      // Large after all: the scanner catches up on what came so far.
      scanner = new JsonScanner(options.refuseEarly?.watch);
      for (const earlier of chunks) feedOrRefuse(scanner, earlier, options.refuseEarly);
    }
  }
  return { bytes: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total), scanner };
}

/**
 * The reply for an application/json body. A scanned body that is one JSON object on one line of
 * valid UTF-8, with every small member decoded, is not parsed: its value is a stand-in whose
 * small members are the decoded ones and whose large members are decoded (all at once, from the
 * bytes) the first time anything reads one. Anything else (and a body that was not scanned) is
 * decoded and parsed as it always was; a body the scan proved not JSON is not decoded at all.
 */
function toJsonReply(status: number, bytes: Buffer, scan: JsonScan | undefined): Reply {
  if (scan === undefined) return { kind: 'json', status, value: tryParseJson(bytes.toString('utf8')), bytes };
  if (scan.kind === 'invalid') return { kind: 'json', status, value: undefined, bytes };
  const scanned = standIn(bytes, scan);
  if (scanned === undefined) return { kind: 'json', status, value: tryParseJson(bytes.toString('utf8')), bytes };
  return { kind: 'json', status, value: scanned.value, line: scanned.line, bytes };
}

/**
 * For scanned bytes that are one JSON object on one line of valid UTF-8, with every small member
 * decoded: a value whose small members are the decoded ones and whose large members are decoded
 * (all at once, from the bytes) the first time anything reads one, and the line (the bytes
 * without surrounding whitespace). Undefined for anything else: the caller decodes and parses.
 */
function standIn(bytes: Buffer, scan: JsonScan): { value: JsonObject; line: Buffer } | undefined {
  if (
    scan.kind !== 'object' ||
    !scan.utf8 ||
    !scan.singleLine ||
    scan.members.some((m) => m.key === undefined || (!m.small && m.size <= MAX_SMALL_MEMBER_BYTES))
  ) {
    return undefined;
  }
  let whole: JsonObject | undefined;
  const wholeValue = () => (whole ??= JSON.parse(bytes.toString('utf8')) as JsonObject);
  const value: JsonObject = {};
  const large = new Map<string, Buffer>();
  for (const member of scan.members) {
    const key = member.key!;
    // Defined, never assigned: a "__proto__" key is an own member, as JSON.parse makes it.
    if (member.small) setMember(value, key, member.value);
    else {
      defineOpenedOnRead(value, key, () => wholeValue()[key]);
      large.set(key, bytes.subarray(member.start, member.start + member.size));
    }
  }
  // A reader that must bound what it decodes (the members of an input_required result) looks first.
  keepMemberBytes(value, (key) => large.get(key));
  return { value, line: bytes.subarray(scan.start, scan.end) };
}

/**
 * Reads at most ERROR_BODY_MAX_BYTES as text within SIDE_BODY_TIMEOUT_MS; a body that breaks or
 * stalls still leaves what was read. A read that ended before the body did ends at a word's end
 * (headBeforeCut). Never throws.
 */
async function readExcerpt(body: OpenBody): Promise<string> {
  const chunks: Buffer[] = [];
  let total = 0;
  let whole = false;
  let stalled = false;
  const timer = setTimeout(() => {
    stalled = true;
    body.release();
  }, SIDE_BODY_TIMEOUT_MS);
  try {
    for await (const chunk of body.chunks) {
      chunks.push(chunk);
      total += chunk.length;
      if (total >= ERROR_BODY_MAX_BYTES) break;
    }
    whole = !stalled && total < ERROR_BODY_MAX_BYTES;
  } catch {
    // A broken error body still leaves the status to report.
  } finally {
    clearTimeout(timer);
  }
  const text = Buffer.concat(chunks).subarray(0, ERROR_BODY_MAX_BYTES).toString('utf8');
  return whole ? text : headBeforeCut(text);
}

/**
 * Reads a body nobody needs, so its connection can be reused, up to a size and time bound; the
 * rest is cut by release(). Never throws.
 */
async function drainUpTo(body: OpenBody, maxBytes: number): Promise<void> {
  let total = 0;
  const timer = setTimeout(() => body.release(), SIDE_BODY_TIMEOUT_MS);
  try {
    for await (const chunk of body.chunks) {
      total += chunk.length;
      if (total >= maxBytes) return;
    }
  } catch {
    // Nothing in it was needed.
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Hands each event of an event-stream body to the handler, in order. Only events of the default
 * type or "message" carry MCP messages; an event with empty data (a 2025-11-25 priming event)
 * carries only its id. Resolves true when the handler got its answer; a failure before that rejects.
 */
async function readStream(body: OpenBody, handler: StreamHandler, options: ReadOptions): Promise<boolean> {
  let answered = false;
  let idle = false;
  let idleDeadline: Deadline | undefined;
  // When the last chunk came (performance.now()); the idle deadline counts from it.
  let lastChunkAt = 0;
  let linger: Deadline | undefined;
  const cut = () => body.release();
  const onIdleDue = () => {
    const due = idleDeadline!;
    idleDeadline = undefined;
    // Bytes came after this deadline was set: the stream is idle only idleTimeoutMs after them.
    const setAt = due.at - handler.idleTimeoutMs;
    if (lastChunkAt > setAt) {
      idleDeadline = idles.add(Math.max(0, lastChunkAt + handler.idleTimeoutMs - performance.now()), onIdleDue);
      return;
    }
    idle = true;
    cut();
  };
  const stopIdle = () => {
    if (idleDeadline !== undefined) idles.remove(idleDeadline);
    idleDeadline = undefined;
  };
  const arm = () => {
    if (handler.idleTimeoutMs <= 0 || answered) return;
    if (idleDeadline === undefined) idleDeadline = idles.add(handler.idleTimeoutMs, onIdleDue);
    else lastChunkAt = performance.now();
  };
  const framing: SseReadOptions =
    options.scanLarge === true
      ? { maxEventChars: options.maxMessageBytes, largeDataBytes: LARGE_EVENT_BYTES, refuseEarly: options.refuseEarly }
      : { maxEventChars: options.maxMessageBytes };
  if (handler.onRetry !== undefined) framing.onRetry = (ms: number) => handler.onRetry?.(ms);
  if (handler.firstEventMaxBytes !== undefined) framing.firstEventMaxChars = handler.firstEventMaxBytes;
  const framer = new SseFramer(framing);
  const deliver = async (events: readonly SseEvent[]) => {
    for (const event of events) {
      if ((await handler.onItem(toStreamItem(event, handler.typedEvents === true))) === 'answered') {
        answered = true;
        // The server SHOULD close the stream after the response (transports §Sending Messages);
        // one that does not is cut after a short while.
        stopIdle();
        linger = lingers.add(handler.lingerMs, cut);
        return;
      }
    }
  };
  arm();
  try {
    for await (const chunk of body.chunks) {
      // After the answer the rest is read and dropped: a stream read to its end leaves the
      // connection reusable.
      if (answered) continue;
      arm();
      const wait = options.room?.();
      if (wait !== undefined) await wait;
      const events = framer.feed(chunk);
      if (events.length > 0) await deliver(events);
    }
    if (!answered) await deliver(framer.end());
  } catch (error) {
    if (answered) return true;
    if (idle) {
      throw new BridgeError('STREAM_IDLE_TIMEOUT', `the server's stream sent nothing for ${handler.idleTimeoutMs} ms`, {
        hint: 'raise --stream-idle-timeout (0 = off) if the server is known to stay silent that long',
      });
    }
    throw error;
  } finally {
    stopIdle();
    if (linger !== undefined) lingers.remove(linger);
  }
  return answered;
}

/**
 * Only events of the default type or "message" carry MCP messages; an event with empty data (a
 * 2025-11-25 priming event) carries only its id. An event of another type carries its type and
 * data when the handler asked for them (`typed`: the 2024-11-05 `endpoint` event).
 */
function toStreamItem(event: SseEvent, typed: boolean): StreamItem {
  if (event.type !== undefined && event.type !== 'message') {
    return typed ? { message: undefined, eventId: event.id, type: event.type, data: event.data } : { message: undefined, eventId: event.id };
  }
  if (event.data === '' && event.bytes === undefined) return { message: undefined, eventId: event.id };
  let data = event.data;
  if (event.bytes !== undefined) {
    // Large data, undecoded: scanned, and forwarded as its bytes when it is one JSON line. Anything
    // else (not JSON, not UTF-8, several lines) becomes what a small event would have been.
    const scan = scanJson(event.bytes);
    const scanned = scan.kind === 'invalid' ? undefined : standIn(event.bytes, scan);
    if (scanned !== undefined) return { message: scanned.value, eventId: event.id, bytes: scanned.line };
    data = event.bytes.toString('utf8');
    if (scan.kind === 'invalid') return { message: undefined, eventId: event.id, data, unparsed: true };
  }
  const message = tryParseJson(data);
  return message === undefined ? { message, eventId: event.id, data, unparsed: true } : { message, eventId: event.id, data };
}

/** Reads an error body (at most ERROR_BODY_MAX_BYTES) whatever the status, and releases the rest; never throws. */
export async function readErrorBody(exchange: HttpExchange): Promise<string> {
  try {
    const reply = await readReply(exchange, { maxMessageBytes: ERROR_BODY_MAX_BYTES, signal: undefined });
    return reply.kind === 'http-error' || reply.kind === 'unexpected-type' ? reply.text : '';
  } catch {
    return '';
  }
}

/** How a private response is read: the message limit, the run's mask for what a refusal quotes, the exchange's abort. */
export interface PrivateReadOptions {
  maxMessageBytes: number;
  mask: Mask;
  signal?: AbortSource | undefined;
}

/**
 * Reads the response to a request the bridge sent for itself (JSON or an event stream); other
 * messages on the stream are ignored, as they answer nothing the client asked.
 */
export async function readPrivateResponse(exchange: HttpExchange, id: string, options: PrivateReadOptions): Promise<JsonObject> {
  const { maxMessageBytes, signal } = options;
  let found: JsonObject | undefined;
  const reply = await readReply(exchange, {
    maxMessageBytes,
    signal,
    stream: {
      lingerMs: 0,
      idleTimeoutMs: 0,
      onItem: (item) => {
        if (isJsonObject(item.message) && item.message.id === id && !('method' in item.message)) {
          found = item.message;
          return Promise.resolve('answered');
        }
        return Promise.resolve('continue');
      },
    },
  });
  if (reply.kind === 'json' && isJsonObject(reply.value) && reply.value.id === id) return reply.value;
  if (found !== undefined) return found;
  if (reply.kind === 'http-error') {
    throw new BridgeError('REMOTE_HTTP_STATUS', `the server answered ${reply.status}`, {
      status: reply.status,
      bodyExcerpt: excerptOf(reply.text, options.mask, LOG_EXCERPT_CHARS),
    });
  }
  throw new BridgeError('REMOTE_BAD_REPLY', 'the server did not answer the request the bridge sent', { status: reply.status });
}
