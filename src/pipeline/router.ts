// Routes what the server sends: a response settles its pending request, anything else goes to stdout.

import type { EraProtocol } from '../eras/era.js';
import { BridgeError } from '../core/errors.js';
import type { InFlight, PendingRequest } from './in-flight.js';
import { classifyServerMessage, toLoggedId, type JsonObject } from '../core/json-rpc.js';
import type { Logger } from '../logging/logger.js';
import type { ToolFilter } from './tool-filter.js';
import { type HttpExchange } from '../http/send.js';

export interface RouterOptions {
  inFlight: InFlight;
  write: (message: JsonObject, serialised?: string | Buffer) => Promise<boolean>;
  logger: Logger;
  /** --allow-tools / --deny-tools: hidden tools are taken out of every tools/list response. */
  toolFilter?: ToolFilter | undefined;
  /** Where a filter that matches nothing is said (logger.warn when absent). */
  warn?: (message: string) => void;
}

export class Router {
  readonly #options: RouterOptions;

  constructor(options: RouterOptions) {
    this.#options = options;
  }

  /**
   * Writes the final response of `pending`, after its era's bookkeeping (a 2025 initialize's
   * session, a 2026 tools/list's header schemas). `serialised` is the server's own single-line
   * text, used as is unless the bookkeeping changed the message.
   */
  async deliver(
    pending: PendingRequest,
    message: JsonObject,
    era: EraProtocol,
    exchange: HttpExchange | undefined,
    serialised?: string | Buffer,
  ): Promise<void> {
    // Filtered first, so the era's bookkeeping (x-mcp-header schemas) never holds a hidden tool.
    const reply = era.onResponse(pending.method, this.#shown(pending, message), exchange);
    await pending.settle(reply, reply === message ? serialised : undefined);
  }

  /**
   * A message that is not the response the reading stream waits for: a server request or
   * notification (written as it arrives), or a response to another outstanding request (a
   * resumed stream, the listen stream). `owner` is the request whose stream carried it.
   */
  async route(value: unknown, serialised: string | Buffer | undefined, owner?: PendingRequest): Promise<void> {
    const routed = classifyServerMessage(value);
    if (routed === undefined) {
      this.#options.logger.warn('the server sent something that is not a JSON-RPC message; skipped');
      return;
    }
    if (routed.kind !== 'other') {
      const target = this.#options.inFlight.get(routed.id);
      if (target !== undefined && !target.done) {
        if (routed.kind === 'malformed-response') await target.fail(malformedResponse());
        else {
          const shown = this.#shown(target, routed.message);
          await target.settle(shown, shown === routed.message ? serialised : undefined);
        }
        return;
      }
      this.#options.logger.warn({ id: toLoggedId(routed.id) }, 'the server sent a response for no outstanding request; dropped');
      return;
    }
    // Requests and notifications for a request that is finished or cancelled are not written:
    // after a cancel "nothing more is written for that request id".
    if (owner?.done === true) return;
    await this.#options.write(routed.message, serialised);
  }

  /** The response as the client may see it: a tools/list without the tools the filters hide. */
  #shown(pending: PendingRequest, message: JsonObject): JsonObject {
    const filter = this.#options.toolFilter;
    if (filter === undefined || pending.method !== 'tools/list') return message;
    // Once per tools/list result: a pattern that matches nothing is most often a typo (task_* for tasks_*).
    const warn = this.#options.warn ?? ((text: string) => this.#options.logger.warn(text));
    for (const warning of filter.listWarnings(message)) warn(warning);
    return filter.filterListResponse(message);
  }
}

/** The error a request gets when its response carries both `result` and `error` (JSON-RPC 2.0 §5). */
export function malformedResponse(): BridgeError {
  return new BridgeError('REMOTE_BAD_REPLY', 'the server answered with both a result and an error; JSON-RPC allows exactly one', {
    hint: 'the server is not following JSON-RPC 2.0; report it to its maintainers',
  });
}
