// The 2026-07-28 era: no session; every header comes from the message, and tools/list feeds x-mcp-header.

import type { Endpoint } from '../http/endpoint.js';
import { mirroredHeaders, type EraProtocol } from './era.js';
import { isJsonObject, modernVersionOf, type JsonObject } from '../core/json-rpc.js';
import type { Logger } from '../logging/logger.js';
import { readPrivateResponse } from '../http/reply-reader.js';
import type { Mask } from '../logging/outgoing-text.js';
import type { ToolHeaderRegistry } from './tool-headers.js';
import { PROTOCOL_META_PREFIX } from '../core/protocol.js';

/** Pages fetched when the bridge refreshes tools/list for itself after a -32020. */
export const MAX_TOOL_LIST_PAGES = 50;
/** The JSON-RPC code of HeaderMismatch (2026-07-28 schema HEADER_MISMATCH). */
export const HEADER_MISMATCH = -32020;

export interface ModernEraOptions {
  endpoint: Endpoint;
  tools: ToolHeaderRegistry;
  logger: Logger;
  maxMessageBytes: number;
  /** Masks the run's secrets in what the server sent, before any of it is cut for an error. */
  redact: Mask;
}

export class ModernEra implements EraProtocol {
  readonly name = 'modern';
  readonly #options: ModernEraOptions;
  #privateIds = 0;

  constructor(options: ModernEraOptions) {
    this.#options = options;
  }

  headersFor(message: JsonObject, method: string | undefined): Record<string, string> {
    const headers = mirroredHeaders(message, method);
    // From the body, per request, never from connection state (transports §Protocol Version Header).
    const version = modernVersionOf(message);
    if (version !== undefined) headers['mcp-protocol-version'] = version;
    if (method === 'tools/call') {
      for (const [name, value] of Object.entries(this.#options.tools.headersForCall(message.params))) headers[name.toLowerCase()] = value;
    }
    return headers;
  }

  ready(): undefined {
    return undefined; // no handshake: always ready
  }

  isExpired(): boolean {
    return false; // no session, nothing to expire
  }

  heal(): Promise<void> {
    return Promise.resolve();
  }

  onAccepted(): void {
    // Nothing is negotiated in this era.
  }

  onResponse(method: string, message: JsonObject): JsonObject {
    if (method !== 'tools/list' || !isJsonObject(message.result)) return message;
    const { result, invalid } = this.#options.tools.rememberToolsListResult(message.result);
    for (const tool of invalid) {
      this.#options.logger.warn({ tool: tool.name, reason: tool.reason }, 'tool removed from tools/list: invalid x-mcp-header annotation');
    }
    return invalid.length > 0 ? { ...message, result } : message;
  }

  /**
   * After a -32020 HeaderMismatch to a tools/call, the bridge's x-mcp-header schemas may be stale
   * (2026-07-28 Streamable HTTP §Schema Extension): refetch tools/list (all pages), so that the one
   * retry of the call uses current schemas.
   */
  async refreshTools(call: JsonObject, signal: AbortSignal): Promise<void> {
    // Speak as the call did: its protocol fields (version, capabilities, client info) in `_meta`.
    const meta: JsonObject = {};
    const callMeta = isJsonObject(call.params) && isJsonObject(call.params._meta) ? call.params._meta : {};
    for (const [key, value] of Object.entries(callMeta)) {
      if (key.startsWith(PROTOCOL_META_PREFIX)) meta[key] = value;
    }
    let cursor: string | undefined;
    for (let page = 0; page < MAX_TOOL_LIST_PAGES; page++) {
      const id = `fenbs-mcp-tools-refresh-${++this.#privateIds}`;
      const params: JsonObject = { _meta: meta };
      if (cursor !== undefined) params.cursor = cursor;
      const message = { jsonrpc: '2.0', id, method: 'tools/list', params };
      const exchange = await this.#options.endpoint.post(JSON.stringify(message), this.headersFor(message, 'tools/list'), signal);
      const response = await readPrivateResponse(exchange, id, { maxMessageBytes: this.#options.maxMessageBytes, mask: this.#options.redact, signal });
      if (!isJsonObject(response.result)) return;
      this.#options.tools.rememberToolsListResult(response.result);
      cursor = typeof response.result.nextCursor === 'string' ? response.result.nextCursor : undefined;
      if (cursor === undefined) return;
    }
  }
}
