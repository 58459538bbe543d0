import { describe, expect, it } from 'vitest';
import { BODY_QUEUE_HIGH_WATER_BYTES, BodyQueue, BodyReleasedError } from '../../../src/http/body-queue.js';
import type { Dispatcher } from '../../../src/http/undici-parts.js';

/** Stands in for undici's dispatch controller: a plain record of what the queue asked of it. */
class RecordingController implements Dispatcher.DispatchController {
  paused = false;
  aborted = false;
  reason: Error | null = null;
  readonly calls: string[] = [];
  pause(): void {
    this.paused = true;
    this.calls.push('pause');
  }
  resume(): void {
    this.paused = false;
    this.calls.push('resume');
  }
  abort(reason: Error): void {
    this.aborted = true;
    this.reason = reason;
    this.calls.push('abort');
  }
}

const kib = (n: number) => Buffer.alloc(n * 1024, 0x61);

async function readAll(body: BodyQueue): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

describe('BodyQueue', () => {
  it('shows the whole body once it ended and before anything was read; nothing while open, after a read, a release or a failure', async () => {
    const body = new BodyQueue();
    body.push(Buffer.from('one '));
    expect(body.arrived()).toBeUndefined();
    body.push(Buffer.from('two'));
    body.end();
    expect(Buffer.concat(body.arrived() ?? []).toString()).toBe('one two');
    // Looking takes nothing: the reader still gets it all.
    expect((await readAll(body)).toString()).toBe('one two');
    expect(body.arrived()).toBeUndefined();

    const released = new BodyQueue();
    released.push(Buffer.from('x'));
    released.end();
    released.destroy();
    expect(released.arrived()).toBeUndefined();

    const failed = new BodyQueue();
    failed.push(Buffer.from('x'));
    failed.fail(new Error('reset'));
    failed.end();
    expect(failed.arrived()).toBeUndefined();
  });

  it('hands queued chunks to the reader in order, then ends', async () => {
    const body = new BodyQueue();
    body.push(Buffer.from('one '));
    body.push(Buffer.from('two'));
    body.end();
    expect(body.ended).toBe(true);
    expect((await readAll(body)).toString()).toBe('one two');
  });

  it('hands a chunk straight to a reader already waiting, and ends a waiting reader', async () => {
    const body = new BodyQueue();
    const iterator = body[Symbol.asyncIterator]();
    const first = iterator.next();
    body.push(Buffer.from('direct'));
    expect((await first).value?.toString()).toBe('direct');
    const last = iterator.next();
    body.end();
    expect(await last).toEqual({ value: undefined, done: true });
  });

  it('pauses the socket above the high-water mark and resumes once the reader took it below half', async () => {
    const body = new BodyQueue();
    const controller = new RecordingController();
    body.attach(controller);
    const chunkKib = 16;
    const count = BODY_QUEUE_HIGH_WATER_BYTES / (chunkKib * 1024) + 1; // one chunk over the mark
    for (let i = 0; i < count - 1; i++) body.push(kib(chunkKib));
    expect(controller.paused).toBe(false); // exactly at the mark: not above it
    body.push(kib(chunkKib));
    expect(controller.calls).toEqual(['pause']);

    const iterator = body[Symbol.asyncIterator]();
    await iterator.next(); // 4 chunks left: 64 KiB, above half
    await iterator.next(); // 48 KiB
    expect(controller.paused).toBe(true);
    await iterator.next(); // 32 KiB: half the mark
    expect(controller.calls).toEqual(['pause', 'resume']);
    await iterator.next(); // already resumed: not resumed twice
    expect(controller.calls).toEqual(['pause', 'resume']);
  });

  it('never pauses when no controller is attached yet', async () => {
    const body = new BodyQueue();
    body.push(kib(BODY_QUEUE_HIGH_WATER_BYTES / 1024 + 1));
    body.end();
    expect((await readAll(body)).length).toBe(BODY_QUEUE_HIGH_WATER_BYTES + 1024);
  });

  it('rejects the waiting reader with the failure and drops what was queued', async () => {
    const body = new BodyQueue();
    const iterator = body[Symbol.asyncIterator]();
    const waiting = iterator.next();
    const failure = new Error('socket hang up');
    body.fail(failure);
    await expect(waiting).rejects.toBe(failure);
    body.push(Buffer.from('after the failure'));
    await expect(iterator.next()).rejects.toBe(failure);
    expect(body.ended).toBe(false);
  });

  it('keeps the first failure and ignores a failure after a fully read end', async () => {
    const body = new BodyQueue();
    body.push(Buffer.from('queued'));
    const first = new Error('first');
    body.fail(first);
    body.fail(new Error('second'));
    await expect(body[Symbol.asyncIterator]().next()).rejects.toBe(first);

    const ended = new BodyQueue();
    ended.end();
    ended.fail(new Error('too late'));
    expect(ended.ended).toBe(true);
    expect(await readAll(ended)).toEqual(Buffer.alloc(0));
  });

  it('fails a body that ended with bytes still queued (the reader would otherwise see a truncated end)', async () => {
    const body = new BodyQueue();
    body.push(Buffer.from('unread'));
    body.end();
    const failure = new Error('decoder failed');
    body.fail(failure);
    expect(body.ended).toBe(false);
    await expect(readAll(body)).rejects.toBe(failure);
  });

  it('destroyed before its end: the reader gets BodyReleasedError and the exchange is aborted once', async () => {
    const body = new BodyQueue();
    const controller = new RecordingController();
    body.attach(controller);
    const waiting = body[Symbol.asyncIterator]().next();
    body.destroy();
    await expect(waiting).rejects.toBeInstanceOf(BodyReleasedError);
    await expect(waiting).rejects.toMatchObject({ code: 'ERR_STREAM_PREMATURE_CLOSE' });
    expect(controller.reason).toBeInstanceOf(BodyReleasedError);
    body.destroy();
    expect(controller.calls).toEqual(['abort']);
  });

  it('destroyed before its end and before undici attached a controller, only fails the reader', async () => {
    const body = new BodyQueue();
    body.push(Buffer.from('partial'));
    body.destroy();
    await expect(readAll(body)).rejects.toBeInstanceOf(BodyReleasedError);
  });

  it('destroyed after its end: queued bytes are dropped, the exchange is not aborted', async () => {
    const body = new BodyQueue();
    const controller = new RecordingController();
    body.attach(controller);
    body.push(Buffer.from('never read'));
    body.end();
    body.destroy();
    expect(controller.calls).toEqual([]);
    expect(body.ended).toBe(true);
    expect(await readAll(body)).toEqual(Buffer.alloc(0));
  });

  it('does not abort a controller that undici already aborted', () => {
    const body = new BodyQueue();
    const controller = new RecordingController();
    controller.aborted = true;
    body.attach(controller);
    body.destroy();
    expect(controller.calls).toEqual([]);
  });

  it('lets go of the body when the reader stops early (break)', async () => {
    const body = new BodyQueue();
    const controller = new RecordingController();
    body.attach(controller);
    body.push(Buffer.from('first'));
    body.push(Buffer.from('second'));
    for await (const chunk of body) {
      expect(chunk.toString()).toBe('first');
      break;
    }
    expect(controller.calls).toEqual(['abort']);
    expect(controller.reason).toBeInstanceOf(BodyReleasedError);
  });

  it('return() on the iterator resolves done', async () => {
    const body = new BodyQueue();
    const iterator = body[Symbol.asyncIterator]();
    expect(await iterator.return!()).toEqual({ value: undefined, done: true });
  });
});
