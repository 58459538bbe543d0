import { describe, expect, it } from 'vitest';
import { PasteJoiner } from '../../../src/stdio/paste-joiner.js';

const PRETTY = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', arguments: { text: 'a } ] " \\ {' } } }, null, 2).split('\n');

/** Every line through one joiner, then what stdin's end flushes. */
function joinAll(lines: string[], joiner = new PasteJoiner(1024 * 1024)) {
  return [...lines.flatMap((line) => joiner.push(line)), ...joiner.flush()];
}

describe('PasteJoiner', () => {
  it('joins a pretty-printed message into one line that parses to the same value', () => {
    const out = joinAll(PRETTY);
    expect(out).toHaveLength(1);
    expect(out[0]!.kind).toBe('line');
    expect(JSON.parse((out[0] as { text: string }).text)).toEqual(JSON.parse(PRETTY.join('')));
  });

  it('holds nothing back that is not an unclosed object or array: one line stays one message', () => {
    const lines = ['{"jsonrpc":"2.0","id":1,"method":"ping"}', 'not json {', '  42', '"{"', '[1, 2]', '}'];
    expect(joinAll(lines)).toEqual(lines.map((text) => ({ kind: 'line', text })));
  });

  it('passes a value whose string runs to the end of its line (no JSON string holds a line break) at once, to get its one parse error', () => {
    const joiner = new PasteJoiner(1024);
    expect(joiner.push('{"text": "no end')).toEqual([{ kind: 'line', text: '{"text": "no end' }]);
    expect(joiner.push('{')).toEqual([]);
    expect(joiner.push('  "a": "half')).toEqual([{ kind: 'line', text: '{\n  "a": "half' }]);
    expect(joiner.holding).toBe(false);
  });

  it('hands on what is held when stdin ends with the value still open', () => {
    const joiner = new PasteJoiner(1024);
    expect([...joiner.push('{'), ...joiner.push('  "id": 1,')]).toEqual([]);
    expect(joiner.flush()).toEqual([{ kind: 'line', text: '{\n  "id": 1,' }]);
    expect(joiner.flush()).toEqual([]);
  });

  it('ends a value at its closing bracket even when more closers follow, so a stray one costs one error, not a held line', () => {
    expect(joinAll(['[', '1', ']]', '{"id":2}'])).toEqual([
      { kind: 'line', text: '[\n1\n]]' },
      { kind: 'line', text: '{"id":2}' },
    ]);
  });

  it('answers a value longer than the byte limit, or than MAX_JOINED_LINES lines, once, and reads the next line afresh', () => {
    const bytes = new PasteJoiner(20);
    expect([...bytes.push('{'), ...bytes.push('"a": "0123456789",'), ...bytes.push('"b": 1')]).toEqual([{ kind: 'too-long', lines: 3, bytes: 27 }]);
    expect(bytes.push('{"id":3}')).toEqual([{ kind: 'line', text: '{"id":3}' }]);
    const lines = new PasteJoiner(1024 * 1024, 3);
    expect(joinAll(['[', '1,', '2,', '3,'])).toHaveLength(1);
    expect([...lines.push('['), ...lines.push('1,'), ...lines.push('2,'), ...lines.push('3,')]).toEqual([{ kind: 'too-long', lines: 4, bytes: 10 }]);
  });

  it('answers a paste over the limit once: the rest of it, to where its brackets close, gets no answer line by line', () => {
    const joiner = new PasteJoiner(200);
    const paste = [
      '{',
      '  "jsonrpc": "2.0",',
      '  "id": 7,',
      '  "method": "tools/call",',
      '  "params": {',
      ...Array.from({ length: 140 }, (_, i) => `    "k${i}": "value number ${i}",`),
      '    "last": "}"',
      '  }',
      '}',
    ];
    const out = paste.flatMap((line) => joiner.push(line));
    expect(out).toEqual([expect.objectContaining({ kind: 'too-long' })]);
    expect(joiner.push('{"jsonrpc":"2.0","id":8,"method":"ping"}')).toEqual([{ kind: 'line', text: '{"jsonrpc":"2.0","id":8,"method":"ping"}' }]);
  });

  it('ends the skip of a paste that never closes at a line that starts a new value at its first column', () => {
    const joiner = new PasteJoiner(30);
    const out = ['[', '  "0123456789",', '  "0123456789",', '  "0123456789",', '  ["never closed"'].flatMap((line) => joiner.push(line));
    expect(out).toHaveLength(1);
    expect(joiner.push('  "still the old paste"')).toEqual([]);
    expect(joiner.push('{"id":9}')).toEqual([{ kind: 'line', text: '{"id":9}' }]);
    expect(joiner.push('plain')).toEqual([{ kind: 'line', text: 'plain' }]);
  });
});
