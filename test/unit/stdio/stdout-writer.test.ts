import { once } from 'node:events';
import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createRedactor } from '../../../src/logging/redactor.js';
import { COPIED_LINE_MAX_BYTES, createMessageWriter, MAX_TRACKED_PROGRESS_TOKENS } from '../../../src/stdio/stdout-writer.js';

/** A reader that takes nothing until `release()` is called: the client that stops reading stdout. */
function stalledOutput(highWaterMark: number) {
  const lines: string[] = [];
  const held: (() => void)[] = [];
  const output = new Writable({
    highWaterMark,
    write(chunk: Buffer, _encoding, callback) {
      lines.push(chunk.toString());
      held.push(() => callback());
    },
  });
  const release = () => {
    for (const callback of held.splice(0)) callback();
  };
  return { output, lines, release, held };
}

function collect(stream: PassThrough): () => string {
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  return () => Buffer.concat(chunks).toString();
}

describe('createMessageWriter on a terminal', () => {
  it('escapes C1 and bidi controls in every line to a terminal, and writes the same bytes to a pipe', async () => {
    const text = 'csi \u009b2J osc \u009d0;title\u0007 rlo \u202e lri \u2066';
    const message = { jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text }] } };
    const serialised = Buffer.from(JSON.stringify(message));
    const terminal = Object.assign(new PassThrough(), { isTTY: true });
    const shown = collect(terminal);
    await createMessageWriter(terminal, () => undefined).write(message, serialised);
    expect(shown()).not.toMatch(/[\u0080-\u009f\u202a-\u202e\u2066-\u2069]/);
    expect(JSON.parse(shown())).toEqual(message);
    const pipe = new PassThrough();
    const piped = collect(pipe);
    await createMessageWriter(pipe, () => undefined).write(message, serialised);
    expect(piped()).toBe(`${serialised.toString()}\n`);
  });
});

