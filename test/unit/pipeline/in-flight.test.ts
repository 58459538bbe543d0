import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BridgeError } from '../../../src/core/errors.js';
import { InFlight } from '../../../src/pipeline/in-flight.js';
import type { JsonObject } from '../../../src/core/json-rpc.js';
import { CANCELLED, untilAborted } from '../../../src/core/abort.js';

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

  it("hands a held request's next reply to the bridge and keeps it outstanding; its deadline still writes the one answer", async () => {
    const pending = inFlight.begin(5, 'tools/list', 'legacy', { deadline: true })!;
    const taken: JsonObject[] = [];
    pending.hold((reply) => taken.push(reply));
    expect(pending.held).toBe(true);
    expect(await pending.settle({ jsonrpc: '2.0', id: 5, result: { tools: [], nextCursor: 'c' } })).toBe(true);
    expect(taken).toHaveLength(1);
    expect(written).toEqual([]);
    expect(pending.held).toBe(false);
    expect(pending.done).toBe(false);
    expect(inFlight.has(5)).toBe(true);
    // The transport's part is over: a transport waiting on `finished` stops waiting.
    await pending.finished;
    vi.advanceTimersByTime(1000);
    expect(written).toEqual([
      expect.objectContaining({ id: 5, error: expect.objectContaining({ data: expect.objectContaining({ bridgeCode: 'REQUEST_TIMEOUT' }) }) }),
    ]);
  });

  it('writes a failure of a held request to the client, never to the holder', async () => {
    const pending = inFlight.begin(6, 'tools/list', 'legacy', { deadline: false })!;
    const taken: JsonObject[] = [];
    pending.hold((reply) => taken.push(reply));
    await pending.fail(new BridgeError('REMOTE_BAD_REPLY', 'both'));
    expect(taken).toEqual([]);
    expect(written).toHaveLength(1);
    expect(inFlight.size).toBe(0);
  });

  it('delivers every reply of a request registered with deliver to it, failures included, and nothing to stdout', async () => {
    const delivered: JsonObject[] = [];
    const page = inFlight.begin('p', 'tools/list', 'legacy', { deadline: false, deliver: (reply) => (delivered.push(reply), Promise.resolve(true)) })!;
    expect(page.held).toBe(true);
    await page.fail(new BridgeError('SHUTTING_DOWN', 'bye'));
    expect(delivered).toHaveLength(1);
    expect(written).toEqual([]);
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

describe('untilAborted', () => {
  it('resolves with the work when the signal never aborts', async () => {
    const controller = new AbortController();
    await expect(untilAborted(Promise.resolve('value'), controller.signal)).resolves.toBe('value');
  });

  it('rejects at once on an already-aborted signal and hands the late value to onLate', async () => {
    const reason = new BridgeError('REQUEST_TIMEOUT', 'too late');
    const late: string[] = [];
    const work = Promise.resolve('held');
    await expect(untilAborted(work, AbortSignal.abort(reason), (value) => late.push(value))).rejects.toBe(reason);
    await work;
    expect(late).toEqual(['held']);
  });

  it('ignores a failure of the work behind an already-aborted signal', async () => {
    const reason = new BridgeError('REQUEST_TIMEOUT', 'too late');
    const late: unknown[] = [];
    const work = Promise.reject(new Error('work failed'));
    await expect(untilAborted(work, AbortSignal.abort(reason), (value) => late.push(value))).rejects.toBe(reason);
    await work.catch(() => undefined);
    expect(late).toEqual([]);
  });

  it('rejects with the abort reason when the signal aborts first, then hands the value to onLate', async () => {
    const controller = new AbortController();
    let finish!: (value: string) => void;
    const work = new Promise<string>((resolve) => (finish = resolve));
    const late: string[] = [];
    const result = untilAborted(work, controller.signal, (value) => late.push(value));
    const reason = new BridgeError('SHUTTING_DOWN', 'stopping');
    controller.abort(reason);
    await expect(result).rejects.toBe(reason);
    finish('arrived late');
    await work;
    expect(late).toEqual(['arrived late']);
  });

  it('passes on the work’s own Error when it rejects', async () => {
    const failure = new Error('connection reset');
    await expect(untilAborted(Promise.reject(failure), new AbortController().signal)).rejects.toBe(failure);
  });

  it('wraps a non-Error rejection of the work, keeping it as the cause', async () => {
    // The point of the test: work that rejects with something other than an Error.
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
    const rejection = untilAborted(Promise.reject('a string'), new AbortController().signal);
    await expect(rejection).rejects.toThrow('aborted');
    await expect(rejection).rejects.toMatchObject({ cause: 'a string' });
  });

  it('wraps a cancel’s symbol reason in an Error whose cause is the symbol', async () => {
    const controller = new AbortController();
    const result = untilAborted(new Promise<never>(() => undefined), controller.signal);
    controller.abort(CANCELLED);
    const error = await result.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).cause).toBe(CANCELLED);
  });

  it('wraps the symbol reason of a signal that was already aborted', async () => {
    const error = await untilAborted(Promise.resolve(1), AbortSignal.abort(CANCELLED)).catch((caught: unknown) => caught);
    expect((error as Error).cause).toBe(CANCELLED);
  });
});

