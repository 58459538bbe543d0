// The JSON scanner agrees with JSON.parse and isUtf8 on every text and every way of cutting it into chunks.

import { isUtf8 } from 'node:buffer';
import { describe, expect, it } from 'vitest';
import { JsonScanner, MAX_SMALL_MEMBER_BYTES, MAX_WATCHED_BYTES, scanJson, type JsonScan } from '../../../src/core/json-scan.js';

/** A small seeded generator (mulberry32): failures can be replayed. */
function randomFrom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WHITESPACE = [' ', '\t', '\n', '\r'];
const STRING_PIECES = [
  'a',
  'xyz',
  'é',
  '€',
  '😀',
  '\u2028',
  '\u007f',
  '\\"',
  '\\\\',
  '\\/',
  '\\b',
  '\\f',
  '\\n',
  '\\r',
  '\\t',
  '\\u00e9',
  '\\uD83D\\uDE00',
  '\\uDFFF',
  '"',
  '\\x',
  '\t',
  '\\u12',
];
const NUMBERS = [
  '0',
  '-0',
  '1',
  '-12',
  '3.25',
  '1e5',
  '1E+2',
  '2e-3',
  '-0.5e10',
  '01',
  '1.',
  '.5',
  '-',
  '+1',
  '1e',
  '0x1',
  '1.5e+',
  '00',
  '-01',
  '123456789012345678901234567890',
];
const LITERALS = ['true', 'false', 'null', 'tru', 'nul', 'True', 'falsey'];

class Gen {
  constructor(readonly next: () => number) {}
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }
  space(): string {
    let s = '';
    while (this.next() < 0.25) s += this.pick(WHITESPACE);
    return s;
  }
  string(): string {
    let s = '"';
    const pieces = this.int(6);
    for (let i = 0; i < pieces; i++) s += this.next() < 0.9 ? this.pick(STRING_PIECES.slice(0, 17)) : this.pick(STRING_PIECES);
    if (this.next() < 0.1) s += 'x'.repeat(this.int(200));
    return `${s}"`;
  }
  value(depth: number): string {
    const roll = this.int(depth > 4 ? 3 : 5);
    switch (roll) {
      case 0:
        return this.string();
      case 1:
        return this.next() < 0.85 ? this.pick(NUMBERS.slice(0, 9)) : this.pick(NUMBERS);
      case 2:
        return this.next() < 0.9 ? this.pick(LITERALS.slice(0, 3)) : this.pick(LITERALS);
      case 3: {
        const items = Array.from({ length: this.int(4) }, () => this.space() + this.value(depth + 1) + this.space());
        if (this.next() < 0.03) items.push('');
        return `[${items.join(',')}]`;
      }
      default: {
        const members = Array.from(
          { length: this.int(4) },
          () => `${this.space()}${this.string()}${this.space()}:${this.space()}${this.value(depth + 1)}${this.space()}`,
        );
        return `{${members.join(',')}}`;
      }
    }
  }
  document(): string {
    return this.space() + this.value(0) + this.space();
  }
}

const MUTATION_BYTES = [
  0x22, 0x5c, 0x2c, 0x3a, 0x7b, 0x7d, 0x5b, 0x5d, 0x0a, 0x00, 0x1f, 0x20, 0x30, 0x65, 0x2d, 0x2e, 0x75, 0x80, 0xbf, 0xc0, 0xc2, 0xe2, 0xed, 0xf0, 0xf4, 0xf5,
  0xff,
];

function mutate(gen: Gen, bytes: Buffer): Buffer {
  const out = [...bytes];
  const count = 1 + gen.int(3);
  for (let i = 0; i < count; i++) {
    const at = gen.int(out.length + 1);
    const kind = gen.int(3);
    if (kind === 0) out.splice(at, 0, gen.pick(MUTATION_BYTES));
    else if (kind === 1 && out.length > 0) out.splice(at, 1);
    else if (out.length > 0) out[Math.min(at, out.length - 1)] = gen.pick(MUTATION_BYTES);
  }
  return Buffer.from(out);
}

function parseOrUndefined(bytes: Buffer): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(bytes.toString('utf8')) as unknown };
  } catch {
    return { ok: false };
  }
}

const JSON_SPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);

