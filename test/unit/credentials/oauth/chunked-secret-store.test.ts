import { describe, expect, it } from 'vitest';
import { createChunkedStore, toChunks } from '../../../../src/credentials/oauth/chunked-secret-store.js';
import type { SecretStore } from '../../../../src/credentials/oauth/secret-store.js';

const KEY = '0123456789abcdef';

/** A SecretStore in memory that refuses what is longer than `maxBytes`, as a tool with a line limit would. */
function boundedStore(maxBytes: number): SecretStore & { kept: Map<string, string>; order: string[] } {
  const kept = new Map<string, string>();
  const order: string[] = [];
  return {
    kept,
    order,
    description: 'a bounded store',
    get: (key) => kept.get(key),
    set: (key, secret) => {
      if (Buffer.byteLength(secret) > maxBytes) throw new Error(`more than ${maxBytes} bytes`);
      order.push(key);
      kept.set(key, secret);
    },
    delete: (key) => kept.delete(key),
  };
}

describe('toChunks', () => {
  it('cuts into pieces of at most the bound in UTF-8 bytes, never inside a character', () => {
    expect(toChunks('abcdefg', 3)).toEqual(['abc', 'def', 'g']);
    expect(toChunks('a€b', 3)).toEqual(['a', '€', 'b']);
    expect(toChunks('', 3)).toEqual(['']);
  });
});

describe('createChunkedStore', () => {
  it('keeps a secret longer than one call may carry in pieces, the header last, and reads it back whole', () => {
    const inner = boundedStore(384);
    const store = createChunkedStore(inner, 384);
    const secret = 'x'.repeat(1_000);
    store.set(KEY, secret);
    expect(inner.order).toEqual([`${KEY}-0`, `${KEY}-1`, `${KEY}-2`, KEY]);
    expect(inner.kept.get(KEY)).toBe('chunks:3');
    expect(store.get(KEY)).toBe(secret);
  });

  it('forgets the pieces a shorter secret no longer needs, and every piece on delete', () => {
    const inner = boundedStore(384);
    const store = createChunkedStore(inner, 384);
    store.set(KEY, 'x'.repeat(1_000));
    store.set(KEY, 'short');
    expect([...inner.kept.keys()].sort()).toEqual([KEY, `${KEY}-0`]);
    expect(store.get(KEY)).toBe('short');
    expect(store.delete(KEY)).toBe(true);
    expect(inner.kept.size).toBe(0);
    expect(store.delete(KEY)).toBe(false);
    expect(store.get(KEY)).toBeUndefined();
  });

  it('reads a missing piece, or an entry that is no header, as a failure rather than as a shorter secret', () => {
    const inner = boundedStore(384);
    const store = createChunkedStore(inner, 384);
    store.set(KEY, 'x'.repeat(1_000));
    inner.kept.delete(`${KEY}-1`);
    expect(() => store.get(KEY)).toThrow('a bounded store lost piece 2 of 3');
    inner.kept.set(KEY, '{"not":"a header"}');
    expect(() => store.get(KEY)).toThrow('a bounded store holds no piece count under its entry');
  });
});
