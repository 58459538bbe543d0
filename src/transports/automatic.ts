// --transport auto: the first request goes as Streamable HTTP; a refusal that says "no POST here" tries the 2024-11-05 HTTP+SSE stream once, and the choice holds for the run.

import type { Aborts } from '../core/abort.js';
import { isBridgeError } from '../core/errors.js';
import { isJsonObject } from '../core/json-rpc.js';
import type { Logger } from '../logging/logger.js';
import { ENDPOINT_ORIGIN_HINT } from './http-sse-endpoint.js';
import type { HttpSseTransport } from './http-sse.js';
import { RefusedPost, type OtherMessage, type RegisteredRequest, type RequestMessage, type Transport } from './transport.js';

/**
 * The statuses a Streamable HTTP client treats as "this server may speak the older transport"
 * (2025-03-26 and later transports §Backwards Compatibility: a POST that fails with 400, 404 or
 * 405 is followed by a GET that expects an `endpoint` event).
 */
const FALLBACK_STATUSES: ReadonlySet<number> = new Set([400, 404, 405]);

export interface AutomaticTransportOptions {
  streamable: Transport;
  sse: HttpSseTransport;
  logger: Logger;
}

/**
 * Until the first request has its answer the transport is not known: that request goes out as
 * Streamable HTTP, and only it may fall back (once a POST worked, a later 404 means what it means
 * on Streamable HTTP). When it is an initialize, the client's messages read meanwhile wait here, in
 * order (registered already, so their deadlines run and stdin stops being read at the bridge's
 * bound), and go to the transport chosen once it is answered: a 2025 session holds them back until
 * then anyway (legacy-session.ts), so on Streamable HTTP nothing waits longer than before. The
 * bridge's own requests never wait: the era translator may send one while it writes the first
 * request's answer. Any other first request holds nothing back: a client that skips initialize
 * speaks a revision the 2024-11-05 transport does not. Notifications before any request go as
 * Streamable HTTP.
 */
export class AutomaticTransport implements Transport {
  readonly #options: AutomaticTransportOptions;
  #state: 'undecided' | 'probing' | 'decided' = 'undecided';
  #chosen: Transport;
  /** True while an initialize decides: the client's messages wait in `#held`. */
  #holding = false;
  #held: (() => void)[] = [];

  constructor(options: AutomaticTransportOptions) {
    this.#options = options;
    this.#chosen = options.streamable;
  }

  /** Which transport the run speaks, once known. */
  get chosen(): 'streamable-http' | 'sse' | undefined {
    if (this.#state !== 'decided') return undefined;
    return this.#chosen === this.#options.streamable ? 'streamable-http' : 'sse';
  }

  request(request: RegisteredRequest, incoming: RequestMessage): Promise<void> {
    if (this.#state === 'undecided') {
      this.#state = 'probing';
      this.#holding = incoming.method === 'initialize';
      return this.#probe(request, incoming).finally(() => this.#decide());
    }
    if (this.#holding && !request.own) return this.#hold(() => this.#chosen.request(request, incoming));
    return this.#chosen.request(request, incoming);
  }

  post(incoming: OtherMessage, aborts: Aborts, cancelled: RegisteredRequest | undefined): Promise<void> {
    if (this.#holding) return this.#hold(() => this.#chosen.post(incoming, aborts, cancelled));
    return this.#chosen.post(incoming, aborts, cancelled);
  }

  beginShutdown(): void {
    this.#options.streamable.beginShutdown();
    this.#options.sse.beginShutdown();
  }

  async close(graceMs: number): Promise<void> {
    await Promise.all([this.#options.streamable.close(graceMs), this.#options.sse.close()]);
  }

  /**
   * The first request, as Streamable HTTP. A refusal without a JSON-RPC error and with one of the
   * fallback statuses (never a 401) tries the event stream: once it named an endpoint, the request
   * goes there and every later message with it; when the URL offers no such stream either, the
   * POST's own refusal stands.
   */
  async #probe(request: RegisteredRequest, incoming: RequestMessage): Promise<void> {
    try {
      await this.#options.streamable.request(request, incoming);
    } catch (error) {
      if (!(error instanceof RefusedPost) || !mayFallBack(error.status, error.parsed)) throw error;
      const { sse, logger } = this.#options;
      logger.debug({ status: error.status }, 'the first POST was refused: trying the HTTP+SSE (2024-11-05) event stream');
      try {
        await sse.connect();
      } catch (refusal) {
        // An endpoint on another origin is a refusal of its own, said as such: the server does speak
        // the older transport, and the bridge will not follow it there.
        if (isBridgeError(refusal) && refusal.context.hint === ENDPOINT_ORIGIN_HINT) throw refusal;
        logger.debug(
          { status: error.status, why: isBridgeError(refusal) ? refusal.message : String(refusal) },
          'no HTTP+SSE event stream either; the POST error stands',
        );
        throw error;
      }
      this.#chosen = sse;
      logger.info('the server speaks the HTTP+SSE transport (2024-11-05): using it for this run');
      await sse.request(request, incoming);
    }
  }

  #hold(send: () => Promise<void>): Promise<void> {
    return new Promise<void>((resolve) => this.#held.push(() => resolve(send())));
  }

  #decide(): void {
    if (this.#state === 'decided') return;
    this.#state = 'decided';
    this.#holding = false;
    this.#options.logger.debug({ transport: this.chosen }, 'transport chosen');
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