/** What the scan must say about `bytes`, from JSON.parse and isUtf8. */
function expectAgreement(bytes: Buffer, scan: JsonScan): void {
  const parsed = parseOrUndefined(bytes);
  const label = JSON.stringify(bytes.toString('latin1'));
  expect(scan.kind !== 'invalid', label).toBe(parsed.ok);
  if (scan.kind === 'invalid' || !parsed.ok) return;
  expect(scan.utf8, label).toBe(isUtf8(bytes));
  let start = 0;
  let end = bytes.length;
  while (JSON_SPACE.has(bytes[start]!)) start++;
  while (JSON_SPACE.has(bytes[end - 1]!)) end--;
  expect([scan.start, scan.end], label).toEqual([start, end]);
  const trimmed = bytes.subarray(start, end);
  expect(scan.singleLine, label).toBe(!trimmed.includes(0x0a) && !trimmed.includes(0x0d));
  const value = parsed.value;
  const kind = Array.isArray(value) ? 'array' : typeof value === 'object' && value !== null ? 'object' : 'scalar';
  expect(scan.kind, label).toBe(kind);
  if (kind !== 'object') {
    expect(scan.members).toEqual([]);
    return;
  }
  // Later duplicates win, as in JSON.parse; members come in the order of their first occurrence.
  const rebuilt: Record<string, unknown> = {};
  for (const member of scan.members) {
    expect(member.small).toBe(true);
    Object.defineProperty(rebuilt, member.key!, { value: member.value, enumerable: true, writable: true, configurable: true });
  }
  if (scan.utf8) expect(JSON.stringify(rebuilt), label).toBe(JSON.stringify(value));
}

/** Feeds `bytes` cut at the given offsets, each piece in its own (differently aligned) allocation. */
function scanInPieces(bytes: Buffer, cuts: readonly number[], shift = 0): JsonScan {
  const scanner = new JsonScanner();
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    const piece = Buffer.alloc(cut - from + shift);
    bytes.copy(piece, shift, from, cut);
    scanner.feed(piece.subarray(shift));
    from = cut;
  }
  return scanner.end();
}

