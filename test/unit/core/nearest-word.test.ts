import { describe, expect, it } from 'vitest';
import { editDistance, MAX_SUGGESTION_CANDIDATES, MAX_SUGGESTION_WORD_CHARS, nearestWord } from '../../../src/core/nearest-word.js';

describe('nearestWord', () => {
  it('finds the nearest known word within the edits allowed, the first of equals, and nothing further', () => {
    expect(editDistance('dcotor', 'doctor')).toBe(2);
    expect(nearestWord('dcotor', ['tools', 'doctor', 'call'], 2)).toBe('doctor');
    expect(nearestWord('demo://bord', ['demo://board/open', 'demo://board'], 2)).toBe('demo://board');
    expect(nearestWord('tols', ['tool', 'tools'], 2)).toBe('tools');
    expect(nearestWord('cat', ['bat', 'hat'], 1)).toBe('bat');
    expect(nearestWord('zzzzzz', ['tools'], 2)).toBeUndefined();
  });

  it(`compares at most MAX_SUGGESTION_CANDIDATES words, none longer than MAX_SUGGESTION_WORD_CHARS`, () => {
    const many = [...Array.from({ length: MAX_SUGGESTION_CANDIDATES }, (_, i) => `unrelated-${i}-xxxxxxxx`), 'target'];
    expect(nearestWord('targe', many, 2)).toBeUndefined();
    expect(nearestWord('targe', many.slice(1), 2)).toBe('target');
    const long = 'a'.repeat(MAX_SUGGESTION_WORD_CHARS + 1);
    expect(nearestWord(long, [long], 2)).toBeUndefined();
    expect(nearestWord('a', [long, 'b'], 2)).toBe('b');
  });
});
