// Sends one HTTP request through undici's dispatch(): headers as a promise, the body as a BodyQueue, no stream object.

import { Readable } from 'node:stream';
import type { Dispatcher } from './undici-parts.js';
import type { RequestBody } from '../core/json-rpc.js';
import { BodyQueue, type ResponseBody } from './body-queue.js';
import { type AbortSource } from '../core/abort.js';

export type HttpMethod = 'POST' | 'GET' | 'DELETE';

export interface HttpExchange {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Read, drained or destroyed by the reply reader alone. */
  body: ResponseBody;
  /** The Authorization value the request carried (set by Endpoint), for a renewal after a 401. */
  sentAuthorization?: string | undefined;
  /** Set by the transport when it answered the request from the whole body the moment it arrived. */
  answeredOnArrival?: boolean | undefined;
  /** With `answeredOnArrival`, for an event stream: settles once its messages and the response were handed on, in order. */
  arrivalDelivery?: Promise<void> | undefined;
}

/**
 * A request body longer than this many characters is encoded slice by slice as undici sends it,
 * instead of being copied whole into a Buffer first: a 50 MiB line then costs its text and its
 * parsed tree, not a third full copy.
 */
export const LARGE_BODY_CHARS = 1024 * 1024;
/** The characters encoded at a time for such a body. */
const BODY_SLICE_CHARS = 64 * 1024;

/**
 * The UTF-8 bytes of `text`, a slice at a time; iterable again for a retry. A slice never ends
 * between the two halves of a surrogate pair, so the bytes are exactly those of the whole text
 * (the text was decoded from valid UTF-8, so it holds no lone surrogate).
 */
export function utf8Slices(text: string, sliceChars = BODY_SLICE_CHARS): Iterable<Buffer> {
  return {
    *[Symbol.iterator]() {
      for (let start = 0; start < text.length;) {
        let end = Math.min(start + sliceChars, text.length);
        const last = text.charCodeAt(end - 1);
        if (end < text.length && last >= 0xd800 && last <= 0xdbff) end++;
        yield Buffer.from(text.slice(start, end), 'utf8');
        start = end;
      }
    },
  };
}

export interface SendOptions {
  method: HttpMethod;
  url: URL;
  headers: Record<string, string>;
  /** Text, or bytes in pieces (a large stdin line as it came). */
  body?: RequestBody | undefined;
  signal: AbortSource;
  /** What a failure before the headers (the abort reason included) is rejected with; undici's own error when absent. */
  toFailure?: (error: unknown) => Error;
  /**
   * Called from undici's own callback the moment the body's last byte arrived, with the exchange
   * the promise resolved with: a reader may look at the whole body (`body.arrived()`) before the
   * promise chain that reads it has run. It must not throw.
   */
  onArrived?: ((exchange: HttpExchange) => void) | undefined;
}

/** The origin and path of the last URL sent to: every POST goes to the same one. */
let lastTarget: { url: URL; href: string; origin: string; path: string } | undefined;

function targetOf(url: URL): { origin: string; path: string } {
  if (lastTarget?.url !== url || lastTarget.href !== url.href) {
    lastTarget = { url, href: url.href, origin: url.origin, path: `${url.pathname}${url.search}` };
  }
  return lastTarget;
}

/**
 * Sends one HTTP request with undici's dispatch() and a handler: no stream object, promise chain
 * or extra listeners per request. Resolves with status, headers and an unread body once the
 * headers arrived; rejects with undici's failure before that, or at once with the signal's reason
 * when it aborts (a request still queued for a connection included).
 */
