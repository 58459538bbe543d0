import { describe, expect, it } from 'vitest';
import { setFlagsFromString } from 'node:v8';
import { runInThisContext } from 'node:vm';
import { checkLine, classifyServerMessage, idKey, LongId, MAX_LOGGED_ID_CHARS, modernVersionOf, toLoggedId } from '../../../src/core/json-rpc.js';

describe('checkLine', () => {
  it.each([
    ['a request', '{"jsonrpc":"2.0","id":1,"method":"tools/list"}', { kind: 'request', id: 1, method: 'tools/list' }],
    ['a request with a string id', '{"jsonrpc":"2.0","id":"a","method":"ping","params":{}}', { kind: 'request', id: 'a', method: 'ping' }],
    ['a notification', '{"jsonrpc":"2.0","method":"notifications/initialized"}', { kind: 'notification', method: 'notifications/initialized' }],
    ['a result response', '{"jsonrpc":"2.0","id":7,"result":{}}', { kind: 'response', id: 7 }],
    ['an error response', '{"jsonrpc":"2.0","id":"s1","error":{"code":-1,"message":"no"}}', { kind: 'response', id: 's1' }],
  ])('accepts %s unchanged', (_title, line, expected) => {
    const checked = checkLine(line);
    expect(checked).toMatchObject(expected);
    expect((checked as { message: unknown }).message).toEqual(JSON.parse(line));
  });

  it.each([
    ['text that is not JSON', 'hello', -32700, [null]],
    ['truncated JSON', '{"jsonrpc":"2.0","id":1', -32700, [null]],
    ['a JSON string', '"hi"', -32600, [null]],
    ['a number', '42', -32600, [null]],
    ['null', 'null', -32600, [null]],
    ['jsonrpc 1.0', '{"jsonrpc":"1.0","id":3,"method":"x"}', -32600, [3]],
    ['a missing jsonrpc', '{"id":"q","method":"x"}', -32600, ['q']],
    ['a null id', '{"jsonrpc":"2.0","id":null,"method":"x"}', -32600, [null]],
    ['a fractional id', '{"jsonrpc":"2.0","id":1.5,"method":"x"}', -32600, [null]],
    ['an object id', '{"jsonrpc":"2.0","id":{"a":1},"method":"x"}', -32600, [null]],
    ['a method that is not a string', '{"jsonrpc":"2.0","id":4,"method":5}', -32600, [4]],
    ['params that are an array', '{"jsonrpc":"2.0","id":5,"method":"x","params":[1]}', -32600, [5]],
    ['params that are null', '{"jsonrpc":"2.0","id":6,"method":"x","params":null}', -32600, [6]],
    ['a response with both result and error', '{"jsonrpc":"2.0","id":8,"result":{},"error":{}}', -32600, [8]],
    ['an object with neither method nor result', '{"jsonrpc":"2.0","id":9}', -32600, [9]],
    ['an empty batch', '[]', -32600, [null]],
    ['a batch without usable ids', '[{"jsonrpc":"2.0","method":"n"},1,{"id":null}]', -32600, [null]],
    [
      'a batch with usable ids',
      '[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":"b","method":"c"},{"id":2.5}]',
      -32600,
      [1, 'b'],
    ],
  ])('rejects %s with one reply per usable id', (_title, line, code, ids) => {
    const checked = checkLine(line);
    expect(checked.kind).toBe('rejected');
    if (checked.kind !== 'rejected') return;
    expect(checked.replies.map((reply) => reply.id)).toEqual(ids);
    for (const reply of checked.replies) {
      expect(reply).toMatchObject({ jsonrpc: '2.0', error: { code } });
      expect(typeof (reply.error as { message: unknown }).message).toBe('string');
    }
  });

  it('tells the writer of a batch to send one message per line', () => {
    const checked = checkLine('[{"jsonrpc":"2.0","id":1,"method":"a"}]');
    expect(JSON.stringify(checked)).toMatch(/one JSON-RPC message per line/);
  });

  it('answers 100,000 levels of nesting without throwing', () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    expect(checkLine(deep).kind).toBe('rejected');
    const deepObject = '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000);
    expect(checkLine(deepObject).kind).toBe('rejected');
  });
});