describe('JsonScanner', () => {
  it('agrees with JSON.parse and isUtf8 on generated documents, their mutations and truncations', () => {
    const gen = new Gen(randomFrom(1));
    for (let round = 0; round < 4000; round++) {
      const bytes = Buffer.from(gen.document(), 'utf8');
      expectAgreement(bytes, scanJson(bytes));
      const mutated = mutate(gen, bytes);
      expectAgreement(mutated, scanJson(mutated));
      const truncated = bytes.subarray(0, gen.int(bytes.length + 1));
      expectAgreement(truncated, scanJson(truncated));
    }
  });

  it('gives the same answer for every split point of a text into two chunks and for one-byte chunks', () => {
    const gen = new Gen(randomFrom(2));
    for (let round = 0; round < 300; round++) {
      const text = Buffer.from(gen.document(), 'utf8');
      const bytes = round % 2 === 0 ? text : mutate(gen, text);
      const whole = scanJson(bytes);
      expectAgreement(bytes, whole);
      for (let cut = 0; cut <= bytes.length; cut++) expect(scanInPieces(bytes, [cut], cut % 4)).toEqual(whole);
      expect(
        scanInPieces(
          bytes,
          Array.from({ length: bytes.length }, (_, i) => i),
        ),
      ).toEqual(whole);
      expect(scanJson([...bytes].map((b) => Buffer.from([b])))).toEqual(whole);
    }
  });

  it('finds a quote, backslash or control byte at every position and alignment of a long string', () => {
    for (const special of ['"', '\\n', '\n', '\u0000', '\u001f', '\\', '\\u0041']) {
      for (let at = 0; at < 80; at++) {
        for (let shift = 0; shift < 4; shift++) {
          const text = `{"k":"${'a'.repeat(at)}${special}${'b'.repeat(90 - at)}"}`;
          const bytes = Buffer.from(text, 'utf8');
          const aligned = Buffer.alloc(bytes.length + shift);
          bytes.copy(aligned, shift);
          expectAgreement(bytes, scanJson(aligned.subarray(shift)));
        }
      }
    }
  });

  it('checks UTF-8 as RFC 3629 defines it, also when a sequence is split between chunks', () => {
    const sequences = [
      [0xc3, 0xa9],
      [0xe2, 0x82, 0xac],
      [0xf0, 0x9f, 0x98, 0x80],
      [0xf4, 0x8f, 0xbf, 0xbf],
      // Invalid: overlong, a surrogate, past U+10FFFF, a lone continuation, a cut sequence, invalid leads.
      [0xc0, 0xaf],
      [0xe0, 0x80, 0xaf],
      [0xed, 0xa0, 0x80],
      [0xf4, 0x90, 0x80, 0x80],
      [0x80],
      [0xe2, 0x82],
      [0xf8, 0x88, 0x80, 0x80, 0x80],
      [0xff],
    ];
    for (const sequence of sequences) {
      for (const tail of [[], [0x61]]) {
        const bytes = Buffer.from([0x22, 0x61, ...sequence, ...tail, 0x22]);
        const whole = scanJson(bytes);
        expectAgreement(bytes, whole);
        expect(whole.kind !== 'invalid' && whole.utf8).toBe(isUtf8(bytes));
        for (let cut = 0; cut <= bytes.length; cut++) expect(scanInPieces(bytes, [cut])).toEqual(whole);
        expect(
          scanInPieces(
            bytes,
            Array.from({ length: bytes.length }, (_, i) => i),
          ),
        ).toEqual(whole);
      }
    }
    // A text that ends inside a sequence: no closing quote needed to see the carried bytes are lost.
    expect(scanInPieces(Buffer.from([0x31, 0x20]), [1])).toMatchObject({ kind: 'scalar', utf8: true });
  });

  it('reports top-level members: small ones decoded, large ones only measured', () => {
    const big = 'x'.repeat(MAX_SMALL_MEMBER_BYTES);
    const text = `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"${big}"}]},"id":"last"}`;
    const scan = scanJson(Buffer.from(text));
    expect(scan).toMatchObject({ kind: 'object', utf8: true, singleLine: true, start: 0, end: text.length });
    if (scan.kind === 'invalid') return;
    expect(scan.members.map((m) => [m.key, m.small, m.value])).toEqual([
      ['jsonrpc', true, '2.0'],
      ['id', true, 7],
      ['result', false, undefined],
      ['id', true, 'last'],
    ]);
    expect(scan.members[2]!.size).toBe(text.indexOf(',"id":"last"') - text.indexOf('{"content"'));
    expect(scan.members[2]!.start).toBe(text.indexOf('{"content"'));
    expect(scan.members[1]!.start).toBe(text.indexOf('7'));
    // The same when the large value arrives in many chunks.
    const chunked = scanInPieces(Buffer.from(text), [10, 40, 1000, 30_000, 65_000]);
    expect(chunked).toEqual(scan);
  });

  it('leaves a key longer than the small limit undecoded', () => {
    const key = 'k'.repeat(MAX_SMALL_MEMBER_BYTES + 1);
    const scan = scanJson(Buffer.from(`{"${key}":1,"id":2}`));
    expect(scan.kind !== 'invalid' && scan.members.map((m) => [m.key, m.value])).toEqual([
      [undefined, 1],
      ['id', 2],
    ]);
  });

  it('decodes a small member nested as deep as its bytes allow', () => {
    const depth = 30_000;
    const scan = scanJson(Buffer.from(`{"deep":${'['.repeat(depth)}${']'.repeat(depth)}}`));
    expect(scan.kind !== 'invalid' && scan.members[0]!.small).toBe(true);
  });

  it('refuses what RFC 8259 refuses', () => {
    for (const text of [
      '',
      ' ',
      '{',
      '[1,]',
      '{"a":1,}',
      '{,}',
      '[,1]',
      '{"a" 1}',
      '{1:2}',
      '"\t"',
      '01',
      '1 2',
      '"\\u00g0"',
      '\ufeff{}',
      'nan',
      '[1}',
      '{]',
      '{"a":1]',
      '"abc',
      '[1 2]',
    ]) {
      const bytes = Buffer.from(text, 'utf8');
      expect(scanJson(bytes), text).toEqual({ kind: 'invalid' });
      expectAgreement(bytes, scanJson(bytes));
    }
  });
});

