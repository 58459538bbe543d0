// Text a server chose is shown on a terminal, never obeyed by it.

import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { shorten, toTerminalJson, toTerminalLine, toTerminalText } from '../../../src/core/terminal-text.js';

/** True when `text` holds a character a terminal would act on; only line feed and tab when `keep` says so. */
function holdsControl(text: string, keep = ''): boolean {
  return [...text].some((char) => {
    const code = char.codePointAt(0)!;
    const control =
      code < 0x20 ||
      (code >= 0x7f && code <= 0x9f) ||
      code === 0x2028 ||
      code === 0x2029 ||
      (code >= 0x202a && code <= 0x202e) ||
      (code >= 0x2066 && code <= 0x2069);
    return control && !keep.includes(char);
  });
}

const HOSTILE = [
  '\x1b]0;pwned\x07', // OSC 0: sets the window title, ended by BEL
  '\x1b]52;c;ZWNobyBwd25lZA==\x1b\\', // OSC 52: writes the clipboard
  '\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\', // OSC 8: a hidden hyperlink
  '\x1b[2J\x1b[H', // CSI: clears the screen, homes the cursor
  '\x9b31m', // C1 CSI (8-bit)
  '\x9d0;title\x9c', // C1 OSC and ST
  'safe\rhidden', // CR: later text overwrites earlier text
  'a\bb\x7f', // BS, DEL
  'admin\u202e\u2066txt.exe', // bidi override and isolate
  'one\u2028two', // line separator
];

describe('toTerminalLine', () => {
  it('leaves ordinary text, Unicode included, as it is', () => {
    expect(toTerminalLine('Créer une tâche — 任务 ✓')).toBe('Créer une tâche — 任务 ✓');
  });

  it('shows every C0, DEL, C1, separator and bidi control as a visible escape', () => {
    for (const text of HOSTILE) {
      expect(holdsControl(text)).toBe(true);
      expect(holdsControl(toTerminalLine(text))).toBe(false);
    }
    expect(toTerminalLine('\x1b]0;pwned\x07')).toBe('\\x1b]0;pwned\\x07');
    expect(toTerminalLine('\x9b31m')).toBe('\\x9b31m');
    expect(toTerminalLine('admin\u202etxt')).toBe('admin\\u202etxt');
  });

  it('shows a line break and a tab as escapes, so one string is one line', () => {
    expect(toTerminalLine('a\nb\tc\r\nd')).toBe('a\\x0ab\\x09c\\x0d\\x0ad');
  });

  it('gives the same answer when called again (no regex state carried between calls)', () => {
    expect(toTerminalLine('\x1b')).toBe('\\x1b');
    expect(toTerminalLine('\x1b')).toBe('\\x1b');
    expect(toTerminalLine('plain')).toBe('plain');
  });
});

describe('toTerminalText', () => {
  it('keeps line feeds and tabs and prints CRLF as LF', () => {
    expect(toTerminalText('a\tb\nc\r\nd')).toBe('a\tb\nc\nd');
  });

  it('shows every other control as a visible escape, a lone CR included', () => {
    for (const text of HOSTILE) expect(holdsControl(toTerminalText(text), '\n\t')).toBe(false);
    expect(toTerminalText('safe\rhidden\n\x1b[2J')).toBe('safe\\x0dhidden\n\\x1b[2J');
  });
});

describe('shorten', () => {
  it('keeps text within the limit, cuts longer text to the limit with …, and never splits a surrogate pair', () => {
    expect(shorten('abc', 3)).toBe('abc');
    expect(shorten('abcd', 3)).toBe('ab…');
    // Four code points in eight code units: within a limit of four.
    expect(shorten('😀😀😀😀', 4)).toBe('😀😀😀😀');
    expect(shorten('😀😀😀😀😀', 4)).toBe('😀😀😀…');
  });
});

describe('toTerminalJson', () => {
  const TERMINAL_UNSAFE = /[\u0080-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
  it('escapes C1 controls, bidi marks, overrides and isolates and line separators as \\u escapes: still JSON, the same value', () => {
    const risky = fc.constantFrom('\u009b', '\u009d', '\u0085', '\u202e', '\u2066', '\u2069', '\u200f', '\u061c', '\u2028', 'a', 'é', '"', '\\', '\n');
    const value = fc.letrec((tie) => ({
      text: fc.string({ unit: fc.oneof(risky, fc.string({ minLength: 1, maxLength: 1 })), maxLength: 12 }),
      json: fc.oneof(
        { depthSize: 'small' },
        tie('text'),
        fc.integer(),
        fc.array(tie('json'), { maxLength: 3 }),
        fc.dictionary(tie('text') as fc.Arbitrary<string>, tie('json'), { maxKeys: 3 }),
      ),
    })).json;
    fc.assert(
      fc.property(value, (v) => {
        const line = JSON.stringify(v);
        const shown = toTerminalJson(line);
        expect(JSON.parse(shown)).toEqual(JSON.parse(line));
        expect(TERMINAL_UNSAFE.test(shown)).toBe(false);
      }),
      { numRuns: 500 },
    );
  });
  it('returns text without them as it is', () => {
    const line = '{"jsonrpc":"2.0","id":1,"result":{"text":"café"}}';
    expect(toTerminalJson(line)).toBe(line);
    expect(toTerminalJson('{"t":"a\u009b2Jb\u202ec"}')).toBe('{"t":"a\\u009b2Jb\\u202ec"}');
  });
});
