// Text a server chose is shown on a terminal, never obeyed by it.

import { describe, expect, it } from 'vitest';
import { shorten, toTerminalLine, toTerminalText } from '../../../src/core/terminal-text.js';

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
