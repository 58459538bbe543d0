// JSON-RPC 2.0 message types, the check each stdin line passes, and error-reply builders.

import { BRIDGE_ERRORS, type BridgeError, toErrorData } from './errors.js';
import { MODERN_VERSION_META_KEY } from './protocol.js';
import type { EarlyRefusal } from './json-scan.js';

export type JsonRpcId = string | number;
export type JsonObject = Record<string, unknown>;

/**
 * What is posted for a message: the line as it was written, as text, or (a line over
 * LARGE_LINE_BYTES) as the bytes it arrived in, never decoded (line-reader.ts).
 */
export type RequestBody = string | readonly Buffer[];

/**
 * A line that passed the check: what it is decides how it is posted and answered. `abridged`:
 * `message` holds what routing reads, with large values left out (large-line.ts); `body` is whole.
 */
export type IncomingMessage =
  | {
      kind: 'request';
      id: JsonRpcId;
      method: string;
      message: JsonObject;
      body: RequestBody;
      abridged?: true;
      /** A large JSON reply that this settles is refused while it streams in (a request of the bridge's own may ask). */
      refuseEarly?: EarlyRefusal;
    }
  | { kind: 'notification'; method: string; message: JsonObject; body: RequestBody; abridged?: true }
  | { kind: 'response'; id: JsonRpcId; message: JsonObject; body: RequestBody; abridged?: true };

/** A line that did not: the replies to write (one per usable id, or one with id null). */
export interface RejectedLine {
  kind: 'rejected';
  reason: string;
  replies: JsonObject[];
}

export type CheckedLine = IncomingMessage | RejectedLine;

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A usable id is a string or an integer; null, fractions and objects are not (JSON-RPC 2.0 §4, MCP forbids null). */
export function isUsableId(value: unknown): value is JsonRpcId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isSafeInteger(value));
}

/** A key that tells 1 from "1": the id a reply must carry is compared by type and value. */
export function idKey(id: JsonRpcId): string {
  return typeof id === 'number' ? `n:${id}` : `s:${id}`;
}

/** Longest string id a log line shows whole, in characters; a longer one is shown as an excerpt. */
export const MAX_LOGGED_ID_CHARS = 64;

/**
 * A string id too long to log whole. The logger masks the run's secrets in the WHOLE id, then cuts
 * it to MAX_LOGGED_ID_CHARS (logging/logger.ts): cut first, a secret lying across the cut would
 * show its first characters, unmasked, since the masker knows only whole secrets. Serialised by any
 * other logger, it shows only its length.
 */
export class LongId {
  constructor(readonly text: string) {}
  toJSON(): string {
    return `(${this.text.length} characters)`;
  }
}

/**
 * An id (a client's, a server's, or what stood where one should be) as a log line shows it: a
 * number, null or a string of at most MAX_LOGGED_ID_CHARS as it is; a longer string as a LongId,
 * which the logger shows masked, then cut, with its length, since an id may be a string of
 * megabytes and each log line is built and masked whole; anything else by its type. Only logs use
 * it: a reply always carries the id exactly as it came.
 */
export function toLoggedId(id: unknown): unknown {
  if (typeof id === 'string') return id.length <= MAX_LOGGED_ID_CHARS ? id : new LongId(id);
  if (id === undefined || id === null || typeof id === 'number' || typeof id === 'boolean') return id;
  return Array.isArray(id) ? '(an array)' : '(an object)';
}

export function errorReply(id: JsonRpcId | null, code: number, message: string, data?: unknown): JsonObject {
  const error: JsonObject = { code, message };
  if (data !== undefined) error.data = data;
  return { jsonrpc: '2.0', id, error };
}

export function bridgeErrorReply(id: JsonRpcId | null, error: BridgeError): JsonObject {
  return errorReply(id, error.rpcCode, error.message, toErrorData(error));
}

/** A pasted multi-line message fails line by line: the parse error says why. */
export const ONE_LINE_HINT =
  'each message must be on one line (stdio carries one JSON-RPC message per line); a message spread over several lines fails line by line';

function reject(reason: string, ids: (JsonRpcId | null)[], code: number, message: string): RejectedLine {
  const data = code === -32700 ? { bridgeCode: 'PARSE_ERROR', reason, hint: ONE_LINE_HINT } : { bridgeCode: 'INVALID_REQUEST', reason };
  return { kind: 'rejected', reason, replies: ids.map((id) => errorReply(id, code, message, data)) };
}

const INVALID = BRIDGE_ERRORS.INVALID_REQUEST.rpcCode;

/**
 * Checks one message object; returns what it is, paired with the body to post, or why it is not a
 * JSON-RPC 2.0 message. Each kind is one object literal, always with the same keys in the same order,
 * so every message of a kind shares one V8 hidden class: a spread such as `{ ...checked, body }` makes
 * a new hidden class for every message, and every property read of it after that a megamorphic miss.
 */
