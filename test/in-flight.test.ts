import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BridgeError } from '../src/errors.js';
import { CANCELLED, InFlight } from '../src/in-flight.js';
import type { JsonObject } from '../src/json-rpc.js';

describe('InFlight', () => {
  let written: JsonObject[];
  let inFlight: InFlight;
  beforeEach(() => {
    vi.useFakeTimers();
    written = [];
    inFlight = new InFlight({ write: (message) => (written.push(message), Promise.resolve(true)), requestTimeoutMs: 1000 });
  });
  afterEach(() => vi.useRealTimers());

  it('writes exactly one reply however often a request is settled', async () => {
    const pending = inFlight.begin(1, 'tools/call', 'legacy', { deadline: true })!;
    expect(await pending.settle({ jsonrpc: '2.0', id: 1, result: {} })).toBe(true);
    expect(await pending.settle({ jsonrpc: '2.0', id: 1, result: { again: true } })).toBe(false);
    expect(await pending.fail(new BridgeError('INTERNAL', 'late'))).toBe(false);
    expect(written).toHaveLength(1);
    expect(inFlight.size).toBe(0);
  });

  it('refuses a second outstanding request with the same id, but tells 1 from "1"', () => {
    expect(inFlight.begin(1, 'a', 'legacy', { deadline: true })).toBeDefined();
    expect(inFlight.begin(1, 'b', 'legacy', { deadline: true })).toBeUndefined();
    expect(inFlight.begin('1', 'c', 'legacy', { deadline: true })).toBeDefined();
  });

  it('aborts the exchange with REQUEST_TIMEOUT when the deadline passes', () => {
    const pending = inFlight.begin(2, 'tools/call', 'legacy', { deadline: true })!;
    vi.advanceTimersByTime(999);
    expect(pending.signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(pending.signal.reason).toMatchObject({ code: 'REQUEST_TIMEOUT' });
  });

  it('sets no deadline where none is wanted (listen streams)', () => {
    const pending = inFlight.begin(3, 'subscriptions/listen', 'modern', { deadline: false })!;
    vi.advanceTimersByTime(10_000_000);
    expect(pending.signal.aborted).toBe(false);
  });

  it('writes nothing for a cancelled request and releases it', async () => {
    const pending = inFlight.begin(4, 'tools/call', 'modern', { deadline: true })!;
    inFlight.cancel(4);
    expect(pending.signal.reason).toBe(CANCELLED);
    expect(await pending.settle({ jsonrpc: '2.0', id: 4, result: {} })).toBe(false);
    expect(written).toEqual([]);
    expect(inFlight.has(4)).toBe(false);
  });

  it('answers everything outstanding on failAll and then is empty', async () => {
    inFlight.begin(5, 'a', 'legacy', { deadline: true });
    inFlight.begin(6, 'b', 'legacy', { deadline: false });
    const empty = inFlight.whenEmpty();
    await inFlight.failAll(new BridgeError('SHUTTING_DOWN', 'bye'));
    await empty;
    expect(written.map((m) => m.id).sort()).toEqual([5, 6]);
    expect(written.every((m) => (m.error as { code: number }).code === -31014)).toBe(true);
  });

  it('falls back to an error reply when the answer cannot be serialised', async () => {
    const failing = new InFlight({
      write: (message) => (message.error === undefined ? Promise.resolve(false) : (written.push(message), Promise.resolve(true))),
      requestTimeoutMs: 0,
    });
    const pending = failing.begin(7, 'x', 'legacy', { deadline: true })!;
    await pending.settle({ jsonrpc: '2.0', id: 7, result: {} });
    expect(written).toMatchObject([{ id: 7, error: { code: -31006 } }]);
  });
});
