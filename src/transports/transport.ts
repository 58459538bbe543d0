// What every transport offers the pipeline above it: carry a registered request until the server answers it, post any other message, close.

import type { Aborts, AbortSource } from '../core/abort.js';
import { BridgeError } from '../core/errors.js';
import type { IncomingMessage, JsonObject, JsonRpcId } from '../core/json-rpc.js';
import type { Era } from '../core/protocol.js';

export type RequestMessage = Extract<IncomingMessage, { kind: 'request' }>;
export type OtherMessage = Exclude<IncomingMessage, { kind: 'request' }>;

/**
 * A request the pipeline registered (its id unique among outstanding ones, its deadline running):
 * what a transport may read and watch. A transport never answers it: it hands the server's
 * response to the sink, or rejects with why there is none, and the pipeline writes the one answer.
 */
export interface RegisteredRequest {
  readonly id: JsonRpcId;
  readonly method: string;
  readonly era: Era;
  /** Aborted by the deadline, a cancel or shutdown; its reason is a BridgeError (or the cancel marker). */
  readonly aborts: AbortSource;
  /** The same as a real AbortSignal (made on first use), for APIs that need one. */
  readonly signal: AbortSignal;
  /** True once the request has its answer, was cancelled, or the bridge is stopping. */
  readonly done: boolean;
  /** When the deadline passes (performance.now() time), undefined when the request has none. */
  readonly deadlineAt: number | undefined;
  /**
   * The bridge's own request (the era translator's), which a client message's answer may start:
   * it never waits behind a client message.
   */
  readonly own: boolean;
  /**
   * Resolves once `done` holds, or once the bridge took the server's reply for itself (the first
   * page of a merged list): either way the transport's part is over. Made on first use (only a
   * transport whose answers arrive elsewhere asks).
   */
  readonly finished: Promise<void>;
}

/** Where a transport hands every message the server sent: the pipeline's router. */
export interface ServerMessageSink {
  /**
   * The response to `request`, read from that request's own reply. It is written after the tool
   * filter and then `finish` (the transport's bookkeeping: a 2025 session, 2026-07-28 header
   * schemas); `serialised` is the server's single-line text, used as is unless either changed it.
   */
  answer(request: RegisteredRequest, message: JsonObject, serialised?: string | Buffer, finish?: (shown: JsonObject) => JsonObject): Promise<void>;
  /**
   * Any other message: a server request or notification (written as it arrives), or a response to
   * whichever outstanding request has its id. `carrier` is the request whose reply carried it:
   * after a cancel nothing more is written for it.
   */
  route(value: unknown, serialised: string | Buffer | undefined, carrier?: RegisteredRequest): Promise<void>;
}

/**
 * One way of moving messages between the bridge and the server (the MCP TypeScript SDK keeps its
 * client transports as siblings behind one such interface, below the layer that owns ids and
 * deadlines). Registration, deadlines, duplicate ids, the tool filter, exactly one answer and the
 * mapping of failures to errors belong to the pipeline above; a transport moves bytes.
 */
export interface Transport {
  /**
   * Sends `request` (`incoming` is the message as read from stdin) and resolves once the server's
   * response went to the sink; rejects with why the server could not be asked or did not answer.
   */
  request(request: RegisteredRequest, incoming: RequestMessage): Promise<void>;
  /**
   * Posts a notification or a response to a server request; resolves once the server took it.
   * For `notifications/cancelled`, `cancelled` is the outstanding request the pipeline just
   * cancelled (undefined when none was): whether the wire still carries the notification is the
   * transport's rule.
   */
  post(incoming: OtherMessage, aborts: Aborts, cancelled: RegisteredRequest | undefined): Promise<void>;
  /** Shutdown has begun: nothing is kept alive from now on (what is in flight still finishes). */
  beginShutdown(): void;
  /** Ends the transport's session and its streams, within `graceMs`. */
  close(graceMs: number): Promise<void>;
}

/**
 * A POST refused with a status and no JSON-RPC answer: the error the request gets, and what the
 * automatic transport choice reads to decide whether the URL may speak the older transport.
 */
export class RefusedPost extends Error {
  override readonly name = 'RefusedPost';
  constructor(
    readonly failure: BridgeError,
    readonly status: number,
    readonly parsed: unknown,
    /** A refusal clients expect and act on (server/discover to a 2025 server): not worth a warning. */
    readonly expected = false,
  ) {
    super(failure.message, { cause: failure });
  }
}

/** True when `message` is the response to `request`: the one comparison of a reply's id with the request it came back on. */
export function isResponseTo(routed: { kind: string; id?: JsonRpcId }, request: RegisteredRequest): boolean {
  return (routed.kind === 'response' || routed.kind === 'malformed-response') && routed.id === request.id;
}

/** The error a request gets when its response carries both `result` and `error` (JSON-RPC 2.0 §5). */
export function malformedResponse(): BridgeError {
  return new BridgeError('REMOTE_BAD_REPLY', 'the server answered with both a result and an error; JSON-RPC allows exactly one', {
    hint: 'the server is not following JSON-RPC 2.0; report it to its maintainers',
  });
}
