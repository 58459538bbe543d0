// headBeforeCut: a body cut before its end loses the run of secret characters the cut fell inside, and no more.

import { describe, expect, it } from 'vitest';
import { headBeforeCut } from '../../../src/logging/outgoing-text.js';

describe('headBeforeCut', () => {
  it('drops the last run of the characters a secret is written with, in any spelling', () => {
    expect(headBeforeCut('error: bad token tok-4f1c0e2b')).toBe('error: bad token ');
    expect(headBeforeCut('error: {"token":"tok\\u002f4f1c%2F0e')).toBe('error: {"token":"');
    expect(headBeforeCut('ends on a break\n')).toBe('ends on a break\n');
  });

  it('drops all of a body that is one run, and stays linear on a run of a megabyte', () => {
    expect(headBeforeCut('a'.repeat(1_000_000))).toBe('');
    const text = `${'a'.repeat(1_000_000)} end`;
    expect(headBeforeCut(text)).toBe(`${'a'.repeat(1_000_000)} `);
  });
});
