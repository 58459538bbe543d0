// Hostile stdin as properties: checkLine and pumpLines on anything, then the spawned bridge on a mix of it.

import { isUtf8 } from 'node:buffer';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkLine } from '../../../src/core/json-rpc.js';
import { pumpLines, type LineEvent } from '../../../src/stdio/line-reader.js';
import { startMcpServer, stdoutProblems, waitForLineCount, type McpServer } from '../../helpers/hardening-servers.js';
import { spawnBridge, type BridgeProcess } from '../../helpers/spawn-bridge.js';

const DEPTH = 100_000;
const isJson = (text: string) => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};
const isUsableId = (id: unknown) => typeof id === 'string' || (typeof id === 'number' && Number.isSafeInteger(id));

/** Text from single units: JSON punctuation, any code point, and lone surrogates. */
const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((unit) => String.fromCharCode(unit));
const anyUnit = fc.oneof(
  fc.constantFrom('{', '}', '[', ']', '"', ':', ',', '\\', '0', 'e', '-', ' ', '\u2028', '\uFEFF'),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
  loneSurrogate,
);
const anyText = fc.string({ unit: anyUnit, maxLength: 80 });
const anyJson = fc.jsonValue({ maxDepth: 4, stringUnit: fc.oneof(fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }), loneSurrogate) });
const usableId = fc.oneof(fc.string({ unit: 'binary', maxLength: 12 }), fc.maxSafeInteger(), fc.integer({ min: -(2 ** 53) + 1, max: 0 }));
const unusableId = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.double({ noInteger: true }),
  fc.constantFrom(2 ** 53, -(2 ** 60), 1e300),
  fc.array(fc.nat(), { maxLength: 2 }),
  fc.dictionary(fc.string(), fc.nat(), { maxKeys: 2 }),
);
const params = fc.option(fc.dictionary(fc.string({ unit: 'binary', maxLength: 8 }), anyJson, { maxKeys: 4 }), { nil: undefined });
const request = fc
  .record({ id: usableId, method: fc.string({ unit: 'binary', maxLength: 20 }), params })
  .map(({ id, method, params }) => ({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) }));

