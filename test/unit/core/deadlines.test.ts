import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeadlineList } from '../../../src/core/deadlines.js';

describe('DeadlineList', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('runs each deadline once, in deadline order, when its time has passed', () => {
    const list = new DeadlineList();
    const fired: string[] = [];
    list.add(300, () => fired.push('c'));
    list.add(100, () => fired.push('a'));
    list.add(200, () => fired.push('b'));
    vi.advanceTimersByTime(99);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual(['a']);
    vi.advanceTimersByTime(200);
    expect(fired).toEqual(['a', 'b', 'c']);
    vi.advanceTimersByTime(10_000);
    expect(fired).toEqual(['a', 'b', 'c']);
  });

  it('never runs a removed deadline, wherever it was in the list', () => {
    const list = new DeadlineList();
    const fired: string[] = [];
    const first = list.add(100, () => fired.push('first'));
    const middle = list.add(100, () => fired.push('middle'));
    const last = list.add(100, () => fired.push('last'));
    list.add(100, () => fired.push('kept'));
    list.remove(middle);
    list.remove(first);
    list.remove(last);
    list.remove(last);
    vi.advanceTimersByTime(100);
    expect(fired).toEqual(['kept']);
  });

  it('keeps working after the list ran empty', () => {
    const list = new DeadlineList();
    const fired: number[] = [];
    list.remove(list.add(50, () => fired.push(0)));
    vi.advanceTimersByTime(50);
    list.add(50, () => fired.push(1));
    vi.advanceTimersByTime(49);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual([1]);
  });
});