describe('InFlight bookkeeping', () => {
  const write = () => Promise.resolve(true);

  it('resolves whenEmpty at once when nothing is outstanding', async () => {
    const inFlight = new InFlight({ write, requestTimeoutMs: 0 });
    await expect(inFlight.whenEmpty()).resolves.toBeUndefined();
  });

  it('resolves whenEmpty only once the last outstanding request has its reply', async () => {
    const inFlight = new InFlight({ write, requestTimeoutMs: 0 });
    const first = inFlight.begin(1, 'a', 'modern', { deadline: false })!;
    const second = inFlight.begin(2, 'b', 'modern', { deadline: false })!;
    let empty = false;
    const waiting = inFlight.whenEmpty().then(() => (empty = true));
    await first.settle({ jsonrpc: '2.0', id: 1, result: {} });
    await Promise.resolve();
    expect(empty).toBe(false);
    expect(inFlight.get(2)).toBe(second);
    inFlight.cancel(2);
    await waiting;
    expect(empty).toBe(true);
  });

  it('returns undefined when cancelling an id that is not outstanding, and a settled request stays settled', async () => {
    const inFlight = new InFlight({ write, requestTimeoutMs: 0 });
    expect(inFlight.cancel('nobody')).toBeUndefined();
    const pending = inFlight.begin(3, 'a', 'legacy', { deadline: true })!;
    expect(pending.deadlineAt).toBeUndefined();
    await pending.settle({ jsonrpc: '2.0', id: 3, result: {} });
    expect(inFlight.cancel(3)).toBeUndefined();
    expect(pending.cancelled).toBe(false);
    expect(pending.signal.aborted).toBe(false);
  });

  it('aborts every outstanding exchange with the given reason on abortAll, and only once', () => {
    const inFlight = new InFlight({ write, requestTimeoutMs: 0 });
    const a = inFlight.begin('a', 'x', 'legacy', { deadline: false })!;
    const b = inFlight.begin('b', 'y', 'modern', { deadline: false })!;
    const first = new BridgeError('SHUTTING_DOWN', 'first');
    inFlight.abortAll(first);
    inFlight.abortAll(new BridgeError('SHUTTING_DOWN', 'second'));
    expect(a.signal.reason).toBe(first);
    expect(b.signal.reason).toBe(first);
  });

  it('answers only the subscriptions/listen requests on failListens', async () => {
    const written: JsonObject[] = [];
    const inFlight = new InFlight({ write: (message) => (written.push(message), Promise.resolve(true)), requestTimeoutMs: 0 });
    const listen = inFlight.begin('listen', 'subscriptions/listen', 'modern', { deadline: false })!;
    const call = inFlight.begin('call', 'tools/call', 'modern', { deadline: false })!;
    inFlight.failListens(new BridgeError('SHUTTING_DOWN', 'bye'));
    await Promise.resolve();
    expect(written.map((message) => message.id)).toEqual(['listen']);
    expect(listen.signal.aborted).toBe(true);
    expect(call.signal.aborted).toBe(false);
    expect(inFlight.has('call')).toBe(true);
  });
});

describe('a pending request’s abort handle', () => {
  it('gives a real AbortSignal on demand, aborted already when the request was', () => {
    const inFlight = new InFlight({ write: () => Promise.resolve(true), requestTimeoutMs: 0 });
    const pending = inFlight.begin(1, 'tools/call', 'legacy', { deadline: false })!;
    const calls: string[] = [];
    const kept = () => calls.push('kept');
    const dropped = () => calls.push('dropped');
    pending.aborts.addEventListener('abort', kept);
    pending.aborts.addEventListener('abort', dropped);
    pending.aborts.removeEventListener('abort', dropped);
    pending.aborts.removeEventListener('abort', dropped);
    inFlight.cancel(1);
    expect(calls).toEqual(['kept']);
    expect(pending.aborts.reason).toBe(CANCELLED);
    expect(pending.signal.aborted).toBe(true);
    expect(pending.signal.reason).toBe(CANCELLED);
    pending.aborts.addEventListener('abort', kept);
    expect(calls).toEqual(['kept']);
  });

  it('runs every listener when one throws, and reports that error uncaught as EventTarget does', () => {
    const reported: (() => void)[] = [];
    vi.stubGlobal('queueMicrotask', (callback: () => void) => reported.push(callback));
    try {
      const inFlight = new InFlight({ write: () => Promise.resolve(true), requestTimeoutMs: 0 });
      const pending = inFlight.begin(1, 'tools/call', 'legacy', { deadline: false })!;
      const calls: string[] = [];
      pending.aborts.addEventListener('abort', () => {
        throw new Error('listener broke');
      });
      pending.aborts.addEventListener('abort', () => calls.push('second'));
      inFlight.cancel(1);
      expect(calls).toEqual(['second']);
      expect(reported).toHaveLength(1);
      expect(() => reported[0]!()).toThrow('listener broke');
    } finally {
      vi.unstubAllGlobals();
    }
  });

  it('aborts a real AbortSignal taken before the abort', () => {
    const inFlight = new InFlight({ write: () => Promise.resolve(true), requestTimeoutMs: 0 });
    const pending = inFlight.begin(1, 'tools/call', 'legacy', { deadline: false })!;
    const { signal } = pending;
    expect(signal.aborted).toBe(false);
    inFlight.abortAll(new BridgeError('SHUTTING_DOWN', 'stop'));
    expect(signal.reason).toMatchObject({ code: 'SHUTTING_DOWN' });
  });
});