describe('checkLine', () => {
  it('answers any line that is not JSON with exactly one -32700 reply with id null', () => {
    fc.assert(
      fc.property(anyText, (line) => {
        fc.pre(!isJson(line));
        const checked = checkLine(line);
        expect(checked).toMatchObject({
          kind: 'rejected',
          replies: [{ jsonrpc: '2.0', id: null, error: { code: -32700, data: { bridgeCode: 'PARSE_ERROR' } } }],
        });
        expect(checked.kind === 'rejected' && checked.replies).toHaveLength(1);
      }),
      { numRuns: 2000 },
    );
  });

  it('never throws, and every reply it builds is one JSON-RPC 2.0 error line', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          anyText,
          anyJson.map((value) => JSON.stringify(value)),
        ),
        (line) => {
          const checked = checkLine(line);
          if (checked.kind !== 'rejected') return;
          expect(checked.replies.length).toBeGreaterThan(0);
          for (const reply of checked.replies) {
            expect(JSON.stringify(reply)).not.toMatch(/[\r\n]/);
            const { jsonrpc, id, error } = reply as { jsonrpc: string; id: unknown; error: { code: number } };
            expect(jsonrpc).toBe('2.0');
            expect([-32700, -32600]).toContain(error.code);
            expect(id === null || isUsableId(id)).toBe(true);
          }
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('answers JSON that is not an object or array with one -32600 reply with id null', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.double(), fc.boolean(), fc.constant(null)), (value) => {
        expect(checkLine(JSON.stringify(value))).toMatchObject({ kind: 'rejected', replies: [{ id: null, error: { code: -32600 } }] });
      }),
    );
  });

  it('passes any valid request through with its id, method and message unchanged', () => {
    fc.assert(
      fc.property(request, (message) => {
        const line = JSON.stringify(message);
        const checked = checkLine(line);
        expect(checked).toMatchObject({ kind: 'request', id: message.id, method: message.method });
        expect(checked.kind === 'request' && checked.message).toEqual(JSON.parse(line));
      }),
      { numRuns: 1000 },
    );
  });

  it('takes a message without an id as a notification', () => {
    fc.assert(
      fc.property(request, ({ id: _, ...notification }) => {
        expect(checkLine(JSON.stringify(notification))).toMatchObject({ kind: 'notification', method: notification.method });
      }),
    );
  });

  it('rejects a request whose id is not a string or safe integer with -32600 and id null', () => {
    fc.assert(
      fc.property(request, unusableId, (message, id) => {
        expect(checkLine(JSON.stringify({ ...message, id }))).toMatchObject({ kind: 'rejected', replies: [{ id: null, error: { code: -32600 } }] });
      }),
    );
  });

  // Batches were removed in 2025-06-18: one -32600 per usable id, so every waiting caller hears back.
  it('answers a batch with one -32600 reply per usable id, or one with id null', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(request, anyJson), { maxLength: 6 }), (batch) => {
        const checked = checkLine(JSON.stringify(batch));
        const parsed = JSON.parse(JSON.stringify(batch)) as unknown[];
        const ids = parsed
          .filter((e): e is { id: unknown } => typeof e === 'object' && e !== null && !Array.isArray(e))
          .map((e) => e.id)
          .filter(isUsableId);
        expect(checked.kind === 'rejected' && checked.replies.map((r) => r.id)).toEqual(ids.length > 0 ? ids : [null]);
      }),
    );
  });

  const nested = (open: string, inner: string, close: string) => open.repeat(DEPTH) + inner + close.repeat(DEPTH);
  it.each([
    ['100,000 nested arrays', nested('[', '', ']'), { kind: 'rejected', replies: [{ id: null, error: { code: -32600 } }] }],
    ['100,000 nested objects', nested('{"a":', '1', '}'), { kind: 'rejected', replies: [{ id: null, error: { code: -32600 } }] }],
    ['100,000 unclosed arrays', '['.repeat(DEPTH), { kind: 'rejected', replies: [{ id: null, error: { code: -32700 } }] }],
    ['a request with params nested 100,000 levels', `{"jsonrpc":"2.0","id":7,"method":"m","params":${nested('{"a":', '1', '}')}}`, { kind: 'request', id: 7 }],
    ['a number beyond double range in params', '{"jsonrpc":"2.0","id":1,"method":"m","params":{"n":1e400}}', { kind: 'request', id: 1 }],
    ['an id beyond double range', '{"jsonrpc":"2.0","id":1e400,"method":"m"}', { kind: 'rejected', replies: [{ id: null }] }],
    ['an id beyond the safe integers', '{"jsonrpc":"2.0","id":12345678901234567890,"method":"m"}', { kind: 'rejected', replies: [{ id: null }] }],
    ['a lone surrogate escape in the method', '{"jsonrpc":"2.0","id":1,"method":"\\ud800"}', { kind: 'request', method: '\ud800' }],
    ['a 10 MB string', `{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"${'x'.repeat(10 * 1024 * 1024)}"}}`, { kind: 'request', id: 1 }],
  ])('answers %s without throwing', (_, line, expected) => {
    expect(checkLine(line)).toMatchObject(expected);
  });

  it('does not let a "__proto__" key reach the prototype', () => {
    checkLine('{"jsonrpc":"2.0","id":1,"method":"m","params":{"__proto__":{"polluted":true}},"__proto__":{"polluted":true}}');
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });
});

/** The framing pumpLines promises, computed on the whole input at once. */
function expectedLines(bytes: Uint8Array, maxLineBytes: number): LineEvent[] {
  let buffer = Buffer.from(bytes);
  if (buffer.subarray(0, 3).equals(Buffer.from([0xef, 0xbb, 0xbf]))) buffer = buffer.subarray(3);
  const events: LineEvent[] = [];
  let start = 0;
  while (start < buffer.length) {
    const newline = buffer.indexOf(0x0a, start);
    const end = newline === -1 ? buffer.length : newline;
    const line = buffer.subarray(start, end);
    if (line.length > maxLineBytes)
      events.push({ kind: 'oversized', bytes: line.length, id: undefined }); // compared by kind
    else {
      const withBom = line.subarray(0, line.at(-1) === 0x0d ? line.length - 1 : line.length);
      // A BOM at the start of a line is ignored too (RFC 8259 §8.1); it counts toward the limit.
      const content = withBom.subarray(0, 3).equals(Buffer.from([0xef, 0xbb, 0xbf])) ? withBom.subarray(3) : withBom;
      // The transport carries UTF-8: other bytes are reported, never decoded with U+FFFD.
      if (!isUtf8(content))
        events.push({ kind: 'not-utf8', bytes: content.length, id: null }); // compared by kind
      else if (content.toString('utf8').trim() !== '') events.push({ kind: 'line', text: content.toString('utf8') });
    }
    start = end + 1;
  }
  return events;
}