function checkMessage(value: unknown, body: RequestBody): IncomingMessage | { problem: string; id: JsonRpcId | null } {
  if (!isJsonObject(value)) return { problem: 'a JSON-RPC message must be a JSON object', id: null };
  const usableId = isUsableId(value.id) ? value.id : null;
  if (value.jsonrpc !== '2.0') return { problem: 'jsonrpc must be "2.0"', id: usableId };
  const hasId = 'id' in value;
  // An integer past 2^53 (a Go or Java server's int64 id) is a usable id of a response: the
  // client's answer to that server's request goes on as the line it came in, the number's digits
  // untouched, and nothing here needs its value. A request's id is answered by the bridge itself,
  // which can write back exactly only what a double holds.
  const responseWithLargeId = usableId === null && typeof value.id === 'number' && Number.isInteger(value.id) && !('method' in value);
  if (hasId && usableId === null && !responseWithLargeId) {
    return {
      problem:
        typeof value.id === 'number' && Number.isInteger(value.id)
          ? 'a request id must be a string or an integer of at most 2^53 in magnitude (the bridge answers under ids it can write back exactly)'
          : 'id must be a string or an integer',
      id: null,
    };
  }
  if ('method' in value) {
    if (typeof value.method !== 'string') return { problem: 'method must be a string', id: usableId };
    if ('params' in value && !isJsonObject(value.params)) {
      return { problem: 'params must be an object', id: usableId };
    }
    if (usableId !== null) return { kind: 'request', id: usableId, method: value.method, message: value, body };
    return { kind: 'notification', method: value.method, message: value, body };
  }
  // No method: a response to a request the server sent (legacy sampling, elicitation, roots, ping).
  if ((usableId !== null || responseWithLargeId) && 'result' in value !== 'error' in value) {
    return { kind: 'response', id: usableId ?? (value.id as number), message: value, body };
  }
  return { problem: 'not a request, notification or response', id: usableId };
}

/**
 * Checks one stdin line before anything is posted: a line that is not one JSON-RPC 2.0 message gets its error reply here.
 * Never throws: even a 100,000-level nested line is answered, not fatal.
 */
export function checkLine(line: string): CheckedLine {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch (error) {
    // Deep nesting overflows the parser's stack: a RangeError, still "not parseable JSON" for us.
    const detail = error instanceof Error ? error.message : String(error);
    return reject(`not valid JSON: ${detail}`, [null], BRIDGE_ERRORS.PARSE_ERROR.rpcCode, 'Parse error: the line is not valid JSON');
  }
  if (Array.isArray(parsed)) {
    // MCP removed batching in 2025-06-18 (changelog major 1); 2026-07-28 POSTs carry one message.
    const ids = parsed
      .filter(isJsonObject)
      .map((element) => element.id)
      .filter(isUsableId);
    const message = 'Invalid Request: batches (JSON arrays) are not supported; send one JSON-RPC message per line';
    return reject('a JSON array (batch)', ids.length > 0 ? ids : [null], INVALID, message);
  }
  return checkParsed(parsed, line);
}

/**
 * Checks a line's value that is not an array (parsed, or abridged from its bytes) and pairs it with
 * the body to post: the line itself, so the message goes to the server exactly as written.
 */
export function checkParsed(value: unknown, body: RequestBody, abridged = false): CheckedLine {
  const checked = checkMessage(value, body);
  if ('problem' in checked) {
    return reject(checked.problem, [checked.id], INVALID, `Invalid Request: ${checked.problem}`);
  }
  // Only a large line is abridged: the one extra key costs its rare messages a second hidden class.
  if (abridged) checked.abridged = true;
  return checked;
}

/** True when `text` can be written to stdout as one line as it is (JSON never needs a raw CR or LF). */
export function isSingleLine(text: string): boolean {
  return !/[\r\n]/.test(text);
}

/** The 2026-07-28 version a request's body claims, if any (the era is a property of the body: 2026-07-28 requests carry their version in `_meta`). */
export function modernVersionOf(message: JsonObject): string | undefined {
  const params = message.params;
  if (!isJsonObject(params)) return undefined;
  const meta = params._meta;
  if (!isJsonObject(meta)) return undefined;
  const version = meta[MODERN_VERSION_META_KEY];
  return typeof version === 'string' ? version : undefined;
}

/** The request's `params._meta.progressToken` (a string or an integer: basic/utilities/progress), if it names one. */
export function progressTokenOf(message: JsonObject): string | number | undefined {
  const params = message.params;
  if (!isJsonObject(params)) return undefined;
  const meta = params._meta;
  if (!isJsonObject(meta)) return undefined;
  const token = meta.progressToken;
  return typeof token === 'string' || typeof token === 'number' ? token : undefined;
}

/** What a message from the server is, for routing: the final reply, or something to pass on. */
export type ServerMessage =
  | { kind: 'response'; id: JsonRpcId; message: JsonObject }
  /** A response that carries both `result` and `error`: JSON-RPC 2.0 §5 allows exactly one. */
  | { kind: 'malformed-response'; id: JsonRpcId; message: JsonObject }
  | { kind: 'other'; message: JsonObject };

/** Classifies a message received from the server. Returns undefined for anything not a JSON-RPC object. */
export function classifyServerMessage(value: unknown): ServerMessage | undefined {
  if (!isJsonObject(value) || value.jsonrpc !== '2.0') return undefined;
  if (typeof value.method === 'string') return { kind: 'other', message: value };
  if (('result' in value || 'error' in value) && (isUsableId(value.id) || value.id === null)) {
    if (value.id === null) return { kind: 'other', message: value };
    if ('result' in value && 'error' in value) return { kind: 'malformed-response', id: value.id, message: value };
    return { kind: 'response', id: value.id, message: value };
  }
  return undefined;
}
