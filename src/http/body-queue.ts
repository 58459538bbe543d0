// A response body fed by undici's dispatch handler: chunks as an async iterable, with back-pressure and no stream object.

import type { Dispatcher } from './undici-parts.js';

/**
 * Bytes queued and not yet taken by the reader, past which undici is asked to pause the socket:
 * the reader's pace, not the server's, then bounds what a body holds in memory.
 */
export const BODY_QUEUE_HIGH_WATER_BYTES = 64 * 1024;

/** The body of one exchange. Read it with `for await`, or let go of it with `destroy()`. */
export interface ResponseBody extends AsyncIterable<Buffer> {
  /** True once the server's last byte arrived (the connection is then reusable). */
  readonly ended: boolean;
  /** Stops the exchange unless the body already ended: queued bytes are dropped, the connection closed. */
  destroy(): void;
  /** The whole body when it has ended and nothing of it was read or let go of; undefined otherwise. */
  arrived(): readonly Buffer[] | undefined;
}

/** Thrown into a reader whose body was destroyed by its owner while it still read. */
export class BodyReleasedError extends Error {
  override readonly name = 'BodyReleasedError';
  readonly code = 'ERR_STREAM_PREMATURE_CLOSE';
  constructor() {
    super('the response body was released before its end');
  }
}

/**
 * The consumer side and the producer side in one small object: undici's handler calls `push`,
 * `end` and `fail`; the reader pulls with an async iterator. One reader at a time.
 */
export class BodyQueue implements ResponseBody {
  #chunks: Buffer[] = [];
  #queuedBytes = 0;
  /** A chunk was handed to the reader. */
  #read = false;
  #released = false;
  #ended = false;
  #failure: Error | undefined;
  #waiter: { resolve: (result: IteratorResult<Buffer>) => void; reject: (error: Error) => void } | undefined;
  #controller: Dispatcher.DispatchController | undefined;

  get ended(): boolean {
    return this.#ended && this.#failure === undefined;
  }

  /**
   * The whole body, when it ended without failure and nothing of it was taken or let go of yet;
   * undefined otherwise. Taking nothing, it leaves the body to its reader as it was.
   */
  arrived(): readonly Buffer[] | undefined {
    return this.#ended && this.#failure === undefined && !this.#released && !this.#read ? this.#chunks : undefined;
  }

  /** The handler's controller, once undici has one: used to pause, resume and abort. */
  attach(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
  }

  push(chunk: Buffer): void {
    if (this.#failure !== undefined) return;
    const waiter = this.#waiter;
    if (waiter !== undefined) {
      this.#waiter = undefined;
      this.#read = true;
      waiter.resolve({ value: chunk, done: false });
      return;
    }
    this.#chunks.push(chunk);
    this.#queuedBytes += chunk.length;
    if (this.#queuedBytes > BODY_QUEUE_HIGH_WATER_BYTES) this.#controller?.pause();
  }

  end(): void {
    this.#ended = true;
    if (this.#chunks.length === 0) this.#settleWaiter();
  }

  fail(error: Error): void {
    if (this.#failure !== undefined || (this.#ended && this.#chunks.length === 0)) return;
    this.#failure = error;
    this.#chunks = [];
    this.#queuedBytes = 0;
    this.#settleWaiter();
  }

  destroy(): void {
    this.#released = true;
    if (this.#ended && this.#failure === undefined) {
      this.#chunks = [];
      return;
    }
    const released = new BodyReleasedError();
    this.fail(released);
    if (this.#controller !== undefined && !this.#controller.aborted) this.#controller.abort(released);
  }

  #settleWaiter(): void {
    const waiter = this.#waiter;
    if (waiter === undefined) return;
    this.#waiter = undefined;
    if (this.#failure !== undefined) waiter.reject(this.#failure);
    else waiter.resolve({ value: undefined, done: true });
  }

  #next(): Promise<IteratorResult<Buffer>> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    const chunk = this.#chunks.shift();
    if (chunk !== undefined) {
      this.#read = true;
      this.#queuedBytes -= chunk.length;
      if (this.#queuedBytes <= BODY_QUEUE_HIGH_WATER_BYTES / 2 && this.#controller?.paused === true) this.#controller.resume();
      return Promise.resolve({ value: chunk, done: false });
    }
    if (this.#ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => (this.#waiter = { resolve, reject }));
  }

  [Symbol.asyncIterator](): AsyncIterator<Buffer> {
    return {
      next: () => this.#next(),
      // A reader that stops early (break, throw) lets go of the body.
      return: () => {
        this.destroy();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