async function collect(chunks: Buffer[], maxLineBytes: number): Promise<LineEvent[]> {
  const events: LineEvent[] = [];
  await pumpLines(Readable.from(chunks, { objectMode: false }), maxLineBytes, (event) => void events.push(event));
  return events;
}

describe('pumpLines', () => {
  const byte = fc.oneof(fc.constantFrom(0x0a, 0x0d, 0x20, 0xef, 0xbb, 0xbf, 0xff, 0xc3), fc.integer({ min: 0, max: 255 }));
  const chunked = fc.tuple(fc.array(byte, { maxLength: 200 }), fc.array(fc.nat(200), { maxLength: 10 })).map(([bytes, cuts]) => {
    const data = Buffer.from(bytes);
    const points = [...new Set(cuts.map((cut) => cut % (data.length + 1)))].sort((a, b) => a - b);
    const chunks = [...points, data.length].map((end, i) => data.subarray(i === 0 ? 0 : points[i - 1], end)).filter((c) => c.length > 0);
    return { data, chunks };
  });

  it('splits any bytes, cut anywhere, exactly as the framing says: LF lines, CR stripped, blanks skipped, limit in bytes', async () => {
    await fc.assert(
      fc.asyncProperty(chunked, fc.integer({ min: 1, max: 64 }), async ({ data, chunks }, max) => {
        const actual = await collect(chunks, max);
        for (const event of actual) if (event.kind === 'oversized') expect(event.bytes).toBeGreaterThan(max);
        const shape = (events: LineEvent[]) => events.map((e) => (e.kind === 'line' ? e : { kind: e.kind }));
        expect(shape(actual)).toEqual(shape(expectedLines(data, max)));
      }),
      { numRuns: 3000 },
    );
  });

  it('enforces the limit on a stream that ends inside what could have been a BOM', async () => {
    expect(await collect([Buffer.from([0xef, 0xbb])], 1)).toEqual([{ kind: 'oversized', bytes: 2 }]);
  });

  it('reports a 10 MB line over a 1 MB limit once, keeps none of it, and reads on', async () => {
    const big = Buffer.alloc(10 * 1024 * 1024, 0x61);
    const chunks = [];
    for (let offset = 0; offset < big.length; offset += 65_536) chunks.push(big.subarray(offset, offset + 65_536));
    const events = await collect([...chunks, Buffer.from('\n{"next":1}\n')], 1024 * 1024);
    expect(events).toEqual([
      { kind: 'oversized', bytes: expect.any(Number) },
      { kind: 'line', text: '{"next":1}' },
    ]);
  });

  it('reads a 32 MB line under the limit whole', async () => {
    const big = Buffer.alloc(32 * 1024 * 1024, 0x62);
    const chunks = [];
    for (let offset = 0; offset < big.length; offset += 65_536) chunks.push(big.subarray(offset, offset + 65_536));
    const events = await collect([...chunks, Buffer.from('\n')], 64 * 1024 * 1024);
    expect(events).toHaveLength(1);
    // Over LARGE_LINE_BYTES: handed on as its bytes, undecoded, every byte there.
    const event = events[0]!;
    expect(event.kind === 'large-line' && Buffer.concat(event.pieces).equals(big)).toBe(true);
    expect(event.kind === 'large-line' && event.bytes).toBe(big.length);
  });
});

