// Stopping work: what an exchange watches to stop, the handle that stops it, and waiting on work until then.

/**
 * What a request's exchange watches to stop: the part of AbortSignal the hot path uses, so an
 * AbortSignal fits wherever one is taken, and a request needs no AbortController unless some
 * slower path asks for a real `signal`.
 */
export interface AbortSource {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** Thrown into a cancelled request's signal: not an error to report, only a reason to stop. */
export const CANCELLED = Symbol('cancelled by the client');

/**
 * Settles with `work`, or rejects with the signal's reason as soon as it aborts, whichever is
 * first; a result that arrives after the abort goes to `onLate` (to release what it holds).
 */
export function untilAborted<T>(work: Promise<T>, signal: AbortSource, onLate: (value: T) => void = () => undefined): Promise<T> {
  if (signal.aborted) {
    work.then(onLate, () => undefined);
    return Promise.reject(toError(signal.reason));
  }
  return new Promise<T>((resolve, reject) => {
    let aborted = false;
    const abort = () => {
      aborted = true;
      reject(toError(signal.reason));
    };
    signal.addEventListener('abort', abort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', abort);
        if (aborted) onLate(value);
        else resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', abort);
        reject(toError(error));
      },
    );
  });
}

/** Rejections carry an Error; a cancel's reason (a symbol) is wrapped, the original kept as cause. */
function toError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error('aborted', { cause: reason });
}

/** The abort side of a request: listeners in a plain array, a real AbortSignal only when asked for. */
export class Aborts implements AbortSource {
  aborted = false;
  reason: unknown = undefined;
  #listeners: (() => void)[] = [];
  #controller: AbortController | undefined;

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.aborted) this.#controller.abort(this.reason);
    }
    return this.#controller.signal;
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    if (!this.aborted) this.#listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const index = this.#listeners.lastIndexOf(listener);
    if (index !== -1) this.#listeners.splice(index, 1);
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.#controller?.abort(reason);
    const listeners = this.#listeners;
    this.#listeners = [];
    for (const listener of listeners) {
      try {
        listener();
      } catch (error) {
        // As EventTarget does: the other listeners still run, the error is reported uncaught.
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }
}
