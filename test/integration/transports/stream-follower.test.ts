import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { followRequestStream } from '../../../src/transports/stream-follower.js';
import { InFlight } from '../../../src/pipeline/in-flight.js';
import type { StreamItem } from '../../../src/http/reply-reader.js';
import { useRouteServer, type Handler } from '../../helpers/route-server.js';
import { Backoff, RECONNECT_DELAY_MAX_MS, RECONNECT_DELAY_MIN_MS } from '../../../src/http/reconnect-backoff.js';
import { toBridgeError } from '../../../src/http/failures.js';
import { type HttpExchange } from '../../../src/http/send.js';

// 2025-11-25 Streamable HTTP §Resumability: the client MUST respect a server's `retry`; the floor
// keeps a server that ends every stream at once from turning reconnection into a busy loop.
describe('Backoff', () => {
  it('starts at the floor and doubles it on each attempt without progress', () => {
    const backoff = new Backoff();
    expect([backoff.next(undefined), backoff.next(undefined), backoff.next(0)]).toEqual([
      RECONNECT_DELAY_MIN_MS,
      RECONNECT_DELAY_MIN_MS * 2,
      RECONNECT_DELAY_MIN_MS * 4,
    ]);
  });

  it('waits the server’s retry when it is above the floor', () => {
    const backoff = new Backoff();
    expect(backoff.next(RECONNECT_DELAY_MIN_MS + 1234)).toBe(RECONNECT_DELAY_MIN_MS + 1234);
  });

  it('never waits less than the floor, even when the server asks for retry: 0', () => {
    const backoff = new Backoff();
    backoff.next(0);
    expect(backoff.next(0)).toBe(RECONNECT_DELAY_MIN_MS * 2);
  });

  it('caps both the server’s retry and the doubled floor at RECONNECT_DELAY_MAX_MS', () => {
    const backoff = new Backoff();
    expect(backoff.next(RECONNECT_DELAY_MAX_MS * 10)).toBe(RECONNECT_DELAY_MAX_MS);
    let last = 0;
    for (let attempt = 0; attempt < 20; attempt++) last = backoff.next(undefined);
    expect(last).toBe(RECONNECT_DELAY_MAX_MS);
  });

  it('starts from the floor again once a real message arrived', () => {
    const backoff = new Backoff();
    for (let attempt = 0; attempt < 5; attempt++) backoff.next(undefined);
    backoff.progressed();
    expect(backoff.next(undefined)).toBe(RECONNECT_DELAY_MIN_MS);
    expect(backoff.next(undefined)).toBe(RECONNECT_DELAY_MIN_MS * 2);
  });
});

describe('followRequestStream', () => {
  const routes = useRouteServer();
  const open = (handler: Handler, signal: AbortSignal): Promise<HttpExchange> => routes.exchange(handler, { method: 'GET', signal });
  const eventStream =
    (text: string): Handler =>
    (_req, res) =>
      res.writeHead(200, { 'content-type': 'text/event-stream' }).end(text);

  function recordingLogger() {
    const lines: { msg: string; data?: string }[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(JSON.parse(chunk.toString()) as { msg: string });
        callback();
      },
    });
    return { logger: pino({ level: 'debug' }, sink), lines };
  }

  async function follow(first: Handler, options: { resumable: boolean; resume?: Handler; answerId?: number }) {
    const inFlight = new InFlight({ write: () => Promise.resolve(true), requestTimeoutMs: 0 });
    const pending = inFlight.begin(1, 'tools/call', 'legacy', { deadline: false })!;
    const { logger, lines } = recordingLogger();
    const items: StreamItem[] = [];
    const resumes: string[] = [];
    const url = new URL('http://127.0.0.1/');
    const run = followRequestStream({
      pending,
      redact: (text) => text,
      first: await open(first, pending.signal),
      read: { maxMessageBytes: 1024 * 1024 },
      idleTimeoutMs: 0,
      resumable: options.resumable,
      onMessage: (item) => {
        items.push(item);
        const message = item.message as { id?: unknown };
        return Promise.resolve(message.id === (options.answerId ?? 1) ? 'answered' : 'continue');
      },
      resume: (lastEventId, signal) => (resumes.push(lastEventId), open(options.resume ?? eventStream(''), signal)),
      failure: (error, signal) => toBridgeError(error, signal, { url }),
      logger,
    });
    return { run, items, resumes, lines };
  }

  it('resolves once the response arrived, skipping (and logging) an event that is not JSON', async () => {
    const { run, items, lines } = await follow(eventStream('data: {not json\n\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n'), { resumable: true });
    await run;
    expect(items.map((item) => item.message)).toEqual([{ jsonrpc: '2.0', id: 1, result: {} }]);
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'an event in the stream is not JSON; skipped', data: '{not json' }));
  });

  it('loses the request of a stream that cannot be resumed when it ends without the response', async () => {
    const { run } = await follow(eventStream('id: e1\ndata: {"jsonrpc":"2.0","method":"notifications/progress"}\n\n'), { resumable: false });
    await expect(run).rejects.toMatchObject({
      code: 'REMOTE_STREAM_ENDED',
      context: { status: 200, lastEventId: 'e1', hint: expect.stringContaining('send it again') },
    });
  });

  it('fails with REMOTE_STREAM_ENDED naming the status and body when resuming is refused', async () => {
    const { run, resumes } = await follow(eventStream('id: e7\ndata: {"jsonrpc":"2.0","method":"notifications/progress"}\n\n'), {
      resumable: true,
      resume: (_req, res) => res.writeHead(404, { 'content-type': 'text/plain' }).end('no such stream'),
    });
    await expect(run).rejects.toMatchObject({
      code: 'REMOTE_STREAM_ENDED',
      message: expect.stringContaining('resuming it failed with HTTP 404'),
      context: { status: 404, bodyExcerpt: 'no such stream', lastEventId: 'e7' },
    });
    expect(resumes).toEqual(['e7']);
  });

  it('fails with an empty excerpt when the resumption is answered with a 2xx that is no event stream', async () => {
    const { run } = await follow(eventStream('id: e8\ndata: {"jsonrpc":"2.0","method":"notifications/progress"}\n\n'), {
      resumable: true,
      resume: (_req, res) => res.writeHead(202).end(),
    });
    await expect(run).rejects.toMatchObject({ code: 'REMOTE_STREAM_ENDED', context: { status: 202, bodyExcerpt: '' } });
  });

  it('resumes a stream cut after an event id, and resolves with the response from the resumption', async () => {
    const { run, resumes, items } = await follow(eventStream('id: e2\ndata: {"jsonrpc":"2.0","method":"notifications/progress"}\n\n'), {
      resumable: true,
      resume: eventStream('id: e3\ndata: {"jsonrpc":"2.0","id":1,"result":{"resumed":true}}\n\n'),
    });
    await run;
    expect(resumes).toEqual(['e2']);
    expect(items.at(-1)!.message).toEqual({ jsonrpc: '2.0', id: 1, result: { resumed: true } });
  });
});
