import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { readSseEvents, type SseEvent } from '../../../src/http/sse-reader.js';

async function events(chunks: (string | Uint8Array)[], maxEventChars = 1 << 20, onRetry?: (ms: number) => void): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const event of readSseEvents(Readable.from(chunks, { objectMode: true }), onRetry === undefined ? { maxEventChars } : { maxEventChars, onRetry }))
    out.push(event);
  return out;
}

const message = (data: string, extra: Partial<SseEvent> = {}): SseEvent => ({ type: undefined, data, id: undefined, ...extra });

describe('readSseEvents', () => {
  it.each([
    ['one event', ['data: {"a":1}\n\n'], [message('{"a":1}')]],
    ['an event type and id', ['event: message\nid: 7\ndata: x\n\n'], [message('x', { type: 'message', id: '7' })]],
    ['CRLF line ends', ['data: a\r\n\r\ndata: b\r\n\r\n'], [message('a'), message('b')]],
    ['CR line ends', ['data: a\r\rdata: b\r\r'], [message('a'), message('b')]],
    ['multi-line data joined with a newline', ['data: {"a":\ndata: 1}\n\n'], [message('{"a":\n1}')]],
    ['data without the optional space', ['data:x\n\n'], [message('x')]],
    ['comments (keep-alives) ignored', [': ping\n\n: ping\ndata: x\n\n'], [message('x')]],
    ['a priming event: id and empty data', ['id: p1\ndata:\n\n'], [message('', { id: 'p1' })]],
    ['unknown fields ignored', ['foo: bar\ndata: x\n\n'], [message('x')]],
    ['a trailing event without its blank line discarded', ['data: a\n\ndata: b\n'], [message('a')]],
    ['one-byte chunks', [...'data: {"k":"v"}\r\n\r\n'], [message('{"k":"v"}')]],
    ['a CRLF split between chunks', ['data: a\r', '\n\r', '\n'], [message('a')]],
  ])('reads %s', async (_title, chunks, expected) => {
    expect(await events(chunks)).toEqual(expected);
  });

  it('decodes a multi-byte character split across byte chunks', async () => {
    const bytes = new TextEncoder().encode('data: "Grüße 世界"\n\n');
    const chunks = [...bytes].map((byte) => Uint8Array.of(byte));
    expect(await events(chunks)).toEqual([message('"Grüße 世界"')]);
  });

  it('reports retry values', async () => {
    const seen: number[] = [];
    await events(['retry: 1500\ndata: x\n\n'], 1 << 20, (ms) => seen.push(ms));
    expect(seen).toEqual([1500]);
  });

  it('yields each event as soon as its blank line arrives', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    async function* source() {
      yield 'data: first\n\n';
      await gate;
      yield 'data: second\n\n';
    }
    const iterator = readSseEvents(source(), { maxEventChars: 1000 });
    expect((await iterator.next()).value).toEqual(message('first'));
    release();
    expect((await iterator.next()).value).toEqual(message('second'));
  });

  it('fails with REPLY_TOO_LARGE when one event exceeds the limit', async () => {
    await expect(events(['data: ' + 'x'.repeat(200), '\n\n'], 100)).rejects.toMatchObject({ code: 'REPLY_TOO_LARGE' });
  });

  it('reads a 20 MB event that arrives in 64 KiB chunks', async () => {
    const payload = 'y'.repeat(20 * 1024 * 1024);
    const text = `data: ${payload}\n\n`;
    const chunks: string[] = [];
    for (let i = 0; i < text.length; i += 64 * 1024) chunks.push(text.slice(i, i + 64 * 1024));
    const [event] = await events(chunks, 64 * 1024 * 1024);
    expect(event?.data.length).toBe(payload.length);
  });
});
