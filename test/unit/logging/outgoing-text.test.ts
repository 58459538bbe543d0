// The outgoing-text gate: masked before it is cut, at every offset around every cut length and in every spelling the redactor knows.

import { describe, expect, it } from 'vitest';
import { BODY_EXCERPT_CHARS, excerptOf, LOG_EXCERPT_CHARS, SERVER_WORDS_CHARS, terminalExcerptOf } from '../../../src/logging/outgoing-text.js';
import { createRedactor } from '../../../src/logging/redactor.js';

/** A secret with characters every spelling writes differently: `/` (`\/`, %2F), `+` (%2B), `&` (`\u0026`, %26). */
const SECRET = 'sk/live+4f1c0e2b&9a7d46c8b3e5a1f0d9c8b7a6';

/** The ways server text may carry the secret: as is, JSON-escaped (three encoders), URL-encoded. */
const SPELLINGS: Record<string, string> = {
  raw: SECRET,
  'JSON with \\/': JSON.stringify(SECRET).slice(1, -1).replaceAll('/', '\\/'),
  'JSON with \\u escapes': SECRET.replace(/[&+/]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`),
  'URL-encoded': encodeURIComponent(SECRET),
};

describe('excerptOf', () => {
  const redact = createRedactor([SECRET]);

  for (const [spelling, spelled] of Object.entries(SPELLINGS)) {
    it(`never shows a part of a secret spelled ${spelling} that lies across any cut length the bridge uses`, () => {
      for (const cut of [BODY_EXCERPT_CHARS, LOG_EXCERPT_CHARS, SERVER_WORDS_CHARS]) {
        for (let offset = cut - spelled.length - 2; offset <= cut + 2; offset++) {
          const text = `${'x'.repeat(offset)}${spelled} tail`;
          const excerpt = excerptOf(text, redact, cut);
          expect(excerpt.length, `cut ${cut}, offset ${offset}`).toBeLessThanOrEqual(cut + 1);
          for (const part of [SECRET.slice(0, 8), spelled.slice(0, 8)]) expect(excerpt, `cut ${cut}, offset ${offset}`).not.toContain(part);
        }
      }
    });
  }

  it('masks a secret that whitespace folding brings from far past the cut into it', () => {
    const text = `start${' \n\t'.repeat(20_000)}${SECRET}`;
    const excerpt = excerptOf(text, redact, LOG_EXCERPT_CHARS);
    expect(excerpt).not.toContain(SECRET.slice(0, 8));
  });

  it('folds whitespace to one space and cuts at the named length with …', () => {
    expect(excerptOf(' a\n\tb ', redact)).toBe('a b');
    expect(excerptOf('y'.repeat(BODY_EXCERPT_CHARS + 1), redact)).toBe(`${'y'.repeat(BODY_EXCERPT_CHARS)}…`);
    expect(excerptOf('y'.repeat(BODY_EXCERPT_CHARS), redact)).toBe('y'.repeat(BODY_EXCERPT_CHARS));
  });

  it('is empty for text that is only whitespace, however long, and says … only when words were left out', () => {
    expect(excerptOf(' \n'.repeat(100_000), redact, LOG_EXCERPT_CHARS)).toBe('');
    expect(excerptOf(`short${' '.repeat(100_000)}`, redact, LOG_EXCERPT_CHARS)).toBe('short');
    expect(excerptOf(`short${' '.repeat(100_000)}more`, redact, LOG_EXCERPT_CHARS)).toBe('short…');
  });

  it('never leaves half a surrogate pair at the cut', () => {
    const excerpt = excerptOf(`${'y'.repeat(9)}😀😀`, redact, 10);
    expect(excerpt).toBe(`${'y'.repeat(9)}…`);
    expect(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/.test(excerpt)).toBe(false);
  });

  it('bounds the work on a body of megabytes, and says it was cut', () => {
    const excerpt = excerptOf(`${'word '.repeat(2_000_000)}`, redact, LOG_EXCERPT_CHARS);
    expect(excerpt.length).toBe(LOG_EXCERPT_CHARS + 1);
    expect(excerpt.endsWith('…')).toBe(true);
  });
});

describe('terminalExcerptOf', () => {
  it('masks, then cuts, then shows every control character instead of obeying it', () => {
    const redact = createRedactor([SECRET]);
    const line = terminalExcerptOf(`\u001b]8;;https://evil.example\u0007click\u001b]8;;\u0007 ${SECRET}`, redact, SERVER_WORDS_CHARS);
    expect(line).not.toContain('\u001b');
    expect(line).not.toContain('\u0007');
    expect(line).not.toContain(SECRET.slice(0, 8));
    expect(line).toContain('[REDACTED]');
  });
});
