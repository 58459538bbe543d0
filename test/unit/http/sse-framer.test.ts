// SseFramer: large data handed over as bytes at every split point, and small events framed as eventsource-parser framed them.

import { createParser } from 'eventsource-parser';
import { describe, expect, it } from 'vitest';
import { LARGE_EVENT_BYTES, SseFramer, type SseEvent, type SseReadOptions } from '../../../src/http/sse-reader.js';

/** A threshold small enough that every split point of a stream holding a large event can be tried. */
const LARGE = 16;

/** The events of `chunks`, fed one by one, then the end. */
function frame(chunks: readonly (Buffer | string)[], options: SseReadOptions = { maxEventChars: 1 << 20, largeDataBytes: LARGE }): SseEvent[] {
  const framer = new SseFramer(options);
  const out: SseEvent[] = [];
  for (const chunk of chunks) out.push(...framer.feed(chunk));
  out.push(...framer.end());
  return out;
}

/** Every way to cut `bytes` into two chunks, and into three chunks with the cuts `gap` apart. */
function* splits(bytes: Buffer, gap = 1): Generator<Buffer[]> {
  for (let i = 0; i <= bytes.length; i++) {
    yield [bytes.subarray(0, i), bytes.subarray(i)];
    if (i + gap <= bytes.length) yield [bytes.subarray(0, i), bytes.subarray(i, i + gap), bytes.subarray(i + gap)];
  }
}

const small = (data: string, extra: Partial<SseEvent> = {}): SseEvent => ({ type: undefined, data, id: undefined, ...extra });
const large = (bytes: Buffer | string, extra: Partial<SseEvent> = {}): SseEvent => ({
  type: undefined,
  data: '',
  id: undefined,
  bytes: Buffer.from(bytes),
  ...extra,
});

