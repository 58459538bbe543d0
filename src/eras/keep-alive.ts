// --keep-alive: when to ping an idle 2025 session, one timer, backing off after failures and stopping where a ping cannot help.

/** What one ping came to; the session decides, from the reply, which it was. */
export type PingOutcome =
  /** Answered (a result): the session is alive. */
  | 'answered'
  /** The session is gone (404, or a 400 saying so): pinging stops until a new session starts. */
  | 'session-gone'
  /** The server does not offer ping (-32601): pinging stops for the run. */
  | 'not-offered'
  /** Anything else (an HTTP error, a network failure, another JSON-RPC error): the next ping waits longer. */
  | 'failed'
  /** Stopped by the bridge (shutdown): nothing to say. */
  | 'stopped';

/** After failed pings in a row, the wait between pings doubles up to this many times the --keep-alive interval. */
export const KEEP_ALIVE_MAX_BACKOFF_FACTOR = 8;

export interface KeepAliveOptions {
  /** The idle time in ms after which a ping goes (--keep-alive); 0 = never. */
  intervalMs: number;
  /** Sends one ping; resolves with what it came to (never rejects). */
  ping: (signal: AbortSignal) => Promise<PingOutcome>;
  /** Whether a ping may go now (a session is established, no initialize or heal is under way). */
  mayPing: () => boolean;
  /** Monotonic milliseconds; a seam for tests. */
  now?: () => number;
}

/**
 * One timer for a session's keep-alive. Idle means no POST went to the session for `intervalMs`:
 * `touch()` on every POST moves the idle start, and the timer, when it fires early, waits out the
 * rest rather than being re-armed on every message. The timer is unref'd, so it never keeps the
 * process alive, and `stop()` clears it and aborts a ping under way, in one place.
 */
export class KeepAlive {
  readonly #options: KeepAliveOptions;
  readonly #now: () => number;
  #lastActivity: number;
  #timer: NodeJS.Timeout | undefined;
  #ping: AbortController | undefined;
  #failures = 0;
  /** True for the rest of the run: stop() was called, or the server does not offer ping. */
  #over = false;

  constructor(options: KeepAliveOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => performance.now());
    this.#lastActivity = this.#now();
  }

  get enabled(): boolean {
    return this.#options.intervalMs > 0 && !this.#over;
  }

  /** A POST went to the session: the idle time starts again. Cheap: it runs for every message. */
  touch(): void {
    if (this.#options.intervalMs > 0) this.#lastActivity = this.#now();
  }

  /** A session is established (or re-established): pings go whenever it is idle. */
  start(): void {
    if (!this.enabled) return;
    this.#failures = 0;
    this.touch();
    this.#arm(this.#options.intervalMs);
  }

  /** Shutdown: no ping from now on, and none under way. Safe to call more than once. */
  stop(): void {
    this.#over = true;
    this.#disarm();
    this.#ping?.abort();
    this.#ping = undefined;
  }

  /** The idle time before the next ping: the interval, doubled after each failure in a row, bounded. */
  #waitMs(): number {
    return this.#options.intervalMs * Math.min(2 ** this.#failures, KEEP_ALIVE_MAX_BACKOFF_FACTOR);
  }

  #arm(delayMs: number): void {
    if (!this.enabled || this.#timer !== undefined || this.#ping !== undefined) return;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        void this.#fire();
      },
      Math.max(1, Math.ceil(delayMs)),
    );
    this.#timer.unref();
  }

  #disarm(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  async #fire(): Promise<void> {
    if (!this.enabled) return;
    const left = this.#waitMs() - (this.#now() - this.#lastActivity);
    if (left > 0 || !this.#options.mayPing()) {
      // Not idle long enough yet, or an initialize or heal is under way: look again later.
      this.#arm(left > 0 ? left : this.#options.intervalMs);
      return;
    }
    const controller = new AbortController();
    this.#ping = controller;
    this.touch();
    const outcome = await this.#options.ping(controller.signal);
    if (this.#ping === controller) this.#ping = undefined;
    switch (outcome) {
      case 'answered':
        this.#failures = 0;
        break;
      case 'failed':
        this.#failures++;
        break;
      case 'not-offered':
        this.#over = true;
        return;
      case 'session-gone':
      case 'stopped':
        // A new session calls start(); a stopped keep-alive stays stopped.
        return;
    }
    this.#arm(this.#waitMs());
  }
}
