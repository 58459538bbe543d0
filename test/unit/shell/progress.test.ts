// A call's progress: a bar or a spinner on a terminal, plain info lines otherwise.

import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  BAR_WIDTH_CHARS,
  CLEAR_LINE,
  createProgressView,
  describeProgress,
  MAX_PROGRESS_MESSAGE_CHARS,
  percentOf,
  SPINNER_FRAME_MS,
} from '../../../src/shell/progress.js';

function terminal(columns?: number) {
  const target = { written: [] as string[], isTTY: true, ...(columns === undefined ? {} : { columns }), write: (text: string) => target.written.push(text) };
  return target;
}
const silent = pino({ level: 'silent' });

afterEach(() => {
  vi.useRealTimers();
});

describe('percentOf and describeProgress', () => {
  it('round down, stay within 0..100, and show the count alone without a total', () => {
    expect(percentOf(2, 3)).toBe(66);
    expect(percentOf(7, 5)).toBe(100);
    expect(percentOf(-1, 5)).toBe(0);
    expect(percentOf(1, 0)).toBe(0);
    expect(describeProgress({ progress: 3, total: 5 })).toBe('3/5 60%');
    expect(describeProgress({ progress: 3, message: 'copying' })).toBe('3 copying');
  });
});

describe('on a terminal', () => {
  it('draws a bar redrawn in place and erases it once', () => {
    const target = terminal(200);
    const view = createProgressView(target, silent);
    view.update({ progress: 1, total: 4 });
    view.update({ progress: 4, total: 4, message: 'done' });
    expect(target.written).toEqual([
      `${CLEAR_LINE}${'█'.repeat(6)}${'░'.repeat(BAR_WIDTH_CHARS - 6)} 1/4 25%`,
      `${CLEAR_LINE}${'█'.repeat(BAR_WIDTH_CHARS)} 4/4 100% done`,
    ]);
    view.clear();
    view.clear();
    expect(target.written.slice(2)).toEqual([CLEAR_LINE]);
  });

  it('cuts the line one character short of the width, and takes 80 columns when the terminal says 0 or nothing', () => {
    const narrow = terminal(10);
    createProgressView(narrow, silent).update({ progress: 1, total: 2 });
    expect(narrow.written[0]).toBe(`${CLEAR_LINE}${'█'.repeat(9)}`);
    for (const target of [terminal(0), terminal()]) {
      createProgressView(target, silent).update({ progress: 1, total: 2, message: 'x'.repeat(100) });
      expect([...target.written[0]!.slice(CLEAR_LINE.length)]).toHaveLength(79);
    }
  });

  it('turns a spinner with the message while the total is unknown, and stops it for a bar or the end', () => {
    vi.useFakeTimers();
    const target = terminal(80);
    const view = createProgressView(target, silent);
    view.update({ progress: 1, message: 'scanning' });
    expect(target.written[0]).toBe(`${CLEAR_LINE}⠙ scanning (1)`);
    vi.advanceTimersByTime(SPINNER_FRAME_MS);
    expect(target.written[1]).toBe(`${CLEAR_LINE}⠹ scanning (1)`);
    view.update({ progress: 2 });
    expect(target.written[2]).toBe(`${CLEAR_LINE}⠸ working (2)`);
    view.update({ progress: 1, total: 2 });
    const drawn = target.written.length;
    vi.advanceTimersByTime(SPINNER_FRAME_MS * 5);
    expect(target.written).toHaveLength(drawn);
    view.update({ progress: 3 });
    view.clear();
    const cleared = target.written.length;
    vi.advanceTimersByTime(SPINNER_FRAME_MS * 5);
    expect(target.written).toHaveLength(cleared);
  });
});

describe('without a terminal', () => {
  it('logs one plain info line per report and never writes to the stream', async () => {
    const stream = new PassThrough();
    stream.setEncoding('utf8');
    const logged = once(stream, 'data');
    const target = { written: [] as string[], write: (text: string) => target.written.push(text) };
    const view = createProgressView(target, pino({ level: 'info' }, stream));
    view.update({ progress: 1, total: 2, message: 'half' });
    view.clear();
    expect(target.written).toEqual([]);
    const [line] = (await logged) as [string];
    expect(JSON.parse(line)).toMatchObject({ level: 30, msg: 'progress 1/2 50% half' });
  });
});

describe('a server message in a progress report', () => {
  const HOSTILE = '\x1b]0;PWNED\x07\x1b]52;c;cHduZWQ=\x07\x1b]8;;https://evil.example/\x1b\\\x1b[2J\x07\x9b2J\u202Eok\rhidden\nnext';
  const escaped = '\\x1b]0;PWNED\\x07\\x1b]52;c;cHduZWQ=\\x07\\x1b]8;;https://evil.example/\\x1b\\\\x1b[2J\\x07\\x9b2J\\u202eok\\x0dhidden\\x0anext';

  it('is drawn on a terminal with every control shown: the bar writes no escape but its own CLEAR_LINE', () => {
    vi.useFakeTimers();
    const target = terminal(400);
    const view = createProgressView(target, silent);
    view.update({ progress: 1, total: 2, message: HOSTILE });
    view.update({ progress: 1, message: HOSTILE });
    vi.advanceTimersByTime(SPINNER_FRAME_MS);
    view.clear();
    expect(target.written[0]).toBe(`${CLEAR_LINE}${'█'.repeat(12)}${'░'.repeat(12)} 1/2 50% ${escaped}`);
    expect(target.written[1]).toBe(`${CLEAR_LINE}⠙ ${escaped} (1)`);
    // eslint-disable-next-line no-control-regex -- finding control characters is the point of the check
    for (const written of target.written) expect(written.slice(CLEAR_LINE.length)).not.toMatch(/[\x00-\x1f\x7f-\x9f\u202e]/);
  });

  it('is logged on one line with every control shown without a terminal', async () => {
    const stream = new PassThrough();
    stream.setEncoding('utf8');
    const logged = once(stream, 'data');
    createProgressView({ write: () => true }, pino({ level: 'info' }, stream)).update({ progress: 1, message: HOSTILE });
    const [line] = (await logged) as [string];
    expect(JSON.parse(line).msg).toBe(`progress 1 ${escaped}`);
  });

  it('is cut to MAX_PROGRESS_MESSAGE_CHARS, so a megabyte message is not redrawn ten times a second', () => {
    const target = terminal(100_000);
    createProgressView(target, silent).update({ progress: 1, message: 'm'.repeat(1024 * 1024) });
    expect(target.written[0]).toBe(`${CLEAR_LINE}⠙ ${'m'.repeat(MAX_PROGRESS_MESSAGE_CHARS - 1)}… (1)`);
  });
});