describe('SseFramer with largeDataBytes', () => {
  // A large event between small ones, with fields, a comment and non-ASCII text in the large data.
  const json = '{"text":"caf\u00e9 \u20ac \ud83d\ude00 \\"quoted\\" 0123456789"}';
  for (const [name, eol] of [
    ['LF', '\n'],
    ['CR', '\r'],
    ['CRLF', '\r\n'],
  ] as const) {
    it(`hands over a large event's data as its bytes at every split point (${name} line ends)`, () => {
      const stream = Buffer.from(`: keep-alive${eol}data: before${eol}${eol}id: 7${eol}event: message${eol}data: ${json}${eol}${eol}data: after${eol}${eol}`);
      const expected = [small('before'), large(json, { id: '7', type: 'message' }), small('after')];
      for (const chunks of splits(stream, 3)) expect(frame(chunks)).toEqual(expected);
    });
  }

  it('joins the lines of large data with LF, whatever the line ends', () => {
    const stream = Buffer.from('data: {"a":\r\ndata:  "0123456789",\rdata\ndata: "b":1}\n\n');
    for (const chunks of splits(stream, 2)) expect(frame(chunks)).toEqual([large('{"a":\n "0123456789",\n\n"b":1}')]);
  });

  it('decodes data of at most largeDataBytes as before, and hands over one byte more', () => {
    expect(frame([`data: ${'a'.repeat(LARGE)}\n\n`])).toEqual([small('a'.repeat(LARGE))]);
    expect(frame([`data: ${'a'.repeat(LARGE - 1)}\ndata:\n\n`])).toEqual([small(`${'a'.repeat(LARGE - 1)}\n`)]);
    expect(frame([`data: ${'a'.repeat(LARGE + 1)}\n\n`])).toEqual([large('a'.repeat(LARGE + 1))]);
  });

  it('keeps invalid UTF-8 in large data as it came', () => {
    const data = Buffer.concat([Buffer.from('"0123456789abcdef'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"')]);
    const stream = Buffer.concat([Buffer.from('data: '), data, Buffer.from('\n\n')]);
    for (const chunks of splits(stream)) expect(frame(chunks)).toEqual([large(data)]);
  });

  it('takes a large event followed by small ones in the same chunk', () => {
    const stream = `data: ${'x'.repeat(40)}\n\ndata: one\n\nid: 2\ndata: two\n\n`;
    expect(frame([stream])).toEqual([large('x'.repeat(40)), small('one'), small('two', { id: '2' })]);
    expect(frame([`data: ${'x'.repeat(20)}`, `${'x'.repeat(20)}\n\ndata: one\n\nid: 2\ndata: two\n\n`])).toEqual([
      large('x'.repeat(40)),
      small('one'),
      small('two', { id: '2' }),
    ]);
  });

  it('gathers a line past largeDataBytes that is not data, and reads it as such a line', () => {
    expect(frame([`: ${'c'.repeat(30)}`, `${'c'.repeat(30)}\nid: ${'i'.repeat(20)}`, `${'i'.repeat(20)}\ndata: x\n\n`])).toEqual([
      small('x', { id: 'i'.repeat(40) }),
    ]);
  });

  it('fails with REPLY_TOO_LARGE when a large line outgrows the event limit, counting bytes', () => {
    const options = { maxEventChars: 40, largeDataBytes: LARGE };
    expect(() => frame([`data: ${'é'.repeat(10)}`, `${'é'.repeat(10)}\n\n`], options)).toThrow(expect.objectContaining({ code: 'REPLY_TOO_LARGE' }) as Error);
    expect(() => frame([`data: ${'x'.repeat(30)}`, 'x'.repeat(30)], options)).toThrow(expect.objectContaining({ code: 'REPLY_TOO_LARGE' }) as Error);
    expect(frame([`data: ${'x'.repeat(20)}`, `${'x'.repeat(14)}\n\n`], options)).toEqual([large('x'.repeat(34))]);
  });

  it('fails with REPLY_TOO_LARGE for an event past the limit that arrives whole in one chunk, counting the LF between its lines', () => {
    const options = { maxEventChars: 20 };
    expect(() => frame([`data: ${'x'.repeat(21)}\n\n`], options)).toThrow(expect.objectContaining({ code: 'REPLY_TOO_LARGE' }) as Error);
    expect(() => frame([`data: ${'x'.repeat(10)}\ndata: ${'x'.repeat(10)}\n\n`], options)).toThrow(
      expect.objectContaining({ code: 'REPLY_TOO_LARGE' }) as Error,
    );
    expect(frame([`data: ${'x'.repeat(20)}\n\n`], options)).toEqual([small('x'.repeat(20))]);
  });

  it('hands over the events before one past the limit in the same chunk, then fails', () => {
    const framer = new SseFramer({ maxEventChars: 20 });
    expect(framer.feed(`data: first\n\ndata: ${'x'.repeat(21)}\n\n`)).toEqual([small('first')]);
    expect(() => framer.end()).toThrow(expect.objectContaining({ code: 'REPLY_TOO_LARGE' }) as Error);
  });

  it('holds the first event to firstEventMaxChars and the ones after it to maxEventChars, in one chunk', () => {
    const options = { maxEventChars: 40, firstEventMaxChars: 10 };
    expect(frame([`data: short\n\ndata: ${'x'.repeat(30)}\n\n`], options)).toEqual([small('short'), small('x'.repeat(30))]);
    expect(() => frame([`data: ${'x'.repeat(11)}\n\n`], options)).toThrow(expect.objectContaining({ code: 'REPLY_TOO_LARGE' }) as Error);
  });

  it('grows the buffer of a line longer than its first reservation, up to the event limit', () => {
    const payload = 'z'.repeat(LARGE * 64 * 5 + 3);
    const stream = Buffer.from(`data: ${payload}\n\n`);
    const chunks: Buffer[] = [];
    for (let i = 0; i < stream.length; i += 100) chunks.push(stream.subarray(i, i + 100));
    expect(frame(chunks, { maxEventChars: payload.length + 6, largeDataBytes: LARGE })).toEqual([large(payload)]);
    expect(frame(chunks)).toEqual([large(payload)]);
    expect(frame([stream])).toEqual([large(payload)]);
  });

  it('uses the bridge threshold LARGE_EVENT_BYTES for 64 KiB chunks', () => {
    const payload = `"${'y'.repeat(LARGE_EVENT_BYTES)}"`;
    const text = Buffer.from(`id: 9\ndata: ${payload}\r\n\r\n: ping\r\ndata: {}\r\n\r\n`);
    const chunks: Buffer[] = [];
    for (let i = 0; i < text.length; i += 64 * 1024) chunks.push(text.subarray(i, i + 64 * 1024));
    const [first, second] = frame(chunks, { maxEventChars: 4 * LARGE_EVENT_BYTES, largeDataBytes: LARGE_EVENT_BYTES });
    expect(first?.data).toBe('');
    expect(first?.id).toBe('9');
    expect(first?.bytes?.equals(Buffer.from(payload))).toBe(true);
    expect(second).toEqual(small('{}'));
  });
});

describe('SseFramer fields', () => {
  it.each([
    ['an id with NUL ignored', ['id: a\0b\ndata: x\n\n'], [small('x')]],
    ['an empty event type is the default type', ['event:\ndata: x\n\n'], [small('x')]],
    ['a data field without a colon is an empty data line', ['data\ndata\n\n'], [small('\n')]],
    ['an id field without a colon is an empty id', ['id\ndata: x\n\n'], [small('x', { id: '' })]],
    ['an event without data is not dispatched', ['id: 1\nevent: ping\n\ndata: x\n\n'], [small('x')]],
    ['a long unknown field ignored', ['unknownfield: 1\nunknownfieldnocolon\ndata: x\n\n'], [small('x')]],
    ['unknown fields as long as known ones ignored', ['evens: 1\nretro: 2\nix: 3\ndaty: 4\ndata: x\n\n'], [small('x')]],
    ['only the first space after the colon removed', ['data:  x\n\n'], [small(' x')]],
    ['a leading BOM ignored, split or not', ['\ufeffdata: x\n\n'], [small('x')]],
    ['a BOM that arrives byte by byte', [Buffer.from([0xef]), Buffer.from([0xbb]), Buffer.from([0xbf]), 'data: x\n\n'], [small('x')]],
    ['bytes that only start like a BOM kept', [Buffer.from([0xef]), 'data: x\n\ndata: y\n\n'], [small('y')]],
    ['a short first chunk that is not a BOM', ['da', 'ta: x\n\n'], [small('x')]],
    ['a second BOM kept', ['\ufeff\ufeffdata: x\n\ndata: y\n\n'], [small('y')]],
  ])('reads %s', (_title, chunks, expected) => {
    expect(frame(chunks as (string | Buffer)[], { maxEventChars: 1 << 20 })).toEqual(expected);
  });

  it('reports only retry values made of digits', () => {
    const seen: number[] = [];
    frame(['retry: 10\nretry: x\nretry\nretry: 2.5\nretry:20\n\n'], { maxEventChars: 100, onRetry: (ms) => seen.push(ms) });
    expect(seen).toEqual([10, 20]);
  });

  it('leaves an event whose last line never ended', () => {
    expect(frame(['data: a\n\ndata: b'])).toEqual([small('a')]);
  });
});

/** eventsource-parser over a streaming TextDecoder: how events were framed before SseFramer read bytes. */
function frameAsBefore(chunks: readonly Buffer[]): SseEvent[] {
  const out: SseEvent[] = [];
  const parser = createParser({ onEvent: (message) => out.push({ type: message.event, data: message.data, id: message.id }) });
  const decoder = new TextDecoder('utf-8');
  let endsWithCr = false;
  const feed = (text: string) => {
    if (text === '') return;
    parser.feed(text);
    endsWithCr = text.endsWith('\r');
  };
  for (const chunk of chunks) feed(decoder.decode(chunk, { stream: true }));
  feed(decoder.decode());
  if (endsWithCr) parser.feed('\n');
  return out;
}

/** A small deterministic generator (mulberry32), so a failure names the seed that made it. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('SseFramer against eventsource-parser', () => {
  const pieces = [
    'data:',
    'data: ',
    'data',
    'id: ',
    'id:',
    'event: ',
    'event:message',
    'retry: 5',
    ': c',
    ':',
    'x',
    '{"a":1}',
    'é',
    '€😀',
    '\0',
    ' ',
    'da',
    'ta',
    'foo: bar',
    '\n',
    '\r',
    '\r\n',
    '\n\n',
    '\r\r',
  ];
  const invalid = [Buffer.from([0xc3]), Buffer.from([0xff]), Buffer.from([0xe2, 0x82]), Buffer.from([0xf0, 0x9f])];

  it('frames 5000 generated streams, cut at random points, into the same events, with and without large data as bytes', () => {
    for (let seed = 1; seed <= 5000; seed++) {
      const next = random(seed);
      const parts: Buffer[] = [];
      const count = 1 + Math.floor(next() * 40);
      for (let i = 0; i < count; i++)
        parts.push(next() < 0.05 ? invalid[Math.floor(next() * invalid.length)]! : Buffer.from(pieces[Math.floor(next() * pieces.length)]!));
      // Ended by a blank line: see the next test for the one way the two differ at the end of a body.
      const stream = Buffer.concat([...parts, Buffer.from('\n\n')]);
      const chunks: Buffer[] = [];
      for (let at = 0; at < stream.length;) {
        const size = 1 + Math.floor(next() * 12);
        chunks.push(stream.subarray(at, at + size));
        at += size;
      }
      const before = frameAsBefore(chunks);
      expect({ seed, events: frame(chunks, { maxEventChars: 1 << 20 }) }).toEqual({ seed, events: before });
      // With large data handed over as bytes, the same events once those bytes are decoded.
      const decoded = frame(chunks, { maxEventChars: 1 << 20, largeDataBytes: 8 }).map(({ bytes, ...event }) =>
        bytes === undefined ? event : { ...event, data: bytes.toString('utf8') },
      );
      expect({ seed, events: decoded }).toEqual({ seed, events: before });
    }
  });

  it('dispatches an event ended by a CR at the end of a chunk when only an unfinished line follows (eventsource-parser held that CR back for good)', () => {
    const chunks = [Buffer.from('data: x\r\r'), Buffer.from('data: y')];
    expect(frameAsBefore(chunks)).toEqual([]);
    expect(frame(chunks, { maxEventChars: 100 })).toEqual([small('x')]);
  });
});

describe('SseFramer with a refusal to watch for', () => {
  const refused = new Error('refused early');
  const refuseEarly = {
    watch: { inside: 'result', text: 'resultType', count: 'inputRequests' },
    refusal: (facts: { text: string | undefined; count: number }) => (facts.text === 'input_required' && facts.count > 3 ? refused : undefined),
  };
  const event = (requests: number) =>
    `event: message\ndata: {"id":1,"result":{"resultType":"input_required","inputRequests":{${Array.from({ length: requests }, (_, i) => `"r${i}":{"method":"roots/list"}`).join(',')}}}}\n\n`;

  it('throws the refusal from the chunk that settles it, before the line ends, however a gathered data line is cut', () => {
    const bytes = Buffer.from(event(6));
    // The fourth input request's key is where the count passes the bound.
    const settledAt = bytes.indexOf('"r3"');
    for (let size = 1; size <= 9; size++) {
      for (let shift = 0; shift < size; shift++) {
        const cuts = [shift, ...Array.from({ length: Math.ceil(bytes.length / size) }, (_, k) => shift + (k + 1) * size)].filter(
          (at) => at > 0 && at < bytes.length,
        );
        const chunks = [0, ...cuts].map((from, k) => bytes.subarray(from, cuts[k] ?? bytes.length));
        const framer = new SseFramer({ maxEventChars: 1 << 20, largeDataBytes: LARGE, refuseEarly });
        let fed = 0;
        const feedAll = () => {
          for (const chunk of chunks) {
            framer.feed(chunk);
            fed += chunk.length;
          }
        };
        expect(feedAll, `${size}-byte chunks from ${shift}`).toThrow(refused);
        expect(fed).toBeLessThanOrEqual(settledAt);
      }
    }
  });

  it('frames an event the refusal does not settle as it would without one, and watches each large line afresh', () => {
    const stream = event(3) + event(2) + 'data: {"result":{"resultType":"input_required","inputRequests":{"a":1}}}\ndata: {"b":2}\n\n';
    expect(frame([stream], { maxEventChars: 1 << 20, largeDataBytes: LARGE, refuseEarly })).toEqual(frame([stream]));
  });

  it('watches only data lines, and nothing below the large size', () => {
    const comment = `:${event(6).slice('event: message\ndata: '.length)}`;
    expect(frame([comment], { maxEventChars: 1 << 20, largeDataBytes: LARGE, refuseEarly })).toEqual([]);
    expect(frame([event(6)], { maxEventChars: 1 << 20, largeDataBytes: 1 << 19, refuseEarly })).toHaveLength(1);
  });
});
