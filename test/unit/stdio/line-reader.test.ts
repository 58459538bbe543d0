import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { LARGE_LINE_BYTES, pumpLines, takePieces, type LineEvent } from '../../../src/stdio/line-reader.js';

async function collect(chunks: (string | Buffer)[], maxLineBytes = 1024): Promise<LineEvent[]> {
  const events: LineEvent[] = [];
  await pumpLines(Readable.from(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c) : c))), maxLineBytes, (event) => void events.push(event));
  return events;
}

const lines = (...texts: string[]) => texts.map((text) => ({ kind: 'line', text }));

describe('pumpLines', () => {
  it.each([
    ['splits on LF', ['a\nb\n'], lines('a', 'b')],
    ['strips a trailing CR', ['a\r\nb\r\n'], lines('a', 'b')],
    ['keeps a CR that is not at the end', ['a\rb\n'], lines('a\rb')],
    ['skips blank and whitespace-only lines', ['\n\n  \n\t\r\na\n'], lines('a')],
    ['yields a last line without a newline', ['a\nb'], lines('a', 'b')],
    ['joins a line split across chunks', ['{"a"', ':1}\n'], lines('{"a":1}')],
    ['ignores a UTF-8 BOM at the very start', ['\uFEFFa\n'], lines('a')],
    ['drops a BOM at the start of a later line too', ['a\n\uFEFFb\n'], lines('a', 'b')],
    ['keeps a BOM inside a line', ['a\uFEFF\n b\uFEFFc\n'], lines('a\uFEFF', ' b\uFEFFc')],
    ['yields nothing for empty input', [], []],
    ['reads past an empty first chunk', ['', 'a\n'], lines('a')],
  ])('%s', async (_title, chunks, expected) => {
    expect(await collect(chunks)).toEqual(expected);
  });

  it('reads a stream that yields strings (an input with an encoding set) like one that yields bytes', async () => {
    const events: LineEvent[] = [];
    await pumpLines(Readable.from(['{"a":', '1}\nb\n'], { objectMode: true }), 1024, (event) => void events.push(event));
    expect(events).toEqual(lines('{"a":1}', 'b'));
  });

  it('decodes a multi-byte character split across chunks', async () => {
    const bytes = Buffer.from('"Grüße 世界 🎉"\n');
    const chunks = [...bytes].map((byte) => Buffer.from([byte]));
    expect(await collect(chunks)).toEqual(lines('"Grüße 世界 🎉"'));
  });

  it('ignores a BOM split across the first chunks', async () => {
    expect(await collect([Buffer.from([0xef]), Buffer.from([0xbb]), Buffer.from([0xbf, 0x61, 0x0a])])).toEqual(lines('a'));
  });

  it('accepts a line of exactly the limit in bytes', async () => {
    expect(await collect(['é'.repeat(5) + '\n'], 10)).toEqual(lines('ééééé'));
  });

  it('reports a line one byte over the limit once and goes on with the next line', async () => {
    expect(await collect(['é'.repeat(5) + 'x\nok\n'], 10)).toEqual([{ kind: 'oversized', bytes: 11 }, ...lines('ok')]);
  });

  it('reports an over-long line the moment it crosses the limit, before its end arrives', async () => {
    const source = new Readable({ read() {} });
    const events: LineEvent[] = [];
    let firstEvent: () => void = () => undefined;
    const first = new Promise<void>((resolve) => (firstEvent = resolve));
    const pumped = pumpLines(source, 8, (event) => {
      events.push(event);
      firstEvent();
      return undefined;
    });
    source.push(Buffer.from('0123456789'));
    await first;
    expect(events).toEqual([{ kind: 'oversized', bytes: 10 }]);
    source.push(Buffer.from('more bytes of the same line\nnext\n'));
    source.push(null);
    await pumped;
    expect(events).toEqual([
      { kind: 'oversized', bytes: 10 },
      { kind: 'line', text: 'next' },
    ]);
  });

  it('discards an over-long last line without a newline after reporting it', async () => {
    expect(await collect(['ok\n', 'x'.repeat(50)], 10)).toEqual([...lines('ok'), { kind: 'oversized', bytes: 50 }]);
  });

  it('hands a 50 MB line that arrives in 64 KiB chunks on as those chunks, neither joined nor decoded', async () => {
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const chunks = Array.from({ length: 800 }, () => chunk);
    const events = await collect([...chunks, Buffer.from('\n')], 64 * 1024 * 1024);
    expect(events).toHaveLength(1);
    const event = events[0]!;
    if (event.kind !== 'large-line') throw new Error(`a ${event.kind} event`);
    expect(event.bytes).toBe(800 * 64 * 1024);
    expect(event.pieces).toHaveLength(800);
    expect(event.pieces.every((piece) => piece.buffer === chunk.buffer)).toBe(true);
  });

  it('decodes a line of exactly LARGE_LINE_BYTES and hands on one a byte longer undecoded', async () => {
    const limit = 4 * LARGE_LINE_BYTES;
    const exact = 'a'.repeat(LARGE_LINE_BYTES);
    expect(await collect([`${exact}\n`], limit)).toEqual(lines(exact));
    const [event] = await collect([`${exact}b\r\n`], limit);
    expect(event?.kind === 'large-line' && Buffer.concat(event.pieces).toString()).toBe(`${exact}b`);
    expect(event?.kind === 'large-line' && event.bytes).toBe(LARGE_LINE_BYTES + 1);
  });

  it('strips the CR of a large line whether it ends a chunk or is a chunk of its own', async () => {
    const body = 'c'.repeat(LARGE_LINE_BYTES);
    for (const chunks of [[`${body}\r`, '\n'], [body, '\r', '\n'], [`${body}\r\n`]]) {
      const [event] = await collect(chunks, 4 * LARGE_LINE_BYTES);
      if (event?.kind !== 'large-line') throw new Error('not a large line');
      expect(event.bytes).toBe(LARGE_LINE_BYTES);
      expect(Buffer.concat(event.pieces).equals(Buffer.from(body))).toBe(true);
    }
  });

  it("gives a large line's pieces away once: the event keeps none after takePieces", async () => {
    const [event] = await collect(['x'.repeat(LARGE_LINE_BYTES + 1)], 4 * LARGE_LINE_BYTES);
    if (event?.kind !== 'large-line') throw new Error('not a large line');
    expect(takePieces(event)).toHaveLength(1);
    expect(event.pieces).toEqual([]);
  });
  it('ignores a byte order mark at the start of any line, short or large, wherever the pieces cut it', async () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    const large = `{"s":"${'x'.repeat(LARGE_LINE_BYTES)}"}`;
    const input = Buffer.concat([Buffer.from('first\n'), bom, Buffer.from('{"id":1}\r\n'), bom, Buffer.from(`${large}\n`), bom, Buffer.from('\n')]);
    for (const cut of [0, 7, 8, 20, 21, 22]) {
      const events = await collect(cut === 0 ? [input] : [input.subarray(0, cut), input.subarray(cut)], 4 * LARGE_LINE_BYTES);
      expect(events.slice(0, 2)).toEqual(lines('first', '{"id":1}'));
      const third = events[2];
      if (third?.kind !== 'large-line') throw new Error('not a large line');
      expect(Buffer.concat(takePieces(third)).toString()).toBe(large);
      expect(third.bytes).toBe(large.length);
      expect(events).toHaveLength(3); // the line of a BOM alone is blank
    }
  });

  it('reports a line that is not valid UTF-8 instead of decoding it with replacement characters', async () => {
    const bad = Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}}\n')]);
    expect(await collect([bad, Buffer.from('ok\n')], 1024)).toEqual([{ kind: 'not-utf8', bytes: bad.length - 1, id: 1 }, ...lines('ok')]);
  });
});

