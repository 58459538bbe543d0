// What differs between the 2025 session era and the 2026-07-28 stateless era, as one small interface.

import { encodeHeaderValue, mcpNameFor } from './header-encoding.js';
import type { JsonObject } from '../core/json-rpc.js';
import type { Reply } from '../http/reply-reader.js';
import type { Era } from '../core/protocol.js';
import { type HttpExchange } from '../http/send.js';

/** The protocol a message is posted under; chosen once per message from its body. */
export interface EraProtocol {
  readonly name: Era;
  /** Headers a POST of `message` carries besides the endpoint's own (credential, content type). */
  headersFor(message: JsonObject, method: string | undefined): Record<string, string>;
  /**
   * Undefined when a message may be posted now, else a promise of that moment (a pending 2025
   * initialize holds later messages back). Not a resolved promise: awaiting one would cost every
   * message a turn of the microtask queue for nothing.
   */
  ready(): Promise<void> | undefined;
  /** True when `reply` says the state the request was sent with is gone (a 2025 session expired). */
  isExpired(reply: Reply, sentHeaders: Record<string, string>): boolean;
  /** Re-establishes that state; the caller then sends the message once more. */
  heal(sentHeaders: Record<string, string>): Promise<void>;
  /**
   * Bookkeeping on a request's final response before the client sees it (a 2025 initialize's
   * session id, a 2026 tools/list's header schemas). Returns the reply to write, which is
   * `message` itself unless it had to change.
   */
  onResponse(method: string, message: JsonObject, exchange: HttpExchange | undefined): JsonObject;
  /** A notification the client sent was accepted by the server. */
  onAccepted(method: string | undefined): void;
}

/**
 * The SEP-2243 headers mirrored from the body: `Mcp-Method`, and `Mcp-Name` for the methods that
 * name a tool, prompt or resource (2026-07-28 Streamable HTTP §Standard Request Headers).
 */
export function mirroredHeaders(message: JsonObject, method: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  if (method === undefined) return headers;
  headers['mcp-method'] = encodeHeaderValue(method);
  const name = mcpNameFor(method, message.params);
  if (name !== undefined) headers['mcp-name'] = encodeHeaderValue(name);
  return headers;
}
