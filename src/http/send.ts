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
  return new Promise<HttpExchange>((resolve, reject) => {
    const body = new BodyQueue();
    let exchange: HttpExchange | undefined;
    let controller: Dispatcher.DispatchController | undefined;
    let started = false;
    let settled = false;
    const onAbort = () => {
      const reason = abortReason(signal);
      if (!settled) {
        settled = true;
        reject(toFailure === undefined ? reason : toFailure(reason));
      }
      body.fail(reason);
      if (controller !== undefined && !controller.aborted) controller.abort(reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    const done = () => signal.removeEventListener('abort', onAbort);
    dispatcher.dispatch(
      {
        origin: target.origin,
        path: target.path,
        method: options.method,
        headers,
        // undici sends any iterable of Buffers (its request.js accepts iterables); its types name only Readable.
        body: requestBody as Readable | string | null,
      },
      {
        onRequestStart(dispatchController) {
          controller = dispatchController;
          body.attach(dispatchController);
          // Aborted while it waited for a connection: it never leaves.
          if (signal.aborted) dispatchController.abort(abortReason(signal));
        },
        onResponseStart(_controller, statusCode, headers) {
          // 1xx informational answers come before the real one; undici passes the final status here.
          started = true;
          if (settled) return;
          settled = true;
          exchange = { status: statusCode, headers: headers, body };
          resolve(exchange);
        },
        onResponseData(_controller, chunk) {
          body.push(chunk);
        },
        onResponseEnd() {
          done();
          body.end();
          if (exchange !== undefined) onArrived?.(exchange);
        },
        onResponseError(_controller, error) {
          done();
          if (!started && !settled) {
            settled = true;
            reject(toFailure === undefined ? error : toFailure(error));
            return;
          }
          body.fail(error);
        },
      },
    );
  });
}

function abortReason(signal: AbortSource): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error('aborted', { cause: reason });
}
