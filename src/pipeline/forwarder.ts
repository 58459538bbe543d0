// Owns each message's lifecycle: a request registered, filtered, carried by the transport, and answered exactly once; other messages posted within a bound.

import type { Endpoint } from '../http/endpoint.js';
import { BridgeError } from '../core/errors.js';
import { type InFlight } from './in-flight.js';
import { DeadlineList } from '../core/deadlines.js';
import { errorReply, isJsonObject, modernVersionOf, toLoggedId, type JsonObject } from '../core/json-rpc.js';
import type { Logger } from '../logging/logger.js';
import type { ToolFilter } from './tool-filter.js';
import type { PageMerger } from './page-merger.js';
import { Aborts, untilAborted, type AbortSource } from '../core/abort.js';
import { RefusedPost, type OtherMessage, type RequestMessage, type Transport } from '../transports/transport.js';

/** Bound on posting a notification or response when requests have no deadline (`--request-timeout 0`). */
export const NOTIFICATION_TIMEOUT_MS = 60_000;

export interface ForwarderDeps {
  /** What carries each message to the server; its failures are classified with the endpoint's rule. */
  transport: Transport;
  endpoint: Endpoint;
  inFlight: InFlight;
  write: (message: JsonObject, serialised?: string | Buffer) => Promise<boolean>;
  logger: Logger;
  /** --allow-tools / --deny-tools: a call to a hidden tool is answered here, never posted. */
  toolFilter?: ToolFilter | undefined;
  /** The request deadline in ms (0 = none), which also bounds posting any other message. */
  requestTimeoutMs: number;
  /** Merges the pages of a tools/list or prompts/list without a cursor; absent with --no-merge-pages. */
  pages?: PageMerger | undefined;
}

/** The deadlines of posted notifications and responses, on one timer. */
const postDeadlines = new DeadlineList();

/** A protocol version may only be sent as given; one that cannot be a header value is refused locally. */
const SAFE_VERSION = /^[\x21-\x7e]{1,64}$/;

/**
 * The one owner of a request's lifecycle, whatever transport carries it: registration (a unique
 * id, its deadline), the tool filter, the transport's exchange raced against the request's own
 * abort, the mapping of any failure to the error it is answered with, and exactly one answer.
 */
export class Forwarder {
  readonly #deps: ForwarderDeps;

  constructor(deps: ForwarderDeps) {
    this.#deps = deps;
  }

  /**
   * Sends a request read from stdin (or, with `own`, one of the bridge's own); its one reply is
   * written whatever happens.
   */
  async forwardRequest(incoming: RequestMessage, own = false): Promise<void> {
    const { inFlight, logger } = this.#deps;
    const { id, method, message } = incoming;
    const modernVersion = modernVersionOf(message);
    // subscriptions/listen stays open for hours by design (2026-07-28 subscriptions): no deadline.
    const pending = inFlight.begin(id, method, modernVersion === undefined ? 'legacy' : 'modern', { deadline: method !== 'subscriptions/listen', own });
    if (pending === undefined) {
      await this.#deps.write(
        errorReply(id, -32600, 'Invalid Request: this id is already used by a request that is still outstanding', { bridgeCode: 'INVALID_REQUEST' }),
      );
      return;
    }
    if (modernVersion !== undefined && !SAFE_VERSION.test(modernVersion)) {
      await pending.settle(
        errorReply(id, -32600, 'Invalid Request: the protocol version in _meta is not a valid header value', { bridgeCode: 'INVALID_REQUEST' }),
      );
      return;
    }
    const hidden = this.#deps.toolFilter?.refusal(method, message);
    if (hidden !== undefined) {
      logger.info({ id: toLoggedId(id), tool: hidden.context.tool, filter: hidden.context.filter }, 'tools/call to a filtered tool answered by the bridge');
      await pending.fail(hidden);
      return;
    }
    const debug = logger.isLevelEnabled('debug');
    const started = debug ? performance.now() : 0;
    try {
      // Raced against the request's signal: a deadline or cancel ends this task at once, whatever
      // undici, a decoder or the server do with the exchange meanwhile.
      // A list to merge is asked page by page (the pages after the first are the bridge's own
      // requests) under this request's deadline and cancellation; its one answer is still this one.
      const pages = this.#deps.pages;
      const work = pages?.wants(incoming) === true ? pages.merge(pending, incoming) : this.#deps.transport.request(pending, incoming);
      await untilAborted(work, pending.aborts);
    } catch (error) {
      if (!pending.done) {
        const failure = this.#failureOf(error, pending.aborts);
        const fields = { method, id: toLoggedId(id), code: failure.code, status: failure.context.status, hint: failure.context.hint };
        if (error instanceof RefusedPost && error.expected) logger.debug(fields, failure.message);
        else logger.warn(fields, failure.message);
        await pending.fail(failure);
      }
    } finally {
      // The exactly-once promise does not rest on every path above being right: a request that
      // somehow has no reply by now gets one.
      if (!pending.done) await pending.fail(new BridgeError('INTERNAL', `the bridge finished ${method} without an answer`));
      if (debug)
        logger.debug({ method, id: toLoggedId(id), cancelled: pending.cancelled || undefined, ms: Math.round(performance.now() - started) }, 'request done');
    }
  }

  /**
   * Posts a notification or a response (answer to a server request); failures are only logged. A
   * `notifications/cancelled` for an outstanding request cancels it here: nothing more is written
   * for it, whatever the server does.
   */
  async forwardOther(incoming: OtherMessage): Promise<void> {
    const { inFlight, logger } = this.#deps;
    const method = incoming.kind === 'notification' ? incoming.method : undefined;
    let cancelled;
    if (method === 'notifications/cancelled') {
      const params = incoming.message.params;
      const requestId = isJsonObject(params) ? params.requestId : undefined;
      cancelled = typeof requestId === 'string' || typeof requestId === 'number' ? inFlight.cancel(requestId) : undefined;
      if (cancelled !== undefined) logger.debug({ id: toLoggedId(cancelled.id), era: cancelled.era }, 'request cancelled by the client');
    }
    const label = method ?? '(response)';
    // A deadline on the shared list, removed when the post is done: no timer or AbortController
    // per message (AbortSignal.timeout() would even keep each one alive for its whole timeout).
    const aborts = new Aborts();
    const timeoutMs = this.#deps.requestTimeoutMs || NOTIFICATION_TIMEOUT_MS;
    const deadline = postDeadlines.add(timeoutMs, () =>
      aborts.abort(new BridgeError('REQUEST_TIMEOUT', `the server did not take ${label} within ${timeoutMs} ms`, { timeoutMs })),
    );
    try {
      await untilAborted(this.#deps.transport.post(incoming, aborts, cancelled), aborts);
    } catch (error) {
      const failure = this.#failureOf(error, aborts);
      logger.warn({ method: label, code: failure.code, status: failure.context.status, hint: failure.context.hint }, failure.message);
    } finally {
      postDeadlines.remove(deadline);
    }
  }

  /** The one mapping of an exchange's failure to the error a request is answered with (http/failures.ts). */
  #failureOf(error: unknown, signal: AbortSource): BridgeError {
    return this.#deps.endpoint.failure(error, signal);
  }
}
