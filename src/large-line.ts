// Checks a stdin line too large to decode: its validity and what routing reads, from its bytes.

import { isUtf8 } from 'node:buffer';
import { scanJson, type ScannedMember } from './json-scan.js';
import { checkLine, checkParsed, type CheckedLine, type IncomingMessage, type JsonObject } from './json-rpc.js';

/**
 * How many levels of objects too large to decode whole are opened for routing (the message, its
 * params, their arguments, …): the facts the bridge reads (id, method, params.name, params._meta,
 * x-mcp-header argument values) sit near the top. A large value deeper than this is left out.
 */
export const MAX_ABRIDGED_DEPTH = 8;

/**
 * A value left out of an abridged message: a string or array too large to decode for routing (or
 * an object nested too deep). The bytes posted still carry it; the bridge never reads it, so a
 * tool argument bound to a header that is this large is sent without that header.
 */
export class OmittedValue {
  constructor(readonly bytes: number) {
    Object.freeze(this);
  }

  /** Never serialised in place of the value it stands for: a message built from an abridged one would be wrong. */
  toJSON(): never {
    throw new Error('a value left out of a large line cannot be serialised; the line itself is what is posted');
  }
}

/** What a large line is: a message (perhaps abridged), a rejection, not UTF-8, or blank (skipped). */
export type LargeLineCheck = CheckedLine | { kind: 'not-utf8'; bytes: number } | { kind: 'blank' };

/**
 * Checks a line over LARGE_LINE_BYTES given as the pieces it arrived in. A valid UTF-8 JSON object
 * is checked from a scan of its bytes, with its large strings left out, and its bytes are what is
 * posted: the line never exists as a string or a parsed tree. Anything else (not an object, not
 * JSON, not UTF-8, an initialize, an id or method too large to read from a scan) takes the path a
 * short line takes, from its decoded text, so it is answered exactly as a short one is.
 */
export function checkLargeLine(pieces: readonly Buffer[], bytes: number): LargeLineCheck {
  const message = abridge(pieces);
  if (message !== undefined) return checkParsed(message, pieces, true);
  const whole = Buffer.concat(pieces, bytes);
  if (!isUtf8(whole)) return { kind: 'not-utf8', bytes };
  const text = whole.toString('utf8');
  // Blank by the same test a short line passes (line-reader.ts): any whitespace, not only JSON's.
  return text.trim() === '' ? { kind: 'blank' } : checkLine(text);
}

/** The message with every large value decoded: for the few readers of a whole tree (the era translator). */
export function wholeMessage<M extends IncomingMessage>(incoming: M): M {
  if (incoming.abridged !== true || typeof incoming.body === 'string') return incoming;
  const message = JSON.parse(Buffer.concat(incoming.body).toString('utf8')) as JsonObject;
  const whole = { ...incoming, message };
  delete whole.abridged;
  return whole;
}

/** The members checkLine reads to classify a message: each must be exact, never left out. */
const CLASSIFYING_KEYS = ['jsonrpc', 'id', 'method'] as const;

/** The line as an abridged object, or undefined when only the whole decode can judge it. */
function abridge(pieces: readonly Buffer[]): JsonObject | undefined {
  const scan = scanJson(pieces);
  if (scan.kind !== 'object' || !scan.utf8) return undefined;
  const message = abridgeObject(pieces, scan.members, 0);
  if (message === undefined) return undefined;
  if (CLASSIFYING_KEYS.some((key) => message[key] instanceof OmittedValue)) return undefined;
  // A large params that is not an object is refused with the reason checkLine gives.
  if (message.params instanceof OmittedValue) return undefined;
  // The session keeps the initialize params (legacy-session.ts), and they are small anyway.
  if (message.method === 'initialize') return undefined;
  return message;
}

function abridgeObject(pieces: readonly Buffer[], members: readonly ScannedMember[], depth: number): JsonObject | undefined {
  const object: JsonObject = {};
  for (const member of members) {
    if (member.key === undefined) return undefined; // a key too large to decode: rare enough to decode whole
    let value: unknown;
    if (member.small) value = member.value;
    else if (depth === 1 && member.key === '_meta') {
      // Request metadata (progress token, protocol fields) is read and copied into the bridge's own
      // requests (basic §_meta): always exact, whatever its size.
      value = JSON.parse(Buffer.concat(slice(pieces, member.start, member.size)).toString('utf8')) as unknown;
    } else if (depth < MAX_ABRIDGED_DEPTH && slice(pieces, member.start, 1)[0]?.[0] === OPEN_BRACE) {
      const inner = slice(pieces, member.start, member.size);
      if (depth > 0) {
        // Opened when first read: each opening scans the object's bytes again, and below params
        // most are never read (a 2025-06-18 session reads no argument at all).
        defineOpenedOnRead(object, member.key, () => abridgeInner(inner, depth + 1) ?? decodeWhole(inner));
        continue;
      }
      value = abridgeInner(inner, depth + 1);
      if (value === undefined) return undefined;
    } else value = new OmittedValue(member.size);
    setMember(object, member.key, value);
  }
  return object;
}

/** The object `inner` holds (valid JSON: the whole line was scanned), abridged; undefined when a key is too large to read. */
function abridgeInner(inner: readonly Buffer[], depth: number): JsonObject | undefined {
  const scan = scanJson(inner);
  return scan.kind === 'object' ? abridgeObject(inner, scan.members, depth) : undefined;
}

function decodeWhole(inner: readonly Buffer[]): JsonObject {
  return JSON.parse(Buffer.concat(inner).toString('utf8')) as JsonObject;
}

/** An own data property as JSON.parse makes it ("__proto__" included); a later duplicate replaces it. */
function setMember(object: JsonObject, key: string, value: unknown): void {
  Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
}

/** A member computed the first time it is read, then an ordinary data property. */
function defineOpenedOnRead(object: JsonObject, key: string, open: () => unknown): void {
  Object.defineProperty(object, key, {
    get() {
      const value = open();
      setMember(object, key, value);
      return value;
    },
    set(value: unknown) {
      setMember(object, key, value);
    },
    enumerable: true,
    configurable: true,
  });
}

const OPEN_BRACE = 0x7b;

/** The pieces' bytes from `start`, `size` of them, as views of the same memory (nothing copied). */
function slice(pieces: readonly Buffer[], start: number, size: number): Buffer[] {
  const views: Buffer[] = [];
  let end = start + size;
  for (const piece of pieces) {
    if (end <= 0) break;
    if (start < piece.length) views.push(piece.subarray(Math.max(start, 0), Math.min(end, piece.length)));
    start -= piece.length;
    end -= piece.length;
  }
  return views;
}
