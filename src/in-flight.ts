// Pending requests: each has a deadline and an abort handle, and gets exactly one reply.

import { BridgeError } from './errors.js';
import { bridgeErrorReply, idKey, type JsonObject, type JsonRpcId } from './json-rpc.js';

export type Era = 'legacy' | 'modern';

export interface PendingRequest {
  readonly id: JsonRpcId;
  readonly method: string;
  readonly era: Era;
  /** Aborted by the deadline, a cancel or shutdown; its reason is a BridgeError (or a cancel marker). */
  readonly signal: AbortSignal;
  /** True once the request has its reply, was cancelled, or the bridge is stopping. */
  readonly done: boolean;
  readonly cancelled: boolean;
  /** When the deadline passes (performance.now() time), undefined when the request has none. */
  readonly deadlineAt: number | undefined;
  /** Writes this request's one reply; false (and nothing written) if it already has one or was cancelled. */
  settle(reply: JsonObject, serialised?: string | Buffer): Promise<boolean>;
  /** Writes a bridge error as the one reply, with this request's id. */
  fail(error: BridgeError): Promise<boolean>;
}

export interface InFlightOptions {
  /** Resolves false when the message could not be serialised. */
  write: (message: JsonObject, serialised?: string | Buffer) => Promise<boolean>;
  /** Per-request deadline in ms; 0 = none. */
  requestTimeoutMs: number;
}

/** Thrown into a cancelled request's signal: not an error to report, only a reason to stop. */
export const CANCELLED = Symbol('cancelled by the client');

/**
 * Settles with `work`, or rejects with the signal's reason as soon as it aborts, whichever is
 * first; a result that arrives after the abort goes to `onLate` (to release what it holds).
 */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal, onLate: (value: T) => void = () => undefined): Promise<T> {
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

export class InFlight {
  readonly #entries = new Map<string, PendingEntry>();
  readonly #options: InFlightOptions;
  #emptyWaiters: (() => void)[] = [];

  constructor(options: InFlightOptions) {
    this.#options = options;
  }

  get size(): number {
    return this.#entries.size;
  }

  has(id: JsonRpcId): boolean {
    return this.#entries.has(idKey(id));
  }

  get(id: JsonRpcId): PendingRequest | undefined {
    return this.#entries.get(idKey(id));
  }

  /**
   * Registers a request read from stdin. Returns undefined when a request with the same id is
   * still outstanding: ids must be unique among outstanding requests (2026-07-28 basic §Requests),
   * and two of them could not be told apart in the replies.
   */
  begin(id: JsonRpcId, method: string, era: Era, options: { deadline: boolean }): PendingRequest | undefined {
    const key = idKey(id);
    if (this.#entries.has(key)) return undefined;
    const timeoutMs = options.deadline ? this.#options.requestTimeoutMs : 0;
    const entry = new PendingEntry(id, method, era, timeoutMs, this.#options.write, () => this.#remove(key, entry));
    this.#entries.set(key, entry);
    return entry;
  }

  /** Stops waiting for `id`: its exchange is aborted and nothing more is written for it. */
  cancel(id: JsonRpcId): PendingRequest | undefined {
    const entry = this.#entries.get(idKey(id));
    entry?.cancel();
    return entry;
  }

  /** Aborts every outstanding request with `error` as the reason (shutdown). */
  abortAll(error: BridgeError): void {
    for (const entry of this.#entries.values()) entry.abort(error);
  }

  /** Answers every outstanding request with `error` (shutdown), then aborts its exchange. */
  async failAll(error: BridgeError): Promise<void> {
    const entries = [...this.#entries.values()];
    const written = entries.map((entry) => entry.fail(error));
    for (const entry of entries) entry.abort(error);
    await Promise.all(written);
  }

  /** Answers the open subscriptions/listen requests with `error` (they never end on their own). */
  failListens(error: BridgeError): void {
    for (const entry of [...this.#entries.values()]) {
      if (entry.method !== 'subscriptions/listen') continue;
      void entry.fail(error);
      entry.abort(error);
    }
  }

  /** Resolves when no request is outstanding. */
  whenEmpty(): Promise<void> {
    if (this.#entries.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#emptyWaiters.push(resolve));
  }

  #remove(key: string, entry: PendingEntry): void {
    if (this.#entries.get(key) !== entry) return;
    this.#entries.delete(key);
    if (this.#entries.size === 0) {
      const waiters = this.#emptyWaiters;
      this.#emptyWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }
}

class PendingEntry implements PendingRequest {
  readonly #controller = new AbortController();
  readonly #timer: NodeJS.Timeout | undefined;
  readonly deadlineAt: number | undefined;
  #done = false;
  #cancelled = false;

  constructor(
    readonly id: JsonRpcId,
    readonly method: string,
    readonly era: Era,
    timeoutMs: number,
    private readonly write: (message: JsonObject, serialised?: string | Buffer) => Promise<boolean>,
    private readonly release: () => void,
  ) {
    if (timeoutMs > 0) {
      this.deadlineAt = performance.now() + timeoutMs;
      this.#timer = setTimeout(() => {
        const timeout = new BridgeError('REQUEST_TIMEOUT', `no answer to ${method} within ${timeoutMs} ms`, {
          method,
          timeoutMs,
          hint: 'raise --request-timeout (0 = no deadline) if this call is expected to take longer',
        });
        // The deadline writes the reply itself, then stops the exchange: the answer never waits
        // for undici, a decoder or the server to notice the abort.
        void this.fail(timeout);
        this.abort(timeout);
      }, timeoutMs);
      // The deadline alone must not keep the process alive after everything else is done.
      this.#timer.unref();
    }
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get done(): boolean {
    return this.#done;
  }

  get cancelled(): boolean {
    return this.#cancelled;
  }

  async settle(reply: JsonObject, serialised?: string | Buffer): Promise<boolean> {
    if (this.#done) return false;
    this.#finish();
    if (!(await this.write(reply, serialised))) {
      // The server's answer cannot be written as JSON (e.g. nested deeper than the stack): the
      // request still gets its one reply.
      await this.write(bridgeErrorReply(this.id, new BridgeError('REMOTE_BAD_REPLY', 'the reply could not be re-serialised as one JSON line')));
    }
    return true;
  }

  fail(error: BridgeError): Promise<boolean> {
    return this.settle(bridgeErrorReply(this.id, error));
  }

  cancel(): void {
    if (this.#done) return;
    this.#cancelled = true;
    this.#finish();
    this.#controller.abort(CANCELLED);
  }

  abort(reason: BridgeError): void {
    if (!this.#controller.signal.aborted) this.#controller.abort(reason);
  }

  #finish(): void {
    this.#done = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.release();
  }
}
