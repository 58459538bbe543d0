import { describe, expect, it } from 'vitest';
import { checkLine, type CheckedLine } from '../../../src/core/json-rpc.js';
import { checkLargeLine, MAX_ABRIDGED_DEPTH, OmittedValue, readableId, wholeMessage, type LargeLineCheck } from '../../../src/stdio/large-line.js';
import { LARGE_LINE_BYTES } from '../../../src/stdio/line-reader.js';

/** A string value long enough to make any line it is in a large one. */
const BIG = 'y'.repeat(LARGE_LINE_BYTES);

/** The line's bytes in pieces of `size` (the last one shorter), as stdin delivers them. */
function piecesOf(line: string | Buffer, size = 65_536): Buffer[] {
  const bytes = typeof line === 'string' ? Buffer.from(line) : line;
  const pieces: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += size) pieces.push(bytes.subarray(at, at + size));
  return pieces;
}

function checkLarge(line: string | Buffer, size?: number): LargeLineCheck {
  const pieces = piecesOf(line, size);
  return checkLargeLine(
    pieces,
    pieces.reduce((sum, piece) => sum + piece.length, 0),
  );
}

/** Every value of `abridged` is the one in `whole`, or stands for it as an OmittedValue. */
function expectAbridgedFrom(abridged: unknown, whole: unknown): void {
  if (abridged instanceof OmittedValue) return;
  if (typeof whole === 'object' && whole !== null && !Array.isArray(whole)) {
    expect(Object.keys(abridged as object)).toEqual(Object.keys(whole));
    for (const key of Object.keys(whole)) expectAbridgedFrom((abridged as Record<string, unknown>)[key], (whole as Record<string, unknown>)[key]);
    return;
  }
  expect(abridged).toEqual(whole);
}

/** What a check decides, without the JSON.parse detail (its positions differ between lines). */
function verdict(checked: LargeLineCheck | CheckedLine): unknown {
  if (checked.kind !== 'rejected') return checked.kind === 'request' ? { kind: checked.kind, id: checked.id, method: checked.method } : { kind: checked.kind };
  return { kind: 'rejected', replies: checked.replies.map((reply) => ({ ...reply, error: { ...(reply.error as object), data: undefined } })) };
}

