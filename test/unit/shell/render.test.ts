// What shell commands print for people.

import { describe, expect, it } from 'vitest';
import { toTerminalLine, toTerminalText } from '../../../src/core/terminal-text.js';
import {
  firstSentence,
  MAX_DETAIL_CHARS,
  MAX_NAME_CHARS,
  MAX_NAME_COLUMN_CHARS,
  MAX_SUMMARY_CHARS,
  renderCallResult,
  renderPromptResult,
  renderPrompts,
  renderReadResult,
  renderResources,
  renderTools,
  MAX_LISTED_ARGUMENTS,
} from '../../../src/shell/render.js';

describe('firstSentence', () => {
  it('takes the first sentence on one line, shortened past MAX_SUMMARY_CHARS', () => {
    expect(firstSentence('Reads a task.\nThen more. And more.')).toBe('Reads a task.');
    expect(firstSentence('Version 1.2 is here! Yes')).toBe('Version 1.2 is here!');
    expect(firstSentence('no full stop')).toBe('no full stop');
    const long = firstSentence('x'.repeat(MAX_SUMMARY_CHARS + 10));
    expect(long).toHaveLength(MAX_SUMMARY_CHARS);
    expect(long.endsWith('…')).toBe(true);
  });
});

describe('renderTools', () => {
  it('prefers the title, then annotations.title, then the description; a tool with none is its name alone', () => {
    const text = renderTools([
      { name: 'a', title: 'Title A', description: 'Ignored.' },
      { name: 'bb', annotations: { title: 'Annotated' } },
      { name: 'c', description: 'Does c. Really.' },
      { name: 'd' },
    ]);
    expect(text).toBe('a   Title A\nbb  Annotated\nc   Does c.\nd');
  });

  it('stops lining up names longer than MAX_NAME_COLUMN_CHARS', () => {
    const long = 'n'.repeat(MAX_NAME_COLUMN_CHARS + 5);
    expect(
      renderTools([
        { name: long, title: 'L' },
        { name: 's', title: 'S' },
      ]),
    ).toBe(`${long}  L\n${'s'.padEnd(MAX_NAME_COLUMN_CHARS)}  S`);
  });
});

describe('renderTools arguments', () => {
  it('names the arguments of each tool from its input schema, a required one marked *, as prompts does', () => {
    expect(
      renderTools([
        { name: 'tasks_get', title: 'Get a task', inputSchema: { type: 'object', properties: { ref: { type: 'string' }, verbose: {} }, required: ['ref'] } },
        { name: 'ping', inputSchema: { type: 'object' } },
      ]),
    ).toBe('tasks_get  Get a task (arguments: ref*, verbose)\nping');
  });

  it(`lists at most MAX_LISTED_ARGUMENTS names and says how many more there are`, () => {
    const properties = Object.fromEntries(Array.from({ length: MAX_LISTED_ARGUMENTS + 3 }, (_, i) => [`a${i}`, {}]));
    const line = renderTools([{ name: 't', inputSchema: { type: 'object', properties } }]);
    expect(line).toContain(`a${MAX_LISTED_ARGUMENTS - 1}, +3 more)`);
    expect(line).not.toContain(`a${MAX_LISTED_ARGUMENTS},`);
  });
});

describe('renderResources', () => {
  it('shows the URI, the title or name, and the media type', () => {
    expect(
      renderResources([
        { uri: 'a://1', name: 'one' },
        { uri: 'a://2', name: 'two', mimeType: 'text/plain' },
      ]),
    ).toBe('a://1  one\na://2  two (text/plain)');
  });
});

describe('results', () => {
  it('print text content and summarize the rest', () => {
    expect(renderCallResult({ content: [{ type: 'text', text: 'hi' }, 'odd', { type: 'image' }] })).toBe(
      'hi\n[content that is not an object]\n[image of unknown type, no data]',
    );
    expect(renderCallResult({})).toBe('');
  });

  it('print resource text and a line for a blob', () => {
    expect(
      renderReadResult({
        contents: [
          { uri: 'a://1', text: 'body' },
          { uri: 'a://2', mimeType: 'image/png', blob: 'AAAA' },
        ],
      }),
    ).toBe('body\n[image/png a://2, 3 bytes; --json shows the data]');
    expect(renderReadResult({})).toBe('');
  });

  it('print prompt messages as role: content', () => {
    expect(
      renderPromptResult({
        messages: [
          { role: 'user', content: { type: 'text', text: 'a' } },
          { role: 'assistant', content: { type: 'resource', resource: { uri: 'x://', text: 'b' } } },
        ],
      }),
    ).toBe('user: a\n\nassistant: b');
    expect(renderPromptResult({})).toBe('');
  });
});

