// How long to wait before reconnecting an event stream: the server's `retry:`, never below a doubling floor.

/** Delay before reconnecting when the server gave no `retry:` (or 0); doubled after each attempt without a message. */
export const RECONNECT_DELAY_MIN_MS = 500;
/** The longest wait between reconnections, whatever the server's `retry:` asks. */
export const RECONNECT_DELAY_MAX_MS = 30_000;

/**
 * Reconnection delays: the server's `retry:` is honoured (2025-11-25 transports §Resumability:
 * the client MUST respect it) but never below a floor that doubles while nothing real arrives, so a
 * server that ends every stream at once, with `retry: 0` or none, is never a busy loop.
 */
export class Backoff {
  #floorMs = RECONNECT_DELAY_MIN_MS;

  /** The wait before the next attempt; each call without `progressed()` in between doubles the floor. */
  next(serverRetryMs: number | undefined): number {
    const delay = Math.min(Math.max(serverRetryMs ?? 0, this.#floorMs), RECONNECT_DELAY_MAX_MS);
    this.#floorMs = Math.min(this.#floorMs * 2, RECONNECT_DELAY_MAX_MS);
    return delay;
  }

  /** A real message arrived: the next wait starts from the floor again. */
  progressed(): void {
    this.#floorMs = RECONNECT_DELAY_MIN_MS;
  }
}
