import { describe, it, expect } from 'vitest';
import { decodeHeaderValue, encodeHeaderValue, mcpNameFor } from '../../../src/eras/header-encoding.js';

const b64 = (text: string): string => `=?base64?${Buffer.from(text, 'utf8').toString('base64')}?=`;

describe('encodeHeaderValue', () => {
  // 2026-07-28 Streamable HTTP §Value Encoding, "Encoding examples".
  it.each([
    ['us-west1', 'us-west1'],
    ['Hello, 世界', '=?base64?SGVsbG8sIOS4lueVjA==?='],
    [' padded ', '=?base64?IHBhZGRlZCA=?='],
    ['line1\nline2', '=?base64?bGluZTEKbGluZTI=?='],
    ['=?base64?literal?=', '=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?='],
  ])('encodes the spec example %j as %j', (value, encoded) => {
    expect(encodeHeaderValue(value)).toBe(encoded);
  });

  it.each([
    ['a tool name', 'tasks_get'],
    ['a dotted name', 'admin.tools.list'],
    ['a resource URI with special characters', 'file:///a%20b.txt?id=123#frag'],
    ['every visible ASCII character', Array.from({ length: 0x7e - 0x21 + 1 }, (_, i) => String.fromCharCode(0x21 + i)).join('')],
    ['interior single spaces', 'Seattle, WA now'],
    ['a single visible character', 'x'],
    ['text that only starts like the sentinel', '=?base64?abc'],
    ['text that only ends like the sentinel', 'abc?='],
    ['the sentinel prefix in upper case', '=?BASE64?abc?='],
  ])('sends %s plain', (_, value) => {
    expect(encodeHeaderValue(value)).toBe(value);
  });

  it.each([
    ['non-ASCII letters', 'Grüße tool'],
    ['a leading space', ' a'],
    ['a trailing space', 'a '],
    ['only a space', ' '],
    ['two spaces in a row', 'a  b'],
    // Wire rules §12: HTAB is a legal field-value character, but "control characters" force Base64.
    ['an interior TAB', 'a\tb'],
    ['a leading TAB', '\ta'],
    ['a CR', 'a\rb'],
    ['a LF', 'a\nb'],
    ['a CRLF header injection', 'x\r\nAuthorization: Bearer stolen'],
    ['a NUL', 'a\0b'],
    ['DEL (0x7F)', 'a\x7Fb'],
    ['a Latin-1 character that undici would send raw', 'caf\u00e9'],
    ['an emoji', 'tool 🔧'],
    ['the sentinel look-alike with an empty payload', '=?base64??='],
    ['the overlapping sentinel look-alike', '=?base64?='],
    ['an already encoded value', '=?base64?SGVsbG8=?='],
  ])('encodes a value with %s', (_, value) => {
    const encoded = encodeHeaderValue(value);
    expect(encoded).toBe(b64(value));
    expect(decodeHeaderValue(encoded)).toBe(value);
  });

  // Wire rules §12: the official TypeScript SDK v2 wraps "" as `=?base64??=`; servers decode it to "".
  it('encodes the empty string as the empty Base64 sentinel', () => {
    expect(encodeHeaderValue('')).toBe('=?base64??=');
    expect(decodeHeaderValue('=?base64??=')).toBe('');
  });

  it('turns a lone surrogate into U+FFFD instead of throwing', () => {
    expect(encodeHeaderValue('a\uD800b')).toBe(b64('a\uFFFDb'));
  });

  it.each(['\r', '\n', '\0', 'x\r\ny', '\u2028', 'ü\r\n\0'])('never puts a raw control character on the wire for %j', (value) => {
    expect(encodeHeaderValue(value)).toMatch(/^[\x21-\x7E]+$/);
  });
});

describe('decodeHeaderValue', () => {
  it.each([
    ['a plain value', 'us-west1', 'us-west1'],
    ['a spec example', '=?base64?SGVsbG8sIOS4lueVjA==?=', 'Hello, 世界'],
    ['a value too short to hold the sentinel', '=?base64?=', '=?base64?='],
    ['an upper-case prefix, which is not the sentinel', '=?BASE64?SGk=?=', '=?BASE64?SGk=?='],
  ])('decodes %s', (_, value, decoded) => {
    expect(decodeHeaderValue(value)).toBe(decoded);
  });

  it.each([
    ['characters outside the Base64 alphabet', '=?base64?!!!!?='],
    ['missing padding', '=?base64?SGk?='],
    ['the URL-safe alphabet', '=?base64?-_-_?='],
    ['bytes that are not UTF-8', `=?base64?${Buffer.from([0xff, 0xfe]).toString('base64')}?=`],
  ])('rejects a sentinel carrying %s', (_, value) => {
    expect(() => decodeHeaderValue(value)).toThrow(TypeError);
  });
});

describe('mcpNameFor', () => {
  // 2026-07-28 Streamable HTTP §Standard Request Headers.
  it.each([
    ['params.name for tools/call', 'tools/call', { name: 'get_weather', arguments: {} }, 'get_weather'],
    ['params.name for prompts/get', 'prompts/get', { name: 'greet' }, 'greet'],
    ['params.uri for resources/read', 'resources/read', { uri: 'file:///a.txt', name: 'ignored' }, 'file:///a.txt'],
    ['the raw name, not its encoding', 'tools/call', { name: 'Grüße tool' }, 'Grüße tool'],
  ])('takes %s', (_, method, params, name) => {
    expect(mcpNameFor(method, params)).toBe(name);
  });

  it.each([
    ['tools/list', { name: 'x' }],
    ['resources/subscribe', { uri: 'file:///a.txt' }],
    ['resources/read', { name: 'no uri' }],
    ['tools/call', { name: 42 }],
    ['tools/call', { name: null }],
    ['tools/call', {}],
    ['tools/call', undefined],
    ['tools/call', null],
    ['tools/call', 'get_weather'],
    ['tools/call', ['get_weather']],
  ])('has no name for %s with params %j', (method, params) => {
    expect(mcpNameFor(method, params)).toBeUndefined();
  });
});