function isValid(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

describe('JsonScanner watch', () => {
  const watch = { inside: 'result', text: 'resultType', count: 'inputRequests' } as const;

  /** Feeds `bytes` cut at `cuts` to a scanner with the watch; its facts, and its verdict. */
  function watchInPieces(bytes: Buffer, cuts: number[]): { facts: unknown; scan: JsonScan } {
    const scanner = new JsonScanner(watch);
    let from = 0;
    for (const cut of [...cuts, bytes.length]) {
      scanner.feed(bytes.subarray(from, cut));
      from = cut;
    }
    return { facts: { ...scanner.watched }, scan: scanner.end() };
  }

  it('keeps the raw text of result.resultType and counts the members of result.inputRequests, at every way of cutting the text, without changing the scan', () => {
    const gen = new Gen(randomFrom(7));
    // The generator also makes strings JSON refuses: each member value is one it accepts.
    const value = (): string => {
      for (let tries = 0; tries < 20; tries++) {
        const candidate = gen.value(3);
        if (isValid(candidate)) return candidate;
      }
      return 'null';
    };
    const kinds = ['"input_required"', '"complete"', '"input\\u005frequired"', `"${'x'.repeat(70)}"`, '7'];
    for (let round = 0; round < 400; round++) {
      const requests = gen.int(80);
      const members = [
        `"resultType":${gen.pick(kinds)}`,
        `"inputRequests":{${Array.from({ length: requests }, (_, i) => `"r${i}":${value()}`).join(',')}}`,
        `"structuredContent":{${Array.from({ length: gen.int(90) }, (_, i) => `"s${i}":${value()}`).join(',')}}`,
        `"content":[{"type":"text","text":${JSON.stringify('r'.repeat(gen.int(100)))}}]`,
      ].sort(() => gen.next() - 0.5);
      const text = `{"jsonrpc":"2.0","id":1,"params":{"inputRequests":{"p":1},"resultType":"input_required"},"result":{${members.join(gen.space() + ',')}}}`;
      const bytes = Buffer.from(text);
      expect(isValid(text)).toBe(true);
      const kind = /"resultType":("[^"]*"|7)/.exec(text.slice(text.indexOf('"result":')))![1]!;
      const expected = { text: kind.startsWith('"') && kind.length - 2 <= MAX_WATCHED_BYTES ? kind.slice(1, -1) : undefined, count: requests };
      const whole = scanJson(bytes);
      for (const cuts of [[], [gen.int(bytes.length)], Array.from({ length: 8 }, () => gen.int(bytes.length)).sort((a, b) => a - b)]) {
        const { facts, scan } = watchInPieces(bytes, cuts);
        expect(facts, text).toEqual(expected);
        expect(scan).toEqual(whole);
      }
    }
  });

  it('sees the facts as they stream by: the count grows with each member read, before the text ends', () => {
    const scanner = new JsonScanner(watch);
    scanner.feed(Buffer.from('{"id":1,"result":{"resultType":"input_required","inputRequests":{"a":{"method":"roots/list"},"b":{'));
    expect(scanner.watched).toEqual({ text: 'input_required', count: 2 });
    scanner.feed(Buffer.from('}},"more":1}}'));
    expect(scanner.watched).toEqual({ text: 'input_required', count: 2 });
  });

  it('watches nothing outside the top-level member it names, nor keys spelled with escapes or past its byte bound', () => {
    for (const text of [
      '{"params":{"resultType":"input_required","inputRequests":{"a":1}}}',
      '{"result":{"deep":{"resultType":"input_required","inputRequests":{"a":1}}}}',
      '{"result":{"result\\u0054ype":"input_required","input\\u0052equests":{"a":1}}}',
      `{"result":{"${'k'.repeat(MAX_WATCHED_BYTES + 1)}":"input_required","inputRequests":[1,2]}}`,
      '[{"result":{"resultType":"input_required"}}]',
    ]) {
      const scanner = new JsonScanner(watch);
      scanner.feed(Buffer.from(text));
      expect(scanner.watched, text).toEqual({ text: undefined, count: 0 });
      expect(scanner.end().kind).not.toBe('invalid');
    }
  });
});
