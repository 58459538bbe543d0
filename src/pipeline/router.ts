// Routes what the server sends: a response settles its pending request, anything else goes to stdout.

import type { InFlight } from './in-flight.js';
import { classifyServerMessage, toLoggedId, type JsonObject } from '../core/json-rpc.js';
import type { Logger } from '../logging/logger.js';
import type { ToolFilter } from './tool-filter.js';
import { malformedResponse, type RegisteredRequest, type ServerMessageSink } from '../transports/transport.js';

export interface RouterOptions {
  inFlight: InFlight;
  write: (message: JsonObject, serialised?: string | Buffer) => Promise<boolean>;
  logger: Logger;
  /** --allow-tools / --deny-tools: hidden tools are taken out of every tools/list response. */
  toolFilter?: ToolFilter | undefined;
  /** Where a filter that matches nothing is said (logger.warn when absent). */
  warn?: (message: string) => void;
}

/** The sink every transport hands server messages to: the one place a response is matched to its request. */
export class Router implements ServerMessageSink {
  readonly #options: RouterOptions;

  constructor(options: RouterOptions) {
    this.#options = options;
  }

  /**
   * Writes the final response of `pending`, after its era's bookkeeping (a 2025 initialize's
   * session, a 2026 tools/list's header schemas). `serialised` is the server's own single-line
   * text, used as is unless the bookkeeping changed the message.
   */
  async answer(request: RegisteredRequest, message: JsonObject, serialised?: string | Buffer, finish?: (shown: JsonObject) => JsonObject): Promise<void> {
    // Only the very request registered under this id, while it waits: a late answer to a request
    // already answered, cancelled or timed out is written nowhere.
    const pending = this.#options.inFlight.get(request.id);
    if (pending !== request) return;
    // Filtered first, so the transport's bookkeeping (x-mcp-header schemas) never holds a hidden
    // tool. A page the bridge asked for itself is filtered once merged (the registry keeps hidden
    // tools out on its own).
    const shown = pending.held ? message : this.#shown(pending, message);
    const reply = finish === undefined ? shown : finish(shown);
    await pending.settle(reply, reply === message ? serialised : undefined);
  }

  /**
   * A message that is not the response the reading stream waits for: a server request or
   * notification (written as it arrives), or a response to another outstanding request (a
   * resumed stream, the listen stream). `owner` is the request whose stream carried it.
   */
  async route(value: unknown, serialised: string | Buffer | undefined, owner?: RegisteredRequest): Promise<void> {
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
          const shown = target.held ? routed.message : this.#shown(target, routed.message);
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
  #shown(pending: RegisteredRequest, message: JsonObject): JsonObject {
    const filter = this.#options.toolFilter;
    if (filter === undefined || pending.method !== 'tools/list') return message;
    // Once per tools/list result: a pattern that matches nothing is most often a typo (task_* for tasks_*).
    const warn = this.#options.warn ?? ((text: string) => this.#options.logger.warn(text));
    for (const warning of filter.listWarnings(message)) warn(warning);
    return filter.filterListResponse(message);
  }
}