describe('checkLargeLine', () => {
  it('routes a large tools/call from a scan: the facts routing reads are exact, the large string is left out, the body is the pieces', () => {
    const message = {
      jsonrpc: '2.0',
      id: 'call-1',
      method: 'tools/call',
      params: {
        name: 'upload',
        _meta: { progressToken: 7, 'io.modelcontextprotocol/protocolVersion': '2026-07-28' },
        arguments: { blob: BIG, mode: 'fast', n: 3 },
      },
    };
    const pieces = piecesOf(JSON.stringify(message));
    const checked = checkLargeLine(
      pieces,
      pieces.reduce((sum, piece) => sum + piece.length, 0),
    );
    if (checked.kind !== 'request') throw new Error(`a ${checked.kind}`);
    expect(checked).toMatchObject({ id: 'call-1', method: 'tools/call', abridged: true });
    expect(checked.body).toBe(pieces);
    const params = checked.message.params as Record<string, any>;
    expect(params.name).toBe('upload');
    expect(params._meta).toEqual(message.params._meta);
    expect(params.arguments.mode).toBe('fast');
    expect(params.arguments.n).toBe(3);
    expect(params.arguments.blob).toBeInstanceOf(OmittedValue);
    expect((params.arguments.blob as OmittedValue).bytes).toBe(JSON.stringify(BIG).length);
  });

  it('agrees with checkLine on every kind of large line, whatever the pieces', () => {
    const lines = [
      { jsonrpc: '2.0', id: 1, method: 'm', params: { s: BIG } },
      { jsonrpc: '2.0', method: 'notifications/message', params: { data: BIG } },
      { jsonrpc: '2.0', id: 'answer', result: { content: [{ type: 'text', text: BIG }] } },
      { jsonrpc: '2.0', id: 'answer', error: { code: 1, message: BIG } },
      { jsonrpc: '2.0', id: 2, method: 'm', params: { s: BIG }, extra: [BIG] },
      { jsonrpc: '1.0', id: 3, method: 'm', params: { s: BIG } },
      { id: 4, method: 'm', params: { s: BIG } },
      { jsonrpc: '2.0', id: 5, method: 'm', params: [BIG] },
      { jsonrpc: '2.0', id: 6, method: 'm', params: BIG },
      { jsonrpc: '2.0', id: 7, method: 'm', result: BIG },
      { jsonrpc: '2.0', id: 8, result: BIG, error: { code: 1 } },
      { jsonrpc: '2.0', id: null, method: 'm', params: { s: BIG } },
      { jsonrpc: '2.0', id: 1.5, method: 'm', params: { s: BIG } },
      { jsonrpc: '2.0', id: BIG, method: 'm' },
      { jsonrpc: '2.0', id: 9, method: BIG },
      { jsonrpc: '2.0', id: 10, method: 'initialize', params: { clientInfo: { name: BIG } } },
      [
        { jsonrpc: '2.0', id: 11, method: 'm', params: { s: BIG } },
        { jsonrpc: '2.0', id: 12, method: 'm' },
      ],
      BIG,
    ].map((value) => ` ${JSON.stringify(value, null, value === BIG ? undefined : 1)}\t`);
    for (const line of lines) {
      const short = checkLine(line);
      for (const size of [1000, 65_536, line.length]) {
        const large = checkLarge(line, size);
        expect(verdict(large)).toEqual(verdict(short));
        if (large.kind !== 'rejected' && short.kind !== 'rejected' && large.kind !== 'blank' && large.kind !== 'not-utf8') {
          expectAbridgedFrom(large.message, short.message);
        }
      }
    }
  });

  it('answers a large line that is not JSON with the parse error checkLine gives, detail included', () => {
    const line = `{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"${BIG}"}`;
    expect(checkLarge(line)).toEqual(checkLine(line));
  });

  it('reports bytes that are not UTF-8 as such, before any JSON fault, as a short line is', () => {
    const bad = Buffer.concat([Buffer.from(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"${BIG}`), Buffer.from([0xc3, 0x28]), Buffer.from('"}}')]);
    expect(checkLarge(bad)).toEqual({ kind: 'not-utf8', bytes: bad.length, id: 1 });
    const badAndCut = bad.subarray(0, bad.length - 2);
    expect(checkLarge(badAndCut)).toEqual({ kind: 'not-utf8', bytes: badAndCut.length, id: null });
  });

  it('reads the id of a large line that is not UTF-8 when the id itself is intact, whatever the pieces', () => {
    const bytes = (...parts: (string | number[])[]) => Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part) : Buffer.from(part))));
    const cases: [Buffer, string | number | null][] = [
      [bytes('{"jsonrpc":"2.0","id":"caf\\u00e9 é","method":"m","params":{"s":"', BIG, [0xff], '"}}'), 'café é'],
      [bytes('{"jsonrpc":"2.0","method":"m","params":{"s":"', BIG, [0xc3], '"},"id":12}'), 12],
      [bytes('{"jsonrpc":"2.0","id":"x', [0xef, 0xbf, 0xbd], '","params":{"s":"', BIG, [0xff], '"}}'), 'x\ufffd'],
      [bytes('{"jsonrpc":"2.0","id":"x', [0xbf], '","params":{"s":"', BIG, '"}}'), null],
      [bytes('{"jsonrpc":"2.0","id":1,"params":{"s":"', BIG, [0xff], '"},"id":"', [0xe2, 0x82], '"}'), null],
      [bytes('{"jsonrpc":"2.0","params":{"id":5,"s":"', BIG, [0xff], '"}}'), null],
      [bytes('{"jsonrpc":"2.0","id":1.5,"params":{"s":"', BIG, [0xff], '"}}'), null],
      [bytes('[{"jsonrpc":"2.0","id":5,"s":"', BIG, [0xff], '"}]'), null],
    ];
    for (const [line, id] of cases) {
      for (const size of [7, 65_536, line.length]) {
        expect(checkLarge(line, size)).toEqual({ kind: 'not-utf8', bytes: line.length, id });
        expect(readableId(piecesOf(line, size))).toBe(id);
      }
    }
  });

  it('skips a large line of whitespace, any Unicode whitespace, as a short one is skipped', () => {
    expect(checkLarge(' \t'.repeat(LARGE_LINE_BYTES))).toEqual({ kind: 'blank' });
    expect(checkLarge('\u00a0\u2028'.repeat(LARGE_LINE_BYTES / 2))).toEqual({ kind: 'blank' });
  });

  it('decodes params._meta whole however large it is, and refuses to serialise what it left out', () => {
    const meta = { progressToken: 'p', 'io.modelcontextprotocol/clientInfo': { name: 'c', note: BIG } };
    const checked = checkLarge(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 't', _meta: meta, arguments: { blob: BIG } } }));
    if (checked.kind !== 'request') throw new Error(`a ${checked.kind}`);
    const params = checked.message.params as Record<string, unknown>;
    expect(params._meta).toEqual(meta);
    expect(() => JSON.stringify(params.arguments)).toThrow(/cannot be serialised/);
  });

  it('decodes initialize whole: the session keeps its params', () => {
    const line = JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { clientInfo: { name: 'c', note: BIG } } });
    const checked = checkLarge(line);
    expect(checked).toMatchObject({ kind: 'request', method: 'initialize', body: line });
    expect(checked.kind === 'request' && checked.abridged).toBeUndefined();
  });

  it('keeps duplicate keys as JSON.parse does (the last wins) and "__proto__" as an own member', () => {
    const line = `{"jsonrpc":"2.0","id":1,"id":2,"method":"m","params":{"__proto__":{"polluted":true},"s":"${BIG}"}}`;
    const checked = checkLarge(line);
    if (checked.kind !== 'request') throw new Error(`a ${checked.kind}`);
    expect(checked.id).toBe(2);
    const params = checked.message.params as Record<string, unknown>;
    expect(Object.getPrototypeOf(params)).toBe(Object.prototype);
    expect(Object.hasOwn(params, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it(`opens large objects ${MAX_ABRIDGED_DEPTH} levels deep and leaves deeper ones out`, () => {
    let nested = `{"s":"${BIG}"}`;
    for (let level = 0; level < MAX_ABRIDGED_DEPTH + 2; level++) nested = `{"a":${nested},"level":${level}}`;
    const checked = checkLarge(`{"jsonrpc":"2.0","id":1,"method":"m","params":${nested}}`);
    if (checked.kind !== 'request') throw new Error(`a ${checked.kind}`);
    let node: unknown = checked.message;
    let opened = 0;
    while (typeof node === 'object' && node !== null && !(node instanceof OmittedValue)) {
      const object = node as Record<string, unknown>;
      node = 'params' in object ? object.params : object.a;
      opened++;
    }
    expect(node).toBeInstanceOf(OmittedValue);
    expect(opened).toBe(MAX_ABRIDGED_DEPTH + 1);
  });

  it('opens a large object below params when it is first read, and lets it be replaced unread', () => {
    const line = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 't', arguments: { blob: BIG, n: 1 }, other: { blob: BIG } } });
    const checked = checkLarge(line);
    if (checked.kind !== 'request') throw new Error(`a ${checked.kind}`);
    const params = checked.message.params as Record<string, any>;
    expect(Object.getOwnPropertyDescriptor(params, 'arguments')).toHaveProperty('get');
    expect(params.arguments.n).toBe(1);
    expect(Object.getOwnPropertyDescriptor(params, 'arguments')).toMatchObject({ value: params.arguments, writable: true, enumerable: true });
    params.other = 'replaced';
    expect(params.other).toBe('replaced');
  });

  it('decodes a large object below params whole when one of its keys is too large to scan', () => {
    const line = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 't', arguments: { [BIG]: 1, n: 2 } } });
    const checked = checkLarge(line);
    if (checked.kind !== 'request') throw new Error(`a ${checked.kind}`);
    expect(checked.abridged).toBe(true);
    expect((checked.message.params as Record<string, any>).arguments).toEqual({ [BIG]: 1, n: 2 });
  });

  it('decodes a line whose key is too large to scan whole', () => {
    const line = `{"jsonrpc":"2.0","id":1,"method":"m","params":{"${BIG}":1}}`;
    const checked = checkLarge(line);
    expect(checked).toMatchObject({ kind: 'request', id: 1, body: line });
  });
});

describe('wholeMessage', () => {
  it('decodes an abridged message whole and keeps its body', () => {
    const message = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 't', arguments: { blob: BIG } } };
    const checked = checkLarge(JSON.stringify(message));
    if (checked.kind !== 'request') throw new Error(`a ${checked.kind}`);
    const whole = wholeMessage(checked);
    expect(whole.message).toEqual(message);
    expect(whole.body).toBe(checked.body);
    expect(whole.abridged).toBeUndefined();
  });

  it('returns a message that is already whole as it is', () => {
    const checked = checkLine('{"jsonrpc":"2.0","id":1,"method":"m"}');
    if (checked.kind !== 'request') throw new Error(`a ${checked.kind}`);
    expect(wholeMessage(checked)).toBe(checked);
  });
});
