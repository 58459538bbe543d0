// --transport auto: the first request goes as Streamable HTTP; a refusal that says "no POST here" tries the 2024-11-05 HTTP+SSE stream once, and the choice holds for the run.

import { isJsonObject, type IncomingMessage, type JsonRpcId, type RequestBody } from '../core/json-rpc.js';
import { isBridgeError } from '../core/errors.js';
import type { Logger } from '../logging/logger.js';
import type { PendingRequest } from '../pipeline/in-flight.js';
import type { Reply } from '../http/reply-reader.js';
import { ENDPOINT_ORIGIN_HINT } from './http-sse-endpoint.js';
import type { SseTransport } from './http-sse.js';

type RequestMessage = Extract<IncomingMessage, { kind: 'request' }>;
type OtherMessage = Exclude<IncomingMessage, { kind: 'request' }>;

/** Where the bridge sends each message read from stdin: the forwarder (Streamable HTTP) or the HTTP+SSE transport. */
export interface MessageTransport {
  forwardRequest(incoming: RequestMessage): Promise<void>;
  forwardOther(incoming: OtherMessage): Promise<void>;
}

/**
 * The statuses a Streamable HTTP client treats as "this server may speak the older transport"
 * (2025-03-26 and later transports §Backwards Compatibility: a POST that fails with 400, 404 or
 * 405 is followed by a GET that expects an `endpoint` event).
 */
const FALLBACK_STATUSES: ReadonlySet<number> = new Set([400, 404, 405]);

export interface TransportChoiceOptions {
  streamable: MessageTransport;
  sse: SseTransport;
  logger: Logger;
  /** Called once, with the transport every later message goes to. */
  onChosen: (transport: MessageTransport, name: 'streamable-http' | 'sse') => void;
}

/**
 * Until the first request has its answer the transport is not known: that request goes out as
 * Streamable HTTP, and only it may fall back (once a POST worked, a later 404 means what it means
 * on Streamable HTTP). When it is an initialize, the messages read meanwhile wait here, in order,
 * each still counted as a message in flight (so stdin stops being read at the bridge's bound), and
 * go to the transport chosen once it is answered: a 2025 session holds them back until then
 * anyway (legacy-session.ts), so on Streamable HTTP nothing waits longer than before. Any other
 * first request holds nothing back: a client that skips initialize speaks a revision the
 * 2024-11-05 transport does not, and its other requests go as they always went. Notifications
 * before any request go as Streamable HTTP.
 */
export class TransportChoice implements MessageTransport {
  readonly #options: TransportChoiceOptions;
  #state: 'undecided' | 'probing' | 'decided' = 'undecided';
  #switched = false;
  /** True while an initialize decides: messages wait in `#held`. */
  #holding = false;
  #held: (() => void)[] = [];
  /** The id of the first request, the only one that may fall back. */
  #probe: JsonRpcId | undefined;

  constructor(options: TransportChoiceOptions) {
    this.#options = options;
  }

  forwardRequest(incoming: RequestMessage): Promise<void> {
    if (this.#state === 'undecided') {
      this.#state = 'probing';
      this.#probe = incoming.id;
      this.#holding = incoming.method === 'initialize';
      return this.#options.streamable.forwardRequest(incoming).finally(() => this.#decide());
    }
    if (this.#holding) return this.#hold(() => this.#chosen().forwardRequest(incoming));
    return this.#chosen().forwardRequest(incoming);
  }

  forwardOther(incoming: OtherMessage): Promise<void> {
    if (this.#holding) return this.#hold(() => this.#chosen().forwardOther(incoming));
    return this.#chosen().forwardOther(incoming);
  }

  /**
   * The transport as chosen so far, without waiting for the choice: for the bridge's own requests
   * (the era translator's), which the first request's answer may start, and which must not wait
   * behind it.
   */
  current(): MessageTransport {
    return this.#chosen();
  }

  /**
   * Asked by the forwarder about a refused POST before its error is thrown. Undefined when the
   * fallback does not apply: not the first request, a 401 or any other status, or a body that is a
   * JSON-RPC error (a server that answers JSON-RPC speaks Streamable HTTP, whatever its status).
   * Otherwise the event stream is tried: true once the request went there (and is answered there),
   * false when the URL offers no such stream, and the POST's own error stands.
   */
  fallback(pending: PendingRequest, body: RequestBody, reply: Extract<Reply, { kind: 'http-error' }>): Promise<boolean> | undefined {
    if (this.#state !== 'probing' || pending.id !== this.#probe || this.#switched || !mayFallBack(reply.status, reply.parsed)) return undefined;
    return this.#fallBack(pending, body, reply.status);
  }

  async #fallBack(pending: PendingRequest, body: RequestBody, status: number): Promise<boolean> {
    const { sse, logger } = this.#options;
    logger.debug({ status }, 'the first POST was refused: trying the HTTP+SSE (2024-11-05) event stream');
    try {
      await sse.connect();
    } catch (error) {
      // An endpoint on another origin is a refusal of its own, said as such: the server does speak
      // the older transport, and the bridge will not follow it there.
      if (isBridgeError(error) && error.context.hint === ENDPOINT_ORIGIN_HINT) throw error;
      logger.debug({ status, why: isBridgeError(error) ? error.message : String(error) }, 'no HTTP+SSE event stream either; the POST error stands');
      return false;
    }
    this.#switched = true;
    logger.info('the server speaks the HTTP+SSE transport (2024-11-05): using it for this run');
    await sse.send(pending, body);
    return true;
  }

  #hold(send: () => Promise<void>): Promise<void> {
    return new Promise<void>((resolve) => this.#held.push(() => resolve(send())));
  }

  #chosen(): MessageTransport {
    return this.#switched ? this.#options.sse : this.#options.streamable;
  }

  #decide(): void {
    if (this.#state === 'decided') return;
    this.#state = 'decided';
    this.#holding = false;
    this.#options.onChosen(this.#chosen(), this.#switched ? 'sse' : 'streamable-http');
    const held = this.#held;
    this.#held = [];
    for (const send of held) send();
  }
}

/** True when a POST refused with `status` and this parsed body may mean the 2024-11-05 transport (doctor asks the same). */
export function mayFallBack(status: number, parsed: unknown): boolean {
  return FALLBACK_STATUSES.has(status) && !isJsonRpcError(parsed);
}

/** A JSON-RPC error object as a body: `{"jsonrpc":"2.0","error":{…}}`, with any id. */
function isJsonRpcError(parsed: unknown): boolean {
  return isJsonObject(parsed) && parsed.jsonrpc === '2.0' && isJsonObject(parsed.error);
}
