// Checks a stdin line too large to decode: its validity and what routing reads, from its bytes.

import { isUtf8 } from 'node:buffer';
import { scanJson, type JsonScan, type ScannedMember } from '../core/json-scan.js';
import { checkLine, checkParsed, isUsableId, type CheckedLine, type IncomingMessage, type JsonObject, type JsonRpcId } from '../core/json-rpc.js';
import { defineOpenedOnRead, setMember } from '../core/lazy-object.js';
import { OPEN_BRACE } from '../core/bytes.js';

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

/** A line that is not UTF-8: its size, and the id its answer goes under (see readableId). */
export interface NotUtf8Line {
  kind: 'not-utf8';
  bytes: number;
  id: JsonRpcId | null;
}

/** What a large line is: a message (perhaps abridged), a rejection, not UTF-8, or blank (skipped). */
export type LargeLineCheck = CheckedLine | NotUtf8Line | { kind: 'blank' };

/**
 * Checks a line over LARGE_LINE_BYTES given as the pieces it arrived in. A valid UTF-8 JSON object
 * is checked from a scan of its bytes, with its large strings left out, and its bytes are what is
 * posted: the line never exists as a string or a parsed tree. Anything else (not an object, not
 * JSON, not UTF-8, an initialize, an id or method too large to read from a scan) takes the path a
 * short line takes, from its decoded text, so it is answered exactly as a short one is.
 */
export function checkLargeLine(pieces: readonly Buffer[], bytes: number): LargeLineCheck {
  const scan = scanJson(pieces);
  if (scan.kind === 'object' && !scan.utf8) return { kind: 'not-utf8', bytes, id: idOf(pieces, scan.members) };
  const message = abridge(pieces, scan);
  if (message !== undefined) return checkParsed(message, pieces, true);
  const whole = Buffer.concat(pieces, bytes);
  // Not an object, or not JSON: no id can be read.
  if (!isUtf8(whole)) return { kind: 'not-utf8', bytes, id: null };
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

/**
 * The id of a line whose bytes are not all UTF-8, when it can be read intact: the line is one JSON
 * object (valid JSON once decoded: a byte that is not UTF-8 can only stand inside a string), its
 * `id` member (the last one, as JSON.parse keeps the last of duplicates) is a string or an
 * integer, and that member's own bytes are UTF-8. A U+FFFD sent as its bytes (EF BF BD) is a
 * character like any other; one a decoder would put in place of a broken byte is not the id the
 * client sent, so such an id is null. The client waiting for an id it can read hears back under it
 * (JSON-RPC 2.0 §5: null only when the id could not be detected).
 */
export function readableId(pieces: readonly Buffer[]): JsonRpcId | null {
  const scan = scanJson(pieces);
  return scan.kind === 'object' ? idOf(pieces, scan.members) : null;
}

function idOf(pieces: readonly Buffer[], members: readonly ScannedMember[]): JsonRpcId | null {
  let id: ScannedMember | undefined;
  for (const member of members) if (member.key === 'id') id = member;
  if (id === undefined) return null;
  const bytes = Buffer.concat(slice(pieces, id.start, id.size));
  if (!isUtf8(bytes)) return null;
  const value: unknown = JSON.parse(bytes.toString('utf8'));
  return isUsableId(value) ? value : null;
}

/** The line as an abridged object, or undefined when only the whole decode can judge it. */
function abridge(pieces: readonly Buffer[], scan: JsonScan): JsonObject | undefined {
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