describe('modernVersionOf', () => {
  it.each([
    ['a modern claim', { params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } }, '2026-07-28'],
    ['no params', {}, undefined],
    ['no _meta', { params: {} }, undefined],
    ['a non-string claim', { params: { _meta: { 'io.modelcontextprotocol/protocolVersion': 20260728 } } }, undefined],
    ['only a progress token', { params: { _meta: { progressToken: 1 } } }, undefined],
  ])('reads %s', (_title, message, expected) => {
    expect(modernVersionOf(message)).toBe(expected);
  });
});

describe('classifyServerMessage', () => {
  it.each([
    ['a response', { jsonrpc: '2.0', id: 1, result: {} }, 'response'],
    ['an error response', { jsonrpc: '2.0', id: 'x', error: { code: 1, message: 'm' } }, 'response'],
    ['a server request', { jsonrpc: '2.0', id: 9, method: 'sampling/createMessage' }, 'other'],
    ['a notification', { jsonrpc: '2.0', method: 'notifications/progress' }, 'other'],
    ['an error without id', { jsonrpc: '2.0', id: null, error: { code: 1, message: 'm' } }, 'other'],
  ])('classifies %s', (_title, message, kind) => {
    expect(classifyServerMessage(message)?.kind).toBe(kind);
  });

  it.each([
    ['an array', []],
    ['a string', 'x'],
    ['another version', { jsonrpc: '1.0', id: 1, result: {} }],
    ['a bare object', { id: 1 }],
  ])('refuses %s', (_title, value) => {
    expect(classifyServerMessage(value)).toBeUndefined();
  });
});

describe('idKey', () => {
  it('tells the number 1 from the string "1"', () => {
    expect(idKey(1)).not.toBe(idKey('1'));
  });
});

describe('toLoggedId', () => {
  it('keeps a number, null and a string of up to MAX_LOGGED_ID_CHARS as they are', () => {
    const longest = 'i'.repeat(MAX_LOGGED_ID_CHARS);
    expect([7, null, undefined, 'abc', longest].map(toLoggedId)).toEqual([7, null, undefined, 'abc', longest]);
  });

  it('hands a longer string to the logger whole, to be masked and then cut; serialised elsewhere, it shows only its length', () => {
    const long = 'i'.repeat(MAX_LOGGED_ID_CHARS + 1);
    const logged = toLoggedId(long);
    expect(logged).toBeInstanceOf(LongId);
    expect((logged as LongId).text).toBe(long);
    expect(JSON.stringify({ id: logged })).toBe(`{"id":"(${MAX_LOGGED_ID_CHARS + 1} characters)"}`);
    expect(toLoggedId('i'.repeat(MAX_LOGGED_ID_CHARS))).toBe('i'.repeat(MAX_LOGGED_ID_CHARS));
  });

  it('shows an object or an array that stands where an id should be by its kind alone', () => {
    expect([{ big: 'x'.repeat(1000) }, ['x'], true].map(toLoggedId)).toEqual(['(an object)', '(an array)', true]);
  });
});

describe('checkLine and V8 hidden classes', () => {
  // A structural check, not a timing: a message of one kind built with a spread got a hidden class
  // of its own every time, and every later read of its properties missed V8's inline caches.
  setFlagsFromString('--allow-natives-syntax');
  // Compiled after the flag is set: V8's intrinsics are syntax only for code parsed with it.
  const haveSameMap = runInThisContext('(a, b) => %HaveSameMap(a, b)') as (a: unknown, b: unknown) => boolean;

  it.each([
    [
      'requests',
      '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
      '{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"x","arguments":{"a":1}}}',
    ],
    [
      'notifications',
      '{"jsonrpc":"2.0","method":"notifications/initialized"}',
      '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}',
    ],
    ['responses', '{"jsonrpc":"2.0","id":7,"result":{}}', '{"jsonrpc":"2.0","id":"s1","error":{"code":-1,"message":"no"}}'],
  ])('gives all %s one hidden class, whatever their ids, methods and params', (_kind, first, second) => {
    // Mixed kinds in between, as a real session sends them: a megamorphic spread made new classes then.
    const lines = [first, '{"jsonrpc":"2.0","method":"n"}', second, '{"jsonrpc":"2.0","id":9,"result":1}', '{"jsonrpc":"2.0","id":2,"method":"m"}', first];
    const checked = lines.map((line) => checkLine(line));
    const ofKind = checked.filter((message) => message.kind === checkLine(first).kind);
    expect(ofKind.length).toBeGreaterThanOrEqual(3);
    for (const message of ofKind) expect(haveSameMap(message, ofKind[0])).toBe(true);
  });
});