/** True when `text` holds a character a terminal would act on (C0 but LF and tab, DEL, C1, separators, bidi controls). */
// eslint-disable-next-line no-control-regex -- finding control characters is the point of the check
const ACTS_ON = /[\x00-\x08\x0B-\x1F\x7F-\x9F\u2028\u2029\u202A-\u202E\u2066-\u2069]/;
const HOSTILE = '\x1b]0;PWNED\x07\x1b]52;c;cHduZWQ=\x07\x1b]8;;https://evil.example/\x1b\\link\x1b]8;;\x1b\\\x1b[2J\x07\x9b31m\u202Eok\rhidden';

describe('server text in what is printed', () => {
  it('shows every control character in names, titles, descriptions, URIs, media types and argument names, one row per line', () => {
    const tools = renderTools([
      { name: `tool${HOSTILE}`, title: `title${HOSTILE}` },
      { name: 'b\nc', description: `first\r${HOSTILE}. Second.` },
    ]);
    const resources = renderResources([{ uri: `a://${HOSTILE}`, name: HOSTILE, mimeType: `text/${HOSTILE}` }]);
    const prompts = renderPrompts([{ name: HOSTILE, arguments: [{ name: `arg${HOSTILE}`, required: true }] }]);
    for (const [text, rows] of [
      [tools, 2],
      [resources, 1],
      [prompts, 1],
    ] as const) {
      expect(text).not.toMatch(ACTS_ON);
      expect(text.split('\n')).toHaveLength(rows);
    }
    expect(tools.split('\n')[0]).toBe(`${toTerminalLine(`tool${HOSTILE}`)}  ${toTerminalLine(`title${HOSTILE}`)}`);
    expect(tools).toContain('tool\\x1b]0;PWNED\\x07\\x1b]52;c;');
    expect(tools.split('\n')[1]).toMatch(/^b\\x0ac +first /);
  });

  it('keeps the line feeds and tabs of a result, a resource and a prompt message, and shows every other control', () => {
    const call = renderCallResult({
      content: [
        { type: 'text', text: `line one\n\tline two\r\n${HOSTILE}` },
        { type: 'image', mimeType: `image/${HOSTILE}`, data: '' },
        { type: 'resource_link', uri: `file:///${HOSTILE}`, name: `a\n${HOSTILE}` },
        { type: 'resource', resource: { uri: 'x://', text: HOSTILE } },
        { type: 'resource', resource: { uri: `x://${HOSTILE}`, mimeType: HOSTILE, blob: 'AAAA' } },
        { type: `kind${HOSTILE}` },
      ],
    });
    expect(call).not.toMatch(ACTS_ON);
    expect(call.split('\n').slice(0, 2)).toEqual(['line one', '\tline two']);
    // One line per block after the text's own three.
    expect(call.split('\n')).toHaveLength(8);
    expect(renderCallResult({ content: [], structuredContent: { note: HOSTILE } })).not.toMatch(ACTS_ON);
    expect(renderReadResult({ contents: [{ uri: 'a://1', text: `body\n${HOSTILE}` }] })).toBe(`body\n${toTerminalText(HOSTILE)}`);
    const prompt = renderPromptResult({ messages: [{ role: `user${HOSTILE}`, content: { type: 'text', text: `a\n${HOSTILE}` } }] });
    expect(prompt).not.toMatch(ACTS_ON);
    expect(prompt.split('\n')).toHaveLength(2);
  });

  it('bounds a megabyte name, a million combining characters, a long title and a long argument list in a list', () => {
    const huge = 'n'.repeat(1024 * 1024);
    const combining = `e${'\u0301'.repeat(1_000_000)}`;
    const text = renderTools([{ name: huge, title: 't'.repeat(10_000) }, { name: combining, description: '\u0301'.repeat(1_000_000) }, { name: 'short' }]);
    const [first, second, third] = text.split('\n');
    expect([...first!]).toHaveLength(MAX_NAME_CHARS + 2 + MAX_SUMMARY_CHARS);
    expect(first!.startsWith(`${'n'.repeat(MAX_NAME_CHARS - 1)}…  ${'t'.repeat(MAX_SUMMARY_CHARS - 1)}…`)).toBe(true);
    expect([...second!]).toHaveLength(MAX_NAME_CHARS + 2 + MAX_SUMMARY_CHARS);
    expect(third).toBe('short');
    const prompts = renderPrompts([{ name: 'p', arguments: Array.from({ length: 100_000 }, (_, index) => ({ name: `argument${index}` })) }]);
    expect([...prompts].length).toBeLessThanOrEqual('p  '.length + MAX_DETAIL_CHARS);
    expect(prompts).toContain(`argument${MAX_LISTED_ARGUMENTS - 1}, +${100_000 - MAX_LISTED_ARGUMENTS} more)`);
    const longNames = renderTools([
      { name: 't', inputSchema: { properties: Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`${i}${'a'.repeat(10_000)}`, {}])) } },
    ]);
    expect([...longNames]).toHaveLength('t  '.length + MAX_DETAIL_CHARS);
  });
});