describe('createMessageWriter', () => {
  it('writes each message as one line, a given serialisation as is, strings and Buffers alike', async () => {
    const output = new PassThrough();
    const text = collect(output);
    const writer = createMessageWriter(output, () => undefined);
    expect(await writer.write({ jsonrpc: '2.0', id: 1, result: { text: 'a\nb' } })).toBe(true);
    expect(await writer.write({ ignored: true }, '{"from":"string"}')).toBe(true);
    expect(await writer.write({ ignored: true }, Buffer.from('{"from":"buffer"}'))).toBe(true);
    await new Promise((resolve) => setImmediate(resolve)); // the lines leave on the next tick (corked)
    expect(text().split('\n')).toEqual(['{"jsonrpc":"2.0","id":1,"result":{"text":"a\\nb"}}', '{"from":"string"}', '{"from":"buffer"}', '']);
  });

  it('resolves false and writes nothing for a message that cannot be serialised (a cycle, a BigInt, undefined)', async () => {
    const output = new PassThrough();
    const text = collect(output);
    const writer = createMessageWriter(output, () => undefined);
    const cyclic: Record<string, unknown> = { jsonrpc: '2.0', id: 1 };
    cyclic.self = cyclic;
    expect(await writer.write(cyclic)).toBe(false);
    expect(await writer.write({ big: 10n })).toBe(false);
    expect(await writer.write(undefined)).toBe(false);
    await new Promise((resolve) => setImmediate(resolve));
    expect(text()).toBe('');
  });

  it('masks the run’s secrets in every line, given or serialised here', async () => {
    const output = new PassThrough();
    const text = collect(output);
    const secret = 'sk-live-0123456789abcdef';
    const writer = createMessageWriter(output, () => undefined, createRedactor([secret]));
    await writer.write({ jsonrpc: '2.0', id: 1, result: { echoed: secret } });
    await writer.write(undefined, Buffer.from(`{"jsonrpc":"2.0","id":2,"result":{"echoed":"${secret}"}}`));
    await new Promise((resolve) => setImmediate(resolve));
    expect(text()).not.toContain(secret);
    expect(text().split('\n')).toHaveLength(3);
  });

  it('reports the reader going away once, with the error, and drops later writes', async () => {
    const output = new PassThrough();
    const closes: (Error | undefined)[] = [];
    const writer = createMessageWriter(output, (error) => closes.push(error));
    const epipe = Object.assign(new Error('write EPIPE'), { code: 'EPIPE' });
    const closed = new Promise((resolve) => output.once('close', resolve)); // once() would reject on the 'error' first
    output.destroy(epipe);
    await closed;
    expect(closes).toEqual([epipe]);
    expect(writer.closed).toBe(true);
    expect(await writer.write({ jsonrpc: '2.0', id: 1, result: {} })).toBe(true);
    expect(writer.full).toBe(false);
    await expect(writer.room()).resolves.toBeUndefined();
  });

  it('answers a line that left with a settled true, and a stream whose write throws with a rejection, never a throw', async () => {
    const writer = createMessageWriter(new PassThrough(), () => undefined);
    await expect(writer.write({ jsonrpc: '2.0', id: 1, result: {} })).resolves.toBe(true);
    const broken = new Writable({ write: (_chunk, _encoding, callback) => callback() });
    broken.write = () => {
      throw new Error('the stream broke');
    };
    let written: Promise<boolean> | undefined;
    expect(() => (written = createMessageWriter(broken, () => undefined).write({ jsonrpc: '2.0', id: 2, result: {} }))).not.toThrow();
    await expect(written).rejects.toThrow('the stream broke');
  });

  it('reports a plain close (no error) as closed with no error', async () => {
    const output = new PassThrough();
    const closes: (Error | undefined)[] = [];
    const writer = createMessageWriter(output, (error) => closes.push(error));
    output.destroy();
    await once(output, 'close');
    expect(closes).toEqual([undefined]);
    expect(writer.closed).toBe(true);
  });

  it('waits for drain when the reader lags, and every waiting writer resumes on the same drain', async () => {
    const { output, lines, release } = stalledOutput(8);
    const writer = createMessageWriter(output, () => undefined);
    let resumed = 0;
    const first = writer.write({ n: 1 }).then((ok) => (resumed++, ok));
    const second = writer.write({ n: 2 }).then((ok) => (resumed++, ok));
    await new Promise((resolve) => setImmediate(resolve));
    expect(resumed).toBe(0);
    expect(lines.length).toBeGreaterThan(0);
    while (resumed < 2) {
      release();
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(await first).toBe(true);
    expect(await second).toBe(true);
    expect(lines.join('')).toBe('{"n":1}\n{"n":2}\n');
  });

  it('is full while more than maxPendingBytes wait for the reader, and room() resolves once it drained', async () => {
    const { output, release } = stalledOutput(4);
    const writer = createMessageWriter(output, () => undefined, undefined, 16);
    expect(writer.full).toBe(false);
    void writer.write({ padding: 'x'.repeat(32) });
    expect(writer.full).toBe(true);
    let roomy = false;
    const room = writer.room().then(() => (roomy = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(roomy).toBe(false);
    while (!roomy) {
      release();
      await new Promise((resolve) => setImmediate(resolve));
    }
    await room;
    expect(writer.full).toBe(false);
  });

  it('stops waiting for drain when the reader closes instead', async () => {
    const { output } = stalledOutput(1);
    const closes: (Error | undefined)[] = [];
    const writer = createMessageWriter(output, (error) => closes.push(error));
    const waiting = writer.write({ jsonrpc: '2.0', id: 1, result: {} });
    const room = writer.room();
    output.destroy();
    expect(await waiting).toBe(true);
    await room;
    expect(closes).toEqual([undefined]);
    expect(writer.full).toBe(false);
  });
  // SDK v1 clients handle a notification a microtask after the read that carried it but a response
  // at once: a progress notification read in the same chunk as its result is lost.
  it('holds back the response to a request whose progress was just written, writes it alone once PROGRESS_RESPONSE_GAP_MS is up, and lets other lines pass', async () => {
    const { output, writes } = recordingOutput();
    const writer = createMessageWriter(output, () => undefined);
    writer.expectProgress(1, 'import-1'); // the token need not be the id
    const progress = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'import-1', progress: 1, total: 1 } };
    await writer.write(progress);
    const held = writer.write({ jsonrpc: '2.0', id: 1, result: {} });
    await writer.write({ jsonrpc: '2.0', method: 'notifications/message', params: {} });
    // A check-phase callback runs before any timer of this turn: the response is still held back.
    await new Promise((resolve) => setImmediate(resolve));
    const before = writes.map((write) => write.text).join('');
    expect(before).toContain('notifications/progress');
    expect(before).toContain('notifications/message');
    expect(before).not.toContain('"id":1,');
    await held;
    await writer.flushed();
    await new Promise((resolve) => setImmediate(resolve)); // the corked batch is written on the next tick
    const texts = writes.map((write) => write.text);
    // Its own write, after the other request's line.
    expect(texts.at(-1)).toBe('{"jsonrpc":"2.0","id":1,"result":{}}\n');
  });

  it("writes the response of a request without recent progress at once, even right after another request's progress", async () => {
    const { output, writes } = recordingOutput();
    const writer = createMessageWriter(output, () => undefined);
    writer.expectProgress(2, 'mine');
    writer.expectProgress(3, 'other');
    const progress = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'other', progress: 1 } };
    await Promise.all([writer.write(progress), writer.write({ jsonrpc: '2.0', id: 2, result: {} })]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes.map((write) => write.text)).toEqual([`${JSON.stringify(progress)}\n`, '{"jsonrpc":"2.0","id":2,"result":{}}\n']);
  });

  it('holds nothing back for a progress notification whose token no request named (the server sent progress nobody asked for)', async () => {
    const { output, writes } = recordingOutput();
    const writer = createMessageWriter(output, () => undefined);
    writer.expectProgress(9, 'asked');
    const unasked = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 4, progress: 1 } };
    await Promise.all([writer.write(unasked), writer.write({ jsonrpc: '2.0', id: 4, result: {} })]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes.map((write) => write.text)).toEqual([`${JSON.stringify(unasked)}\n`, '{"jsonrpc":"2.0","id":4,"result":{}}\n']);
  });

  it('forgets a request once its response is written: a later request reusing the id and token waits only for its own progress', async () => {
    const { output, writes } = recordingOutput();
    const writer = createMessageWriter(output, () => undefined);
    writer.expectProgress(5, 5);
    await writer.write({ jsonrpc: '2.0', id: 5, result: {} }); // no progress came: written at once
    await writer.write({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 5, progress: 1 } });
    await writer.write({ jsonrpc: '2.0', id: 5, result: { again: true } }); // no request 5 named token 5 now
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes.map((write) => write.text).join('')).toContain('"again":true');
  });

  it('reports a held-back response as written through flushed(), and drops it when the reader went away meanwhile', async () => {
    const { output, writes } = recordingOutput();
    const writer = createMessageWriter(output, () => undefined);
    writer.expectProgress(7, 7);
    await writer.write({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 7, progress: 1 } });
    const response = writer.write({ jsonrpc: '2.0', id: 7, result: {} });
    await writer.flushed();
    await new Promise((resolve) => setImmediate(resolve)); // the corked batch is written on the next tick
    expect(writes.map((write) => write.text).join('')).toContain('"id":7');
    expect(await response).toBe(true);

    const gone = recordingOutput();
    const closedWriter = createMessageWriter(gone.output, () => undefined);
    closedWriter.expectProgress(8, 8);
    await closedWriter.write({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 8, progress: 1 } });
    const dropped = closedWriter.write({ jsonrpc: '2.0', id: 8, result: {} });
    gone.output.destroy();
    expect(await dropped).toBe(true);
    await closedWriter.flushed();
    expect(gone.writes.map((write) => write.text).join('')).not.toContain('"id":8');
  });

  it('remembers the progress tokens of at most MAX_TRACKED_PROGRESS_TOKENS requests, forgetting the oldest', async () => {
    const { output, writes } = recordingOutput();
    const writer = createMessageWriter(output, () => undefined);
    for (let id = 0; id <= MAX_TRACKED_PROGRESS_TOKENS; id++) writer.expectProgress(id, `t${id}`);
    for (const id of [0, 1]) void writer.write({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: `t${id}`, progress: 1 } });
    const before = writes.length;
    const forgotten = writer.write({ jsonrpc: '2.0', id: 0, result: {} }); // request 0 was forgotten: no wait
    const remembered = writer.write({ jsonrpc: '2.0', id: 1, result: {} });
    await forgotten;
    await new Promise((resolve) => setImmediate(resolve));
    const afterTurn = writes
      .slice(before)
      .map((write) => write.text)
      .join('');
    expect(afterTurn).toContain('"id":0');
    expect(afterTurn).not.toContain('"id":1,');
    await remembered;
    await writer.flushed();
  });

  it('writes the first line of an event-loop turn at once, alone (a sequential client waits for nothing else)', () => {
    const { output, writes } = recordingOutput();
    const writer = createMessageWriter(output, () => undefined);
    void writer.write({ jsonrpc: '2.0', id: 1, result: {} });
    // No callback has run since: the line reached the stream inside write().
    expect(writes.map((write) => write.text)).toEqual(['{"jsonrpc":"2.0","id":1,"result":{}}\n']);
    // A server's own bytes (a Buffer) go out with their newline in the same single write.
    const other = recordingOutput();
    const bytesWriter = createMessageWriter(other.output, () => undefined);
    void bytesWriter.write({ jsonrpc: '2.0', id: 2, result: {} }, Buffer.from('{"jsonrpc":"2.0","id":2,"result":{}}'));
    expect(other.writes.map((write) => write.text)).toEqual(['{"jsonrpc":"2.0","id":2,"result":{}}\n']);
  });

  it("writes a short line of the server's bytes as one buffer with its newline, and a long one uncopied with the newline in one writev", () => {
    const calls: { kind: 'write' | 'writev'; pieces: Buffer[] }[] = [];
    const output = new Writable({
      writev(chunks, callback) {
        calls.push({ kind: 'writev', pieces: chunks.map(({ chunk }) => chunk as Buffer) });
        callback();
      },
      write(chunk: Buffer, _encoding, callback) {
        calls.push({ kind: 'write', pieces: [chunk] });
        callback();
      },
    });
    const short = Buffer.from('{"jsonrpc":"2.0","id":1,"result":{}}');
    void createMessageWriter(output, () => undefined).write({ jsonrpc: '2.0', id: 1, result: {} }, short);
    const long = Buffer.from(`{"jsonrpc":"2.0","id":2,"result":{"text":"${'x'.repeat(COPIED_LINE_MAX_BYTES)}"}}`);
    void createMessageWriter(output, () => undefined).write({ jsonrpc: '2.0', id: 2 }, long);
    expect(calls.map((call) => call.kind)).toEqual(['write', 'writev']);
    expect(calls[0]!.pieces[0]!.toString()).toBe(`${short.toString()}\n`);
    // The long line's own buffer reaches the stream: no copy of it is made.
    expect(calls[1]!.pieces[0]).toBe(long);
    expect(Buffer.concat(calls[1]!.pieces).toString()).toBe(`${long.toString()}\n`);
  });

  it('writes the lines after the first of a turn from different callbacks of one event-loop phase in one batch (replies finishing together on different connections)', async () => {
    const { output, writes } = recordingOutput();
    const writer = createMessageWriter(output, () => undefined);
    // Immediates queued together run in one check phase, each a callback of its own (as sockets'
    // reads are callbacks of one poll phase); the batch ends at the next check phase.
    const written = await Promise.all(
      [1, 2, 3].map((id) => new Promise<boolean>((resolve) => setImmediate(() => resolve(writer.write({ jsonrpc: '2.0', id, result: {} }))))),
    );
    expect(written).toEqual([true, true, true]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes.map((write) => write.text)).toEqual([
      '{"jsonrpc":"2.0","id":1,"result":{}}\n',
      '{"jsonrpc":"2.0","id":2,"result":{}}\n{"jsonrpc":"2.0","id":3,"result":{}}\n',
    ]);
  });

  it('writes a response with no progress before it in the same turn at once, not held back behind the other lines', async () => {
    const { output, writes } = recordingOutput();
    const writer = createMessageWriter(output, () => undefined);
    await Promise.all([writer.write({ jsonrpc: '2.0', method: 'notifications/message', params: {} }), writer.write({ jsonrpc: '2.0', id: 2, result: {} })]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes.map((write) => write.text).join('')).toBe(
      '{"jsonrpc":"2.0","method":"notifications/message","params":{}}\n{"jsonrpc":"2.0","id":2,"result":{}}\n',
    );
  });
});

/** A stream that records each write (or batch of corked writes) with the time it reached it. */
function recordingOutput(): { output: Writable; writes: { at: number; text: string }[] } {
  const writes: { at: number; text: string }[] = [];
  const output = new Writable({
    writev(chunks, callback) {
      writes.push({ at: performance.now(), text: chunks.map(({ chunk }) => String(chunk)).join('') });
      callback();
    },
    write(chunk: Buffer, _encoding, callback) {
      writes.push({ at: performance.now(), text: String(chunk) });
      callback();
    },
  });
  return { output, writes };
}