export function sendHttp(dispatcher: Dispatcher, options: SendOptions): Promise<HttpExchange> {
  const { signal, toFailure, onArrived } = options;
  if (signal.aborted) return Promise.reject(toFailure === undefined ? abortReason(signal) : toFailure(abortReason(signal)));
  const target = targetOf(options.url);
  let headers = options.headers;
  const text = options.body;
  let requestBody: string | Readable | readonly Buffer[] | null = text ?? null;
  if (typeof text === 'string' && text.length > LARGE_BODY_CHARS) {
    headers = { ...headers, 'content-length': String(Buffer.byteLength(text, 'utf8')) };
    requestBody = Readable.from(utf8Slices(text), { objectMode: false });
  } else if (text !== undefined && typeof text !== 'string') {
    // A large line's bytes in the pieces they arrived in: undici writes them one by one, waiting
    // for the socket to drain; nothing is joined or copied. Iterable again for a retry.
    let length = 0;
    for (const piece of text) length += piece.length;
    headers = { ...headers, 'content-length': String(length) };
  }
  const exchange = new ExchangeHandler(signal, toFailure, onArrived);
  try {
    dispatcher.dispatch(
      {
        origin: target.origin,
        path: target.path,
        method: options.method,
        headers,
        // undici sends any iterable of Buffers (its request.js accepts iterables); its types name only Readable.
        body: requestBody as Readable | string | null,
      },
      exchange,
    );
  } catch (error) {
    // undici refused the request before taking it (a malformed option): a rejection, as ever.
    exchange.refused(error as Error);
  }
  return exchange.promise;
}

/**
 * undici's dispatch handler for one exchange, and the promise it settles: its state in fields and
 * its callbacks on the prototype, so a request costs one object and its promise, not a closure per
 * callback (this runs for every message).
 */
class ExchangeHandler implements Dispatcher.DispatchHandler {
  readonly promise: Promise<HttpExchange>;
  readonly #body = new BodyQueue();
  readonly #signal: AbortSource;
  readonly #toFailure: ((error: unknown) => Error) | undefined;
  readonly #onArrived: ((exchange: HttpExchange) => void) | undefined;
  readonly #onAbort = () => this.#abort();
  #resolve!: (exchange: HttpExchange) => void;
  #reject!: (error: Error) => void;
  #exchange: HttpExchange | undefined;
  #controller: Dispatcher.DispatchController | undefined;
  #started = false;
  #settled = false;

  constructor(signal: AbortSource, toFailure: ((error: unknown) => Error) | undefined, onArrived: ((exchange: HttpExchange) => void) | undefined) {
    this.#signal = signal;
    this.#toFailure = toFailure;
    this.#onArrived = onArrived;
    this.promise = new Promise<HttpExchange>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    signal.addEventListener('abort', this.#onAbort, { once: true });
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    this.#body.attach(controller);
    // Aborted while it waited for a connection: it never leaves.
    if (this.#signal.aborted) controller.abort(abortReason(this.#signal));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    // 1xx informational answers come before the real one; undici passes the final status here.
    this.#started = true;
    if (this.#settled) return;
    this.#settled = true;
    this.#exchange = { status: statusCode, headers, body: this.#body };
    this.#resolve(this.#exchange);
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#body.push(chunk);
  }

  onResponseEnd(): void {
    this.#done();
    this.#body.end();
    if (this.#exchange !== undefined) this.#onArrived?.(this.#exchange);
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.#done();
    if (!this.#started && !this.#settled) {
      this.#settled = true;
      this.#reject(this.#failure(error));
      return;
    }
    this.#body.fail(error);
  }

  /** dispatch() threw: the promise rejects with that error as it came. */
  refused(error: Error): void {
    this.#done();
    if (this.#settled) return;
    this.#settled = true;
    this.#reject(error);
  }

  #abort(): void {
    const reason = abortReason(this.#signal);
    if (!this.#settled) {
      this.#settled = true;
      this.#reject(this.#failure(reason));
    }
    this.#body.fail(reason);
    const controller = this.#controller;
    if (controller !== undefined && !controller.aborted) controller.abort(reason);
  }

  #done(): void {
    this.#signal.removeEventListener('abort', this.#onAbort);
  }

  #failure(error: Error): Error {
    return this.#toFailure === undefined ? error : this.#toFailure(error);
  }
}

function abortReason(signal: AbortSource): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error('aborted', { cause: reason });
}
