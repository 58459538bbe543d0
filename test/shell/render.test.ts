// What shell commands print for people.

import { describe, expect, it } from 'vitest';
import { firstSentence, MAX_NAME_COLUMN_CHARS, MAX_SUMMARY_CHARS, renderCallResult, renderPromptResult, renderReadResult, renderResources, renderTools } from '../../src/shell/render.js';

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
    expect(renderTools([{ name: long, title: 'L' }, { name: 's', title: 'S' }])).toBe(`${long}  L\n${'s'.padEnd(MAX_NAME_COLUMN_CHARS)}  S`);
  });
});

describe('renderResources', () => {
  it('shows the URI, the title or name, and the media type', () => {
    expect(renderResources([{ uri: 'a://1', name: 'one' }, { uri: 'a://2', name: 'two', mimeType: 'text/plain' }])).toBe('a://1  one\na://2  two (text/plain)');
  });
});

describe('results', () => {
  it('print text content and summarize the rest', () => {
    expect(renderCallResult({ content: [{ type: 'text', text: 'hi' }, 'odd', { type: 'image' }] })).toBe('hi\n[content that is not an object]\n[image of unknown type, no data]');
    expect(renderCallResult({})).toBe('');
  });

  it('print resource text and a line for a blob', () => {
    expect(renderReadResult({ contents: [{ uri: 'a://1', text: 'body' }, { uri: 'a://2', mimeType: 'image/png', blob: 'AAAA' }] })).toBe('body\n[image/png a://2, 3 bytes; --json shows the data]');
    expect(renderReadResult({})).toBe('');
  });

  it('print prompt messages as role: content', () => {
    expect(renderPromptResult({ messages: [{ role: 'user', content: { type: 'text', text: 'a' } }, { role: 'assistant', content: { type: 'resource', resource: { uri: 'x://', text: 'b' } } }] })).toBe('user: a\n\nassistant: b');
    expect(renderPromptResult({})).toBe('');
  });
});
