// Readable log lines show what a server sent; a terminal never obeys it.

import { describe, expect, it } from 'vitest';
import { createPrettyFormatter, toTerminalLog } from '../../../src/logging/pretty-log.js';
import { toTerminalLine } from '../../../src/core/terminal-text.js';

const HOSTILE = '\x1b]0;PWNED\x07\x1b]52;c;cHduZWQ=\x07\x1b]8;;https://evil.example/\x1b\\\x1b[2J\x07\x9b2J\u202Eok\rhidden\nforged';
/** What a terminal would act on, line feeds included: a log line is one line. */
// eslint-disable-next-line no-control-regex -- finding control characters is the point of the check
const ACTS_ON = /[\x00-\x1F\x7F-\x9F\u2028\u2029\u202A-\u202E\u2066-\u2069]/;
/** The colours pino-pretty writes on a terminal (ECMA-48 SGR): the only escapes a readable line may hold. */
// eslint-disable-next-line no-control-regex -- as above
const SGR = /\x1b\[[0-9;]*m/g;

/** A line as pino writes it: the message and a server's log payload copied in whole, keys included. */
const line = `${JSON.stringify({ level: 40, time: 0, name: 'fenbs-mcp', msg: `tool ${HOSTILE} failed`, tool: HOSTILE, data: { [`key${HOSTILE}`]: [HOSTILE, 1, null, { deep: HOSTILE }] } })}\n`;

describe('toTerminalLog', () => {
  it('escapes every string of a JSON line, keys included, and keeps its numbers, nulls and shape', () => {
    const log = toTerminalLog(line);
    const safe = toTerminalLine(HOSTILE);
    expect(log).toEqual({
      level: 40,
      time: 0,
      name: 'fenbs-mcp',
      msg: `tool ${safe} failed`,
      tool: safe,
      data: { [`key${safe}`]: [safe, 1, null, { deep: safe }] },
    });
  });

  it('escapes a line that is not a JSON object as one line', () => {
    expect(toTerminalLog(`not json ${HOSTILE}\n`)).toBe(`not json ${toTerminalLine(HOSTILE)}`);
    expect(toTerminalLog('"a string"')).toBe('"a string"');
  });
});

describe('createPrettyFormatter', () => {
  it('prints time, level, message and fields on one line with every control the server sent shown, not obeyed', async () => {
    const format = await createPrettyFormatter(false);
    const text = format(line);
    expect(text).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] WARN: tool \\x1b\]0;PWNED\\x07/);
    expect(text.endsWith('\n')).toBe(true);
    expect(text.slice(0, -1)).not.toMatch(ACTS_ON);
  });

  it('writes no escape sequence but its own colours on a terminal', async () => {
    const format = await createPrettyFormatter(true);
    const text = format(line);
    expect(text).toMatch(SGR);
    expect(text.slice(0, -1).replace(SGR, '')).not.toMatch(ACTS_ON);
  });

  it('passes a line that is not JSON through escaped', async () => {
    const format = await createPrettyFormatter(false);
    expect(format(`plain ${HOSTILE}`)).toBe(`plain ${toTerminalLine(HOSTILE)}\n`);
  });
});