describe('the spawned bridge on hostile stdin', () => {
  let server: McpServer;
  let bridge: BridgeProcess;
  let counter = 0;
  beforeAll(async () => {
    server = await startMcpServer();
    bridge = spawnBridge(['--url', server.url.href]);
    // The first bytes of stdin may be a BOM, which the framing drops; start past them.
    bridge.send({ jsonrpc: '2.0', id: 'warm-up', method: 'fuzz/warm-up' });
    await bridge.reply('warm-up');
  });
  afterAll(async () => {
    bridge.kill();
    await server.close();
  });

  type Line = { bytes: Buffer; nullReplies: number; ids: string[]; posted?: { id: string; message: unknown } };
  const text = (line: string, rest: Omit<Line, 'bytes'>): Line => ({ bytes: Buffer.from(`${line}\n`, 'utf8'), ...rest });
  const hostileLine: fc.Arbitrary<() => Line> = fc.oneof(
    anyText.filter((t) => !isJson(t) && !t.includes('\n') && t.trim() !== '').map((t) => () => text(t, { nullReplies: 1, ids: [] })),
    fc.uint8Array({ maxLength: 60 }).map((b) => () => ({ bytes: Buffer.from([0xff, ...b.filter((x) => x !== 0x0a), 0x0a]), nullReplies: 1, ids: [] })),
    fc.oneof(fc.string(), fc.double(), fc.boolean(), fc.constant(null)).map((v) => () => text(JSON.stringify(v), { nullReplies: 1, ids: [] })),
    request.map((m) => () => {
      const message = { ...m, id: `p-${++counter}`, method: `fuzz/${m.method}` };
      return text(JSON.stringify(message), { nullReplies: 0, ids: [message.id], posted: { id: message.id, message: JSON.parse(JSON.stringify(message)) } });
    }),
    fc.nat(3).map((n) => () => {
      const ids = Array.from({ length: n }, () => `b-${++counter}`);
      return text(JSON.stringify(ids.length > 0 ? ids.map((id) => ({ jsonrpc: '2.0', id, method: 'x' })) : [1]), { nullReplies: n === 0 ? 1 : 0, ids });
    }),
    fc.constantFrom('', ' ', '\r', '\t  ').map((blank) => () => text(blank, { nullReplies: 0, ids: [] })),
  );

  it('answers every line by the rules and stays up (property, spawned bridge)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(hostileLine, { minLength: 1, maxLength: 20 }), async (makers) => {
        const lines = makers.map((make) => make());
        const before = bridge.lines.length;
        const ids = lines.flatMap((l) => l.ids);
        const nulls = lines.reduce((sum, l) => sum + l.nullReplies, 0);
        bridge.sendRaw(Buffer.concat(lines.map((l) => l.bytes)));
        await waitForLineCount(bridge, before + ids.length + nulls);
        const end = `end-${++counter}`;
        bridge.send({ jsonrpc: '2.0', id: end, method: 'fuzz/end' });
        await bridge.reply(end);
        const written = bridge.lines.slice(before);
        expect(written).toHaveLength(ids.length + nulls + 1);
        expect(stdoutProblems(written, [...ids, end])).toEqual([]);
        expect(written.filter((l) => JSON.parse(l).id === null)).toHaveLength(nulls);
        for (const { posted } of lines) if (posted !== undefined) expect(server.postsFor(posted.id).map((r) => r.message)).toEqual([posted.message]);
        expect(bridge.child.exitCode).toBeNull();
      }),
      { numRuns: 25 },
    );
  });

  it.each([
    [
      'a 64-bit integer argument',
      '{"jsonrpc":"2.0","id":"int64","method":"tools/call","params":{"name":"get_order","arguments":{"orderId":1234567890123456789}}}',
      '1234567890123456789',
    ],
    ['a number beyond double range', '{"jsonrpc":"2.0","id":"huge","method":"fuzz/huge","params":{"n":1e400}}', '1e400'],
  ])('posts a request with %s as the client wrote it', async (_, line, literal) => {
    const id = (JSON.parse(line) as { id: string }).id;
    bridge.send(line);
    expect((await bridge.reply(id)).result).toBeDefined();
    expect(server.postsFor(id)[0]!.body).toContain(literal);
  });

  it('posts a request whose params nest 100,000 levels deep and answers it', async () => {
    bridge.send(`{"jsonrpc":"2.0","id":"deep","method":"fuzz/deep","params":${'{"a":'.repeat(DEPTH)}1${'}'.repeat(DEPTH)}}`);
    expect(await bridge.reply('deep')).toMatchObject({ result: { content: [{ text: 'ok fuzz/deep' }] } });
    expect(server.postsFor('deep')).toHaveLength(1);
  });

  it('answers a line of 100,000 nested arrays with one -32600 and stays up', async () => {
    const before = bridge.lines.length;
    bridge.send(`${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}`);
    await waitForLineCount(bridge, before + 1);
    expect(JSON.parse(bridge.lines[before]!)).toMatchObject({ id: null, error: { code: -32600 } });
    bridge.send({ jsonrpc: '2.0', id: 'after-deep', method: 'fuzz/after' });
    expect((await bridge.reply('after-deep')).result).toBeDefined();
  });
});
