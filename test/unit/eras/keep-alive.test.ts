import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { KEEP_ALIVE_MAX_BACKOFF_FACTOR, KeepAlive, type PingOutcome } from '../../../src/eras/keep-alive.js';

const INTERVAL_MS = 1_000;

/** A keep-alive whose pings answer with the outcomes given, in order (the last one repeats). */
function keepAliveAnswering(...outcomes: PingOutcome[]) {
  const pings: number[] = [];
  let may = true;
  const keepAlive = new KeepAlive({
    intervalMs: INTERVAL_MS,
    now: () => Date.now(),
    mayPing: () => may,
    ping: () => {
      pings.push(Date.now());
      return Promise.resolve(outcomes.length > 1 ? outcomes.shift()! : outcomes[0]!);
    },
  });
  return { keepAlive, pings, block: (blocked: boolean) => (may = !blocked) };
}

beforeEach(() => {
  vi.useFakeTimers({ now: 0 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('KeepAlive', () => {
  it('pings once per idle interval, and each touch (a POST) moves the next ping a whole interval on', async () => {
    const { keepAlive, pings } = keepAliveAnswering('answered');
    keepAlive.start();
    await vi.advanceTimersByTimeAsync(INTERVAL_MS);
    expect(pings).toEqual([1_000]);
    await vi.advanceTimersByTimeAsync(500);
    keepAlive.touch();
    await vi.advanceTimersByTimeAsync(999);
    expect(pings).toEqual([1_000]);
    await vi.advanceTimersByTimeAsync(1);
    expect(pings).toEqual([1_000, 2_500]);
    keepAlive.stop();
  });

  it('waits twice as long after each failed ping, up to a bound, and the interval again after one is answered', async () => {
    const { keepAlive, pings } = keepAliveAnswering('failed', 'failed', 'failed', 'failed', 'failed', 'answered');
    keepAlive.start();
    await vi.advanceTimersByTimeAsync(60_000);
    const gaps = pings.slice(1).map((at, i) => at - pings[i]!);
    expect(gaps.slice(0, 6)).toEqual([2_000, 4_000, 8_000, 8_000, 8_000, 1_000]);
    expect(KEEP_ALIVE_MAX_BACKOFF_FACTOR).toBe(8);
    keepAlive.stop();
  });

  it('stops for good when the server does not offer ping, even when a new session starts', async () => {
    const { keepAlive, pings } = keepAliveAnswering('not-offered');
    keepAlive.start();
    await vi.advanceTimersByTimeAsync(10 * INTERVAL_MS);
    keepAlive.start();
    await vi.advanceTimersByTimeAsync(10 * INTERVAL_MS);
    expect(pings).toHaveLength(1);
    expect(keepAlive.enabled).toBe(false);
  });

  it('stops pinging a session the server ended until a new one starts', async () => {
    const { keepAlive, pings } = keepAliveAnswering('session-gone', 'answered');
    keepAlive.start();
    await vi.advanceTimersByTimeAsync(10 * INTERVAL_MS);
    expect(pings).toHaveLength(1);
    keepAlive.start();
    await vi.advanceTimersByTimeAsync(2 * INTERVAL_MS);
    expect(pings).toHaveLength(3);
    keepAlive.stop();
  });

  it('holds its ping while the session may not take one (an initialize or heal under way)', async () => {
    const { keepAlive, pings, block } = keepAliveAnswering('answered');
    block(true);
    keepAlive.start();
    await vi.advanceTimersByTimeAsync(5 * INTERVAL_MS);
    expect(pings).toEqual([]);
    block(false);
    await vi.advanceTimersByTimeAsync(INTERVAL_MS);
    expect(pings).toHaveLength(1);
    keepAlive.stop();
  });

  it('sends nothing after stop(), leaves no timer behind, and never starts again', async () => {
    const { keepAlive, pings } = keepAliveAnswering('answered');
    keepAlive.start();
    keepAlive.stop();
    keepAlive.start();
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(10 * INTERVAL_MS);
    expect(pings).toEqual([]);
  });

  it('with an interval of 0 arms nothing at all', async () => {
    const pings: number[] = [];
    const keepAlive = new KeepAlive({ intervalMs: 0, mayPing: () => true, ping: () => (pings.push(1), Promise.resolve('answered')) });
    keepAlive.start();
    keepAlive.touch();
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(pings).toEqual([]);
  });
});
