// key=value, key:=json and --args: how command-line words become tool arguments.

import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ArgumentError, buildArguments, parseArgsObject, parseAssignments, readAll } from '../../../src/shell/arguments.js';

describe('parseAssignments', () => {
  it('uses a value that parses as JSON as JSON, and anything else as a string', () => {
    expect(parseAssignments(['count=5', 'ref=T-1', 'open=true', 'tags=["a"]', 'empty=', 'eq=a=b'])).toEqual([
      { key: 'count', value: 5, text: '5' },
      { key: 'ref', value: 'T-1', text: 'T-1' },
      { key: 'open', value: true, text: 'true' },
      { key: 'tags', value: ['a'], text: '["a"]' },
      { key: 'empty', value: '', text: '' },
      { key: 'eq', value: 'a=b', text: 'a=b' },
    ]);
  });

  it('forces JSON with key:=json and refuses text that is not JSON there', () => {
    expect(parseAssignments(['n:=12', 'o:={"a":1}'])).toEqual([
      { key: 'n', value: 12, text: undefined },
      { key: 'o', value: { a: 1 }, text: undefined },
    ]);
    expect(() => parseAssignments(['n:=twelve'])).toThrow(/n:= needs a JSON value, and "twelve" is not JSON/);
  });

  it('refuses a word without a key', () => {
    for (const word of ['ref', '=x', ':=1']) expect(() => parseAssignments([word])).toThrow(ArgumentError);
  });
});

describe('parseArgsObject', () => {
  it('takes a JSON object and refuses anything else, saying what it got', () => {
    expect(parseArgsObject('{"a": 1}', '--args')).toEqual({ a: 1 });
    expect(() => parseArgsObject('{', '--args')).toThrow(/^--args is not JSON/);
    expect(() => parseArgsObject('null', '--args')).toThrow(/not null/);
    expect(() => parseArgsObject('"x"', 'stdin')).toThrow(/^stdin must be a JSON object of arguments, not string/);
  });
});

describe('buildArguments', () => {
  const schema = { type: 'object', properties: { ref: { type: 'string' }, count: { type: 'integer' }, either: { type: ['string', 'integer'] } } };

  it('lays key=value over --args', () => {
    expect(buildArguments({ ref: 'T-1', count: 1 }, parseAssignments(['count=2']), schema)).toEqual({ ref: 'T-1', count: 2 });
  });

  it('keeps the text of a loose value the schema types as string, and JSON where the schema takes it', () => {
    expect(buildArguments({}, parseAssignments(['ref=123', 'count=123', 'either=7', 'other=8']), schema)).toEqual({
      ref: '123',
      count: 123,
      either: 7,
      other: 8,
    });
  });

  it('never second-guesses key:=json', () => {
    expect(buildArguments({}, parseAssignments(['ref:=123']), schema)).toEqual({ ref: 123 });
  });
});

describe('readAll', () => {
  it('reads a stream to its end and refuses more than the limit', async () => {
    expect(await readAll(Readable.from([Buffer.from('{"a":'), '1}']), 100)).toBe('{"a":1}');
    await expect(readAll(Readable.from([Buffer.alloc(11)]), 10)).rejects.toThrow(/larger than 10 bytes/);
  });
});