describe('pumpLines pacing and ending', () => {
  it("hands on nothing more, and reads no more, while a handler's promise is pending", async () => {
    const source = new Readable({ read() {} });
    const events: string[] = [];
    let release: () => void = () => undefined;
    const pumped = pumpLines(source, 1024, (event) => {
      events.push(event.kind === 'line' ? event.text : event.kind);
      if (events.length === 1) return new Promise<void>((resolve) => (release = resolve));
      return undefined;
    });
    source.push(Buffer.from('a\nb\n'));
    await new Promise((resolve) => setImmediate(resolve));
    source.push(Buffer.from('c\n'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(events).toEqual(['a']);
    expect(source.readableLength, 'the later bytes wait in the stream, unread').toBe(2);
    release();
    source.push(null);
    await pumped;
    expect(events).toEqual(['a', 'b', 'c']);
  });

  it('keeps the lines in order when a handler pushes more input from inside its call', async () => {
    const source = new Readable({ read() {} });
    const events: string[] = [];
    const pumped = pumpLines(source, 1024, (event) => {
      const text = event.kind === 'line' ? event.text : event.kind;
      events.push(text);
      // A flowing stream emits a chunk pushed here at once, while the line before it is handled.
      if (text === 'a') source.push(Buffer.from('c\nd\n'));
      if (text === 'c') source.push(null);
      return undefined;
    });
    source.push(Buffer.from('a\nb\n'));
    await pumped;
    expect(events).toEqual(['a', 'b', 'c', 'd']);
  });

  it('stops at a handler\'s "stop": no later line is handed on and the input is let go of', async () => {
    const source = Readable.from([Buffer.from('a\nb\nc\n')]);
    const events: string[] = [];
    await pumpLines(source, 1024, (event) => {
      events.push(event.kind === 'line' ? event.text : event.kind);
      return events.length === 2 ? 'stop' : undefined;
    });
    expect(events).toEqual(['a', 'b']);
    expect(source.destroyed).toBe(true);
  });

  it("fails with the input's error, and when the input closes before its end", async () => {
    const broken = new Readable({ read() {} });
    const failed = pumpLines(broken, 1024, () => undefined);
    broken.destroy(new Error('EIO: stdin broke'));
    await expect(failed).rejects.toThrow('EIO: stdin broke');

    const cut = new Readable({ read() {} });
    const closed = pumpLines(cut, 1024, () => undefined);
    cut.push(Buffer.from('a\n'));
    cut.destroy();
    await expect(closed).rejects.toMatchObject({ code: 'ERR_STREAM_PREMATURE_CLOSE' });
  });

  it('fails when a handler throws or its promise rejects', async () => {
    await expect(
      pumpLines(Readable.from([Buffer.from('a\n')]), 1024, () => {
        throw new Error('handler bug');
      }),
    ).rejects.toThrow('handler bug');
    await expect(pumpLines(Readable.from([Buffer.from('a\n')]), 1024, () => Promise.reject(new Error('write failed')))).rejects.toThrow('write failed');
  });
});
