import { describe, expect, it } from 'vitest';
import { Backoff, RECONNECT_DELAY_MAX_MS, RECONNECT_DELAY_MIN_MS } from '../src/event-stream.js';

// 2025-11-25 Streamable HTTP §Resumability: the client MUST respect a server's `retry`; the floor
// keeps a server that ends every stream at once from turning reconnection into a busy loop.
describe('Backoff', () => {
  it('starts at the floor and doubles it on each attempt without progress', () => {
    const backoff = new Backoff();
    expect([backoff.next(undefined), backoff.next(undefined), backoff.next(0)]).toEqual([
      RECONNECT_DELAY_MIN_MS,
      RECONNECT_DELAY_MIN_MS * 2,
      RECONNECT_DELAY_MIN_MS * 4,
    ]);
  });

  it('waits the server’s retry when it is above the floor', () => {
    const backoff = new Backoff();
    expect(backoff.next(RECONNECT_DELAY_MIN_MS + 1234)).toBe(RECONNECT_DELAY_MIN_MS + 1234);
  });

  it('never waits less than the floor, even when the server asks for retry: 0', () => {
    const backoff = new Backoff();
    backoff.next(0);
    expect(backoff.next(0)).toBe(RECONNECT_DELAY_MIN_MS * 2);
  });

  it('caps both the server’s retry and the doubled floor at RECONNECT_DELAY_MAX_MS', () => {
    const backoff = new Backoff();
    expect(backoff.next(RECONNECT_DELAY_MAX_MS * 10)).toBe(RECONNECT_DELAY_MAX_MS);
    let last = 0;
    for (let attempt = 0; attempt < 20; attempt++) last = backoff.next(undefined);
    expect(last).toBe(RECONNECT_DELAY_MAX_MS);
  });

  it('starts from the floor again once a real message arrived', () => {
    const backoff = new Backoff();
    for (let attempt = 0; attempt < 5; attempt++) backoff.next(undefined);
    backoff.progressed();
    expect(backoff.next(undefined)).toBe(RECONNECT_DELAY_MIN_MS);
    expect(backoff.next(undefined)).toBe(RECONNECT_DELAY_MIN_MS * 2);
  });
});
