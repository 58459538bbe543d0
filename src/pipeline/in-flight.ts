// Pending requests: each has a deadline and an abort handle, and gets exactly one reply.

import { type Deadline, DeadlineList } from '../core/deadlines.js';
import { BridgeError } from '../core/errors.js';
import { bridgeErrorReply, idKey, type JsonObject, type JsonRpcId } from '../core/json-rpc.js';
import { Aborts, CANCELLED } from '../core/abort.js';
import type { Era } from '../core/protocol.js';
import type { RegisteredRequest } from '../transports/transport.js';

/** A registered request as the pipeline holds it: what a transport sees, and the one way to answer it. */
export interface PendingRequest extends RegisteredRequest {
  readonly cancelled: boolean;
  /**
   * Its next reply goes to the bridge, not to stdout: a page the bridge asked for itself (registered
   * with `deliver`), or a request whose reply is held (`hold`) while its list is merged. The router
   * hands such a reply on unfiltered, as the merged reply is filtered once.
   */
  readonly held: boolean;
  /**
   * The server's next reply goes to `take` instead of stdout, and the request stays outstanding
   * (its deadline, its cancel) for the answer the bridge writes later; a failure is still written.
   */
  hold(take: (reply: JsonObject, serialised?: string | Buffer) => void): void;
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

export class InFlight {
  readonly #entries = new Map<string, PendingEntry>();
  readonly #options: InFlightOptions;
  readonly #deadlines = new DeadlineList();
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
  begin(
    id: JsonRpcId,
    method: string,
    era: Era,
    options: { deadline: boolean; own?: boolean; deliver?: (message: JsonObject, serialised?: string | Buffer) => Promise<boolean> },
  ): PendingRequest | undefined {
    const key = idKey(id);
    if (this.#entries.has(key)) return undefined;
    const timeoutMs = options.deadline ? this.#options.requestTimeoutMs : 0;
    const internal = options.deliver !== undefined;
    const entry = new PendingEntry(id, method, era, options.own === true, internal, options.deliver ?? this.#options.write, () => this.#remove(key, entry));
    if (timeoutMs > 0) entry.startDeadline(this.#deadlines, timeoutMs);
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
  readonly aborts = new Aborts();
  #deadline: { list: DeadlineList; node: Deadline } | undefined;
  deadlineAt: number | undefined;
  #done = false;
  #cancelled = false;
  #finished: { promise: Promise<void>; resolve: () => void } | undefined;
  #take: ((reply: JsonObject, serialised?: string | Buffer) => void) | undefined;
  /** A reply was taken by `hold`: the transport's part is over, though the request is not answered yet. */
  #taken = false;

  constructor(
    readonly id: JsonRpcId,
    readonly method: string,
    readonly era: Era,
    readonly own: boolean,
    private readonly internal: boolean,
    private readonly write: (message: JsonObject, serialised?: string | Buffer) => Promise<boolean>,
    private readonly release: () => void,
  ) {}

  startDeadline(list: DeadlineList, timeoutMs: number): void {
    const node = list.add(timeoutMs, () => {
      const timeout = new BridgeError('REQUEST_TIMEOUT', `no answer to ${this.method} within ${timeoutMs} ms`, {
        method: this.method,
        timeoutMs,
        hint: 'raise --request-timeout (0 = no deadline) if this call is expected to take longer',
      });
      // The deadline writes the reply itself, then stops the exchange: the answer never waits
      // for undici, a decoder or the server to notice the abort.
      void this.fail(timeout);
      this.abort(timeout);
    });
    this.#deadline = { list, node };
    this.deadlineAt = node.at;
  }

  get signal(): AbortSignal {
    return this.aborts.signal;
  }

  get done(): boolean {
    return this.#done;
  }

  get cancelled(): boolean {
    return this.#cancelled;
  }

  get held(): boolean {
    return this.internal || this.#take !== undefined;
  }

  hold(take: (reply: JsonObject, serialised?: string | Buffer) => void): void {
    this.#take = take;
  }

  get finished(): Promise<void> {
    if (this.#finished === undefined) {
      let resolve!: () => void;
      const promise = this.#done || this.#taken ? Promise.resolve() : new Promise<void>((done) => (resolve = done));
      this.#finished = { promise, resolve: resolve ?? (() => undefined) };
    }
    return this.#finished.promise;
  }

  async settle(reply: JsonObject, serialised?: string | Buffer): Promise<boolean> {
    if (this.#done) return false;
    const take = this.#take;
    if (take !== undefined) {
      this.#take = undefined;
      this.#taken = true;
      take(reply, serialised);
      this.#finished?.resolve();
      return true;
    }
    this.#done = true;
    // The line is handed to stdout first and the entry's bookkeeping done after: the client waits
    // for the line, not for the deadline's removal. Done stays set before either, so a second
    // answer (a late reply, the deadline) finds this request answered.
    let written: Promise<boolean>;
    try {
      written = this.write(reply, serialised);
    } finally {
      this.#release();
    }
    if (!(await written)) {
      // The server's answer cannot be written as JSON (e.g. nested deeper than the stack): the
      // request still gets its one reply.
      await this.write(bridgeErrorReply(this.id, new BridgeError('REMOTE_BAD_REPLY', 'the reply could not be re-serialised as one JSON line')));
    }
    return true;
  }

  fail(error: BridgeError): Promise<boolean> {
    // A failure (the deadline, shutdown, a malformed reply) is the answer, never a page to merge.
    this.#take = undefined;
    return this.settle(bridgeErrorReply(this.id, error));
  }

  cancel(): void {
    if (this.#done) return;
    this.#cancelled = true;
    this.#done = true;
    this.#release();
    this.aborts.abort(CANCELLED);
  }

  abort(reason: BridgeError): void {
    this.aborts.abort(reason);
  }

  #release(): void {
    if (this.#deadline !== undefined) this.#deadline.list.remove(this.#deadline.node);
    this.release();
    this.#finished?.resolve();
  }
}
