// Keeps a secret too long for one call of a store's tool as numbered pieces, with a header entry written last.

import type { SecretStore } from './secret-store.js';

const HEADER = /^chunks:(\d{1,4})$/;

/** `text` in pieces of at most `maxBytes` UTF-8 bytes each, never splitting a character. */
export function toChunks(text: string, maxBytes: number): string[] {
  const pieces: string[] = [];
  let piece = '';
  let bytes = 0;
  for (const char of text) {
    const size = Buffer.byteLength(char);
    if (bytes + size > maxBytes && piece !== '') {
      pieces.push(piece);
      piece = '';
      bytes = 0;
    }
    piece += char;
    bytes += size;
  }
  pieces.push(piece);
  return pieces;
}

/**
 * A SecretStore over `inner` whose entries are at most `maxChunkBytes` each: the secret under
 * `<key>-<n>`, then `chunks:<count>` under `key` itself, last. Writers take the cache's lock; a
 * piece missing under a header reads as a failure (the cache then reads as signed out, and says why).
 */
export function createChunkedStore(inner: SecretStore, maxChunkBytes: number): SecretStore {
  const countOf = (key: string): number | undefined => {
    const header = inner.get(key);
    if (header === undefined) return undefined;
    const match = HEADER.exec(header);
    if (match === null) throw new Error(`${inner.description} holds no piece count under its entry`);
    return Number(match[1]);
  };
  return {
    description: inner.description,
    get(key) {
      const count = countOf(key);
      if (count === undefined) return undefined;
      let text = '';
      for (let index = 0; index < count; index++) {
        const piece = inner.get(`${key}-${index}`);
        if (piece === undefined) throw new Error(`${inner.description} lost piece ${index + 1} of ${count}`);
        text += piece;
      }
      return text;
    },
    set(key, secret) {
      const before = countOf(key) ?? 0;
      const pieces = toChunks(secret, maxChunkBytes);
      pieces.forEach((piece, index) => inner.set(`${key}-${index}`, piece));
      inner.set(key, `chunks:${pieces.length}`);
      for (let index = pieces.length; index < before; index++) inner.delete(`${key}-${index}`);
    },
    delete(key) {
      const count = countOf(key);
      if (count === undefined) return false;
      inner.delete(key);
      for (let index = 0; index < count; index++) inner.delete(`${key}-${index}`);
      return true;
    },
  };
}
