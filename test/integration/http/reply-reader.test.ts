import { gzipSync } from 'node:zlib';
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import {
  ARRIVED_REPLY_MAX_BYTES,
  arrivedJsonLine,
  arrivedStreamItems,
  ERROR_BODY_MAX_BYTES,
  LARGE_REPLY_BYTES,
  readErrorBody,
  readPrivateResponse,
  readReply,
  type StreamItem,
} from '../../../src/http/reply-reader.js';
import { useRouteServer, type Handler } from '../../helpers/route-server.js';
import { type HttpExchange } from '../../../src/http/send.js';
import { headerValue, mediaTypeOf, retryAfterMs } from '../../../src/http/header-values.js';
import { singleLineBytes } from '../../../src/http/body-text.js';

const routes = useRouteServer();
/** Registers `handler` under a fresh path and POSTs there. */
const exchangeWith = (handler: Handler, signal?: AbortSignal): Promise<HttpExchange> => routes.exchange(handler, signal === undefined ? {} : { signal });

const plain = { maxMessageBytes: 1024, signal: undefined };

describe('readErrorBody', () => {
  it('returns the text of an HTTP error body', async () => {
    const exchange = await exchangeWith((_req, res) => res.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad gateway</h1>'));
    expect(await readErrorBody(exchange)).toBe('<h1>Bad gateway</h1>');
  });

  it('returns the text of a 2xx with an unexpected content type', async () => {
    const exchange = await exchangeWith((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('hello'));
    expect(await readErrorBody(exchange)).toBe('hello');
  });

  it('returns nothing for a JSON success, and nothing (never throws) for a body it cannot decode', async () => {
    const json = await exchangeWith((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
    expect(await readErrorBody(json)).toBe('');
    const encoded = await exchangeWith((_req, res) => res.writeHead(500, { 'content-encoding': 'zstd' }).end('????'));
    expect(await readErrorBody(encoded)).toBe('');
  });

  it('keeps at most ERROR_BODY_MAX_BYTES of a long error body', async () => {
    // The cut falls after a space: everything before it is kept.
    const exchange = await exchangeWith((_req, res) => res.writeHead(500, { 'content-type': 'text/plain' }).end('x y '.repeat(ERROR_BODY_MAX_BYTES)));
    expect((await readErrorBody(exchange)).length).toBe(ERROR_BODY_MAX_BYTES);
  });

  it('ends a body cut at ERROR_BODY_MAX_BYTES before the word the cut fell inside, which no mask could recognise', async () => {
    const exchange = await exchangeWith((_req, res) =>
      res.writeHead(500, { 'content-type': 'text/plain' }).end(`${'x '.repeat(ERROR_BODY_MAX_BYTES / 2 - 4)}tok-0123456789abcdef`),
    );
    const text = await readErrorBody(exchange);
    expect(text.length).toBe(ERROR_BODY_MAX_BYTES - 8);
    expect(text.endsWith('x ')).toBe(true);
  });
});

describe('readPrivateResponse', () => {
  it('rejects with REMOTE_HTTP_STATUS and a short excerpt when the server answers with an HTTP error', async () => {
    const exchange = await exchangeWith((_req, res) => res.writeHead(401, { 'content-type': 'text/plain' }).end('  token\n expired  '));
    await expect(readPrivateResponse(exchange, 'own-1', { maxMessageBytes: 1024, mask: (text) => text })).rejects.toMatchObject({
      code: 'REMOTE_HTTP_STATUS',
      context: { status: 401, bodyExcerpt: 'token expired' },
    });
  });

  it('finds its response in an event stream among other messages, and skips a server request with the same id', async () => {
    const exchange = await exchangeWith((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"jsonrpc":"2.0","id":"own-2","method":"sampling/createMessage","params":{}}\n\n');
      res.end('data: {"jsonrpc":"2.0","id":"own-2","result":{"found":true}}\n\n');
    });
    expect(await readPrivateResponse(exchange, 'own-2', { maxMessageBytes: 1024, mask: (text) => text })).toEqual({
      jsonrpc: '2.0',
      id: 'own-2',
      result: { found: true },
    });
  });

  it('rejects with REMOTE_BAD_REPLY when an event stream ends without its response', async () => {
    const exchange = await exchangeWith((_req, res) =>
      res.writeHead(200, { 'content-type': 'text/event-stream' }).end('data: {"jsonrpc":"2.0","id":"other","result":{}}\n\n'),
    );
    await expect(readPrivateResponse(exchange, 'own-3', { maxMessageBytes: 1024, mask: (text) => text })).rejects.toMatchObject({ code: 'REMOTE_BAD_REPLY' });
  });
});

describe('readReply', () => {
  it('accepts a 202 and drains its body', async () => {
    const exchange = await exchangeWith((_req, res) => res.writeHead(202).end('ignored'));
    expect(await readReply(exchange, plain)).toEqual({ kind: 'accepted', status: 202 });
    expect(exchange.body.ended).toBe(true);
  });

  it('accepts any 2xx when no reply body is expected', async () => {
    const exchange = await exchangeWith((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"unused":true}'));
    expect(await readReply(exchange, { ...plain, acceptAny2xx: true })).toEqual({ kind: 'accepted', status: 200 });
  });

  it('reports a redirect with its Location and drains the body', async () => {
    const exchange = await exchangeWith((_req, res) => res.writeHead(307, { location: '/elsewhere' }).end('moved'));
    expect(await readReply(exchange, plain)).toEqual({ kind: 'redirect', status: 307, location: '/elsewhere' });
  });

  // A 401/403 renewal needs the challenge (authorization §Error Handling).
  it('carries the WWW-Authenticate challenge of an HTTP error', async () => {
    const challenge = 'Bearer error="insufficient_scope", scope="tasks:write"';
    const exchange = await exchangeWith((_req, res) => res.writeHead(403, { 'www-authenticate': challenge }).end('forbidden'));
    expect(await readReply(exchange, plain)).toEqual({ kind: 'http-error', status: 403, text: 'forbidden', parsed: undefined, wwwAuthenticate: challenge });
    const undecodable = await exchangeWith((_req, res) => res.writeHead(401, { 'www-authenticate': 'Bearer', 'content-encoding': 'x-unknown' }).end('?'));
    expect(await readReply(undecodable, plain)).toMatchObject({ kind: 'http-error', status: 401, wwwAuthenticate: 'Bearer' });
  });

  it('parses the JSON of an HTTP error body when there is one', async () => {
    const exchange = await exchangeWith((_req, res) =>
      res.writeHead(400, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad"}}'),
    );
    expect(await readReply(exchange, plain)).toMatchObject({ kind: 'http-error', status: 400, parsed: { error: { code: -32600 } } });
  });

  it('reads a chunked JSON body (no Content-Length) and a gzip-encoded one', async () => {
    const chunked = await exchangeWith((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
      res.write('{"a":');
      res.end('1}');
    });
    expect(await readReply(chunked, plain)).toMatchObject({ kind: 'json', value: { a: 1 } });
    const undecodable = await exchangeWith((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(gzipSync('{"b":2}')),
    );
    expect(await readReply(undecodable, plain)).toMatchObject({ kind: 'json', value: { b: 2 } });
  });

  it('refuses a JSON body above maxMessageBytes, declared or counted', async () => {
    const declared = await exchangeWith((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '2000' }).end('x'.repeat(2000)),
    );
    await expect(readReply(declared, plain)).rejects.toMatchObject({ code: 'REPLY_TOO_LARGE', context: { status: 200 } });
    const counted = await exchangeWith((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('x'.repeat(600));
      res.end('x'.repeat(600));
    });
    await expect(readReply(counted, plain)).rejects.toMatchObject({ code: 'REPLY_TOO_LARGE' });
  });

  it('refuses a content encoding it cannot decode', async () => {
    const exchange = await exchangeWith((_req, res) => res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'zstd' }).end('{}'));
    await expect(readReply(exchange, plain)).rejects.toMatchObject({ code: 'REMOTE_BAD_REPLY', message: expect.stringContaining('"zstd"') });
  });

  it('rejects with the reason of a signal that aborted before the read', async () => {
    const exchange = await exchangeWith((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    const reason = new Error('stopped');
    await expect(readReply(exchange, { ...plain, signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
  });

  it('hands only message events to the stream handler, passes retry on, and marks data that is not JSON', async () => {
    const items: StreamItem[] = [];
    const retries: number[] = [];
    const exchange = await exchangeWith((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('id: 1\ndata:\n\nretry: 1500\nevent: ping\ndata: {"x":1}\n\nid: 2\ndata: not json\n\nevent: message\ndata: {"jsonrpc":"2.0","method":"n"}\n\n');
    });
    const reply = await readReply(exchange, {
      ...plain,
      stream: { lingerMs: 0, idleTimeoutMs: 0, onRetry: (ms) => retries.push(ms), onItem: (item) => (items.push(item), Promise.resolve('continue')) },
    });
    expect(reply).toEqual({ kind: 'stream', status: 200, answered: false });
    expect(retries).toEqual([1500]);
    expect(items).toEqual([
      { message: undefined, eventId: '1' }, // a priming event: only its id
      { message: undefined, eventId: undefined }, // event type "ping" carries no MCP message
      { message: undefined, eventId: '2', data: 'not json', unparsed: true },
      // Each item carries the id its own event set; the reader keeps the last one (event-stream.ts).
      { message: { jsonrpc: '2.0', method: 'n' }, eventId: undefined, data: '{"jsonrpc":"2.0","method":"n"}' },
    ]);
  });

  it('gives up a stream that sends nothing for idleTimeoutMs with STREAM_IDLE_TIMEOUT', async () => {
    const exchange = await exchangeWith((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': still here\n\n'); // then silence
    });
    await expect(
      readReply(exchange, { ...plain, stream: { lingerMs: 0, idleTimeoutMs: 100, onItem: () => Promise.resolve('continue') } }),
    ).rejects.toMatchObject({ code: 'STREAM_IDLE_TIMEOUT' });
  });

  it('counts idleTimeoutMs from the last chunk: comments more often than that keep a stream open past its first deadline', async () => {
    const exchange = await exchangeWith((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      // Six comments 40 ms apart (240 ms in all, more than twice the 100 ms limit), then the answer.
      let comments = 0;
      const timer = setInterval(() => {
        if (++comments <= 6) {
          res.write(': still here\n\n');
          return;
        }
        clearInterval(timer);
        res.end('data: {"jsonrpc":"2.0","id":1,"result":{}}\n\n');
      }, 40);
    });
    const reply = await readReply(exchange, { ...plain, stream: { lingerMs: 0, idleTimeoutMs: 100, onItem: () => Promise.resolve('answered') } });
    expect(reply).toMatchObject({ kind: 'stream', answered: true });
  });

  it('after the answer, reads the rest of the stream and drops it', async () => {
    const seen: unknown[] = [];
    const exchange = await exchangeWith((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"jsonrpc":"2.0","id":1,"result":{}}\n\n');
      setImmediate(() => res.end('data: {"jsonrpc":"2.0","method":"after"}\n\n'));
    });
    const reply = await readReply(exchange, {
      ...plain,
      stream: { lingerMs: 5_000, idleTimeoutMs: 0, onItem: (item) => (seen.push(item.message), Promise.resolve('answered')) },
    });
    expect(reply).toEqual({ kind: 'stream', status: 200, answered: true });
    expect(seen).toEqual([{ jsonrpc: '2.0', id: 1, result: {} }]);
    expect(exchange.body.ended).toBe(true);
  });
});

describe('readReply of a large JSON body with scanLarge', () => {
  const scanned = { maxMessageBytes: 8 * LARGE_REPLY_BYTES, signal: undefined, scanLarge: true };
  const bulk = 'y'.repeat(LARGE_REPLY_BYTES);
  const jsonBody = (text: string) => (_req: unknown, res: ServerResponse) => res.writeHead(200, { 'content-type': 'application/json' }).end(text);

  it('gives the trimmed bytes as the line and a value whose large members decode when read', async () => {
    const text = ` {"id":1,"__proto__":{"p":true},"result":{"text":"${bulk}"},"id":"later"}\t`;
    const reply = await readReply(await exchangeWith(jsonBody(text)), scanned);
    expect(reply.kind === 'json' && reply.line?.toString()).toBe(text.trim());
    const value = (reply as { value: Record<string, unknown> }).value;
    expect(Object.keys(value)).toEqual(['id', '__proto__', 'result']);
    // Nothing decoded the large member yet: it is still the accessor that decodes it on first read.
    expect('get' in (Object.getOwnPropertyDescriptor(value, 'result') ?? {})).toBe(true);
    expect(value.id).toBe('later');
    expect(Object.getOwnPropertyDescriptor(value, '__proto__')?.value).toEqual({ p: true });
    expect(JSON.stringify(value)).toBe(JSON.stringify(JSON.parse(text)));
    value.result = 'replaced';
    expect(value.result).toBe('replaced');
  });

  it('parses the body as before when it is not one line, not valid UTF-8, not an object, or has a key too long to decode', async () => {
    const longKey = 'k'.repeat(70 * 1024);
    for (const text of [`{"a":\n"${bulk}"}`, `["${bulk}"]`, `{"${longKey}":"${bulk}"}`]) {
      const reply = await readReply(await exchangeWith(jsonBody(text)), scanned);
      expect(reply).toMatchObject({ kind: 'json', value: JSON.parse(text) });
      expect(reply.kind === 'json' && reply.line).toBe(undefined);
    }
    const invalid = Buffer.concat([Buffer.from(`{"a":"${bulk}`), Buffer.from([0xff]), Buffer.from('"}')]);
    const reply = await readReply(await exchangeWith((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(invalid)), scanned);
    expect(reply).toMatchObject({ kind: 'json', value: { a: `${bulk}\ufffd` } });
  });

  it('still refuses a body past maxMessageBytes, with or without a Content-Length', async () => {
    const text = `{"result":"${bulk}${bulk}"}`;
    const limited = { ...scanned, maxMessageBytes: LARGE_REPLY_BYTES + LARGE_REPLY_BYTES / 2 };
    await expect(readReply(await exchangeWith(jsonBody(text)), limited)).rejects.toMatchObject({ code: 'REPLY_TOO_LARGE' });
    const chunked = await exchangeWith((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(text.slice(0, 1000));
      setImmediate(() => res.end(text.slice(1000)));
    });
    await expect(readReply(chunked, limited)).rejects.toMatchObject({ code: 'REPLY_TOO_LARGE' });
  });

  it('does not decode a body the scan proved not JSON', async () => {
    const reply = await readReply(await exchangeWith(jsonBody(`{"a":"${bulk}",}`)), scanned);
    expect(reply).toMatchObject({ kind: 'json', value: undefined });
  });

  it('scans a body without a Content-Length once it grows past LARGE_REPLY_BYTES', async () => {
    const text = `{"result":"${bulk}"}`;
    const reply = await readReply(
      await exchangeWith((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write(text.slice(0, 1000));
        setImmediate(() => res.end(text.slice(1000)));
      }),
      scanned,
    );
    expect(reply.kind === 'json' && reply.line?.length).toBe(text.length);
  });
});

describe('readReply back-pressure', () => {
  /** A consumer that is full on every other chunk: reading must wait for it each time. */
  const pacedRoom = () => {
    let calls = 0;
    let waits = 0;
    const room = () => (++calls % 2 === 0 ? (waits++, new Promise<void>((resolve) => setImmediate(resolve))) : undefined);
    return { room, waits: () => waits, calls: () => calls };
  };
  const chunkedWrites = (res: ServerResponse, contentType: string, parts: string[], headers: Record<string, string> = {}) => {
    res.writeHead(200, { 'content-type': contentType, ...headers });
    const next = () => {
      const part = parts.shift();
      if (part === undefined) res.end();
      else res.write(part, () => setImmediate(next));
    };
    next();
  };

  it('waits for room between chunks of a JSON body with a Content-Length', async () => {
    const paced = pacedRoom();
    const parts = ['{"a":"', 'x'.repeat(100), '"}'];
    const length = String(parts.join('').length);
    const exchange = await exchangeWith((_req, res) => chunkedWrites(res, 'application/json', parts, { 'content-length': length }));
    expect(await readReply(exchange, { ...plain, room: paced.room })).toMatchObject({ kind: 'json', value: { a: 'x'.repeat(100) } });
    expect(paced.calls()).toBeGreaterThanOrEqual(1);
  });

  it('waits for room between chunks of a chunked JSON body and of an event stream', async () => {
    const json = pacedRoom();
    const chunked = await exchangeWith((_req, res) => chunkedWrites(res, 'application/json', ['[1,', '2,', '3]']));
    expect(await readReply(chunked, { ...plain, room: json.room })).toMatchObject({ kind: 'json', value: [1, 2, 3] });
    expect(json.calls()).toBeGreaterThanOrEqual(2);
    expect(json.waits()).toBeGreaterThanOrEqual(1);

    const sse = pacedRoom();
    const seen: unknown[] = [];
    const stream = await exchangeWith((_req, res) => chunkedWrites(res, 'text/event-stream', ['data: {"n":1}\n\n', 'data: {"n":2}\n\n', 'data: {"n":3}\n\n']));
    const reply = await readReply(stream, {
      ...plain,
      room: sse.room,
      stream: { lingerMs: 0, idleTimeoutMs: 0, onItem: (item) => (seen.push(item.message), Promise.resolve('continue')) },
    });
    expect(reply).toMatchObject({ kind: 'stream', answered: false });
    expect(seen).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(sse.calls()).toBeGreaterThanOrEqual(2);
  });

  it('stops draining an accepted body past ERROR_BODY_MAX_BYTES', async () => {
    const exchange = await exchangeWith((_req, res) => {
      res.writeHead(202);
      res.write(Buffer.alloc(ERROR_BODY_MAX_BYTES + 1));
      // The rest never comes: the read must not wait for it.
    });
    expect(await readReply(exchange, plain)).toEqual({ kind: 'accepted', status: 202 });
  });
});

describe('reply helpers', () => {
  it('takes the first of repeated header values, and no media type from an empty Content-Type', () => {
    expect(headerValue({ 'mcp-session-id': ['first', 'second'] }, 'mcp-session-id')).toBe('first');
    expect(mediaTypeOf({ 'content-type': '; charset=utf-8' })).toBeUndefined();
    expect(mediaTypeOf({ 'content-type': 'Text/Event-Stream ; charset=utf-8' })).toBe('text/event-stream');
    expect(mediaTypeOf({})).toBeUndefined();
  });

  it('reads Retry-After as delta-seconds or an HTTP date, and ignores what it cannot read', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMs({ 'retry-after': '3' }, now)).toBe(3000);
    expect(retryAfterMs({ 'retry-after': 'Thu, 01 Jan 2026 00:00:10 GMT' }, now)).toBe(10_000);
    expect(retryAfterMs({ 'retry-after': 'Wed, 31 Dec 2025 00:00:00 GMT' }, now)).toBe(0);
    expect(retryAfterMs({ 'retry-after': 'soon' }, now)).toBeUndefined();
    expect(retryAfterMs({ 'retry-after': ' ' }, now)).toBeUndefined();
    expect(retryAfterMs({}, now)).toBeUndefined();
  });

  it('trims JSON whitespace around a body and refuses one with a newline inside', () => {
    expect(singleLineBytes(Buffer.from(' \r\n{"a":1}\n'))?.toString()).toBe('{"a":1}');
    expect(singleLineBytes(Buffer.from('{"a":\n1}'))).toBeUndefined();
    expect(singleLineBytes(Buffer.from('   '))?.length).toBe(0);
  });
});

describe('arrivedJsonLine', () => {
  /** Sends one request and reads arrivedJsonLine from undici's callback, when the body's last byte arrived. */
  const atArrival = async (handler: Handler, maxBytes = 1024) => {
    let seen: { exchange: HttpExchange; arrived: ReturnType<typeof arrivedJsonLine> } | undefined;
    const exchange = await routes.exchange(handler, {
      onArrived: (arrivedExchange) => (seen = { exchange: arrivedExchange, arrived: arrivedJsonLine(arrivedExchange, maxBytes) }),
    });
    // The exchange is resolved at the headers; the body's end may still be on its way.
    for (let turn = 0; seen === undefined && turn < 100; turn++) await new Promise((resolve) => setImmediate(resolve));
    return { exchange, seen };
  };
  const reply =
    (status: number, type: string, body: string | Buffer, headers: Record<string, string> = {}): Handler =>
    (_req, res) => {
      res.writeHead(status, { 'content-type': type, ...headers });
      res.end(body);
    };

  it('reads a small whole 2xx JSON reply as its trimmed line and value at arrival, and leaves the body to its reader', async () => {
    const { exchange, seen } = await atArrival(reply(200, 'application/json', ' {"jsonrpc":"2.0","id":1,"result":{"ok":true}}\n'));
    // Called with the very exchange the promise resolved with.
    expect(seen?.exchange).toBe(exchange);
    expect(seen?.arrived?.value).toEqual({ jsonrpc: '2.0', id: 1, result: { ok: true } });
    expect(seen?.arrived?.line.toString()).toBe('{"jsonrpc":"2.0","id":1,"result":{"ok":true}}');
    const read = await readReply(exchange, plain);
    expect(read).toMatchObject({ kind: 'json', value: { jsonrpc: '2.0', id: 1, result: { ok: true } } });
    // Taken by its reader, the body is no longer there to look at.
    expect(arrivedJsonLine(exchange, 1024)).toBeUndefined();
  });

  it('leaves every other reply to readReply: no answer, an error status, another type, an encoding, too large, several lines, not UTF-8, not JSON, empty', async () => {
    const json = '{"jsonrpc":"2.0","id":1,"result":{}}';
    const others: [string, Handler, number?][] = [
      ['202', reply(202, 'application/json', json)],
      ['204', (_req, res) => res.writeHead(204).end()],
      ['400', reply(400, 'application/json', json)],
      ['text/plain', reply(200, 'text/plain', json)],
      ['gzip', reply(200, 'application/json', gzipSync(json), { 'content-encoding': 'gzip' })],
      ['over maxBytes', reply(200, 'application/json', json), json.length - 1],
      [
        "over ARRIVED_REPLY_MAX_BYTES (still under the body queue's high-water mark, so it arrives whole)",
        reply(200, 'application/json', `{"jsonrpc":"2.0","id":1,"result":"${'x'.repeat(ARRIVED_REPLY_MAX_BYTES)}"}`),
        2 * ARRIVED_REPLY_MAX_BYTES,
      ],
      ['several lines', reply(200, 'application/json', '{"jsonrpc":"2.0",\n"id":1,"result":{}}')],
      ['not UTF-8', reply(200, 'application/json', Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]))],
      ['not JSON', reply(200, 'application/json', '{"jsonrpc":')],
      ['empty', reply(200, 'application/json', '')],
    ];
    for (const [what, handler, maxBytes] of others) {
      const { exchange, seen } = await atArrival(handler, maxBytes);
      expect(seen, what).toBeDefined();
      expect(seen?.arrived, what).toBeUndefined();
      await readReply(exchange, { ...plain, maxMessageBytes: 4 * ARRIVED_REPLY_MAX_BYTES }).catch(() => undefined);
    }
  });
});

describe('arrivedStreamItems', () => {
  /** Sends one request and reads arrivedStreamItems from undici's callback, when the body's last byte arrived. */
  const atArrival = async (handler: Handler, maxBytes = 4096) => {
    let seen: { arrived: ReturnType<typeof arrivedStreamItems> } | undefined;
    const exchange = await routes.exchange(handler, {
      onArrived: (arrivedExchange) => (seen = { arrived: arrivedStreamItems(arrivedExchange, maxBytes) }),
    });
    for (let turn = 0; seen === undefined && turn < 100; turn++) await new Promise((resolve) => setImmediate(resolve));
    return { exchange, seen };
  };
  const stream =
    (body: string | Buffer, status = 200, headers: Record<string, string> = {}): Handler =>
    (_req, res) => {
      res.writeHead(status, { 'content-type': 'text/event-stream', ...headers });
      res.end(body);
    };
  /** Every item readReply's stream reading hands on for the same body, read to its end. */
  const readItems = async (handler: Handler): Promise<StreamItem[]> => {
    const items: StreamItem[] = [];
    const exchange = await routes.exchange(handler);
    await readReply(exchange, {
      ...plain,
      maxMessageBytes: 4096,
      stream: { lingerMs: 0, idleTimeoutMs: 0, onItem: (item) => (items.push(item), Promise.resolve('continue')) },
    });
    return items;
  };

  it('frames a small whole event stream into the very items the stream reader hands on, and leaves the body to its reader', async () => {
    const body = [
      'id: 0\ndata:\n\n',
      ': a comment\nretry: 1000\n\n',
      'event: message\nid: 1\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\n\n',
      'event: ping\ndata: not for the client\n\n',
      'data: {"jsonrpc":"2.0",\ndata: "id":1,"result":{"ok":true}}\n\n',
      // An event the stream ends inside is dropped (HTML §9.2.6: at the end of the stream, no dispatch).
      'data: {"jsonrpc":"2.0","id":1,"result":"the end without a blank line"}',
    ].join('');
    const { exchange, seen } = await atArrival(stream(body));
    expect(seen?.arrived).toEqual(await readItems(stream(body)));
    // The comment and retry make no event; the ping event is handed on without its data.
    expect(seen?.arrived?.map((item) => item.eventId)).toEqual(['0', '1', undefined, undefined]);
    expect(seen?.arrived?.[2]).toEqual({ message: undefined, eventId: undefined });
    expect(seen?.arrived?.[3]).toMatchObject({ message: { id: 1, result: { ok: true } }, data: '{"jsonrpc":"2.0",\n"id":1,"result":{"ok":true}}' });
    // Nothing was taken: the reader still reads every event.
    const read: StreamItem[] = [];
    await readReply(exchange, { ...plain, stream: { lingerMs: 0, idleTimeoutMs: 0, onItem: (item) => (read.push(item), Promise.resolve('continue')) } });
    expect(read).toEqual(seen?.arrived);
  });

  it('marks an event that is not JSON as the reader does, and leaves every other reply to readReply', async () => {
    const { seen } = await atArrival(stream('data: {not json\n\n'));
    expect(seen?.arrived).toEqual([{ message: undefined, eventId: undefined, data: '{not json', unparsed: true }]);
    const event = 'data: {"jsonrpc":"2.0","id":1,"result":{}}\n\n';
    const others: [string, Handler, number?][] = [
      ['400', stream(event, 400)],
      ['application/json', (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":1,"result":{}}')],
      ['gzip', stream(gzipSync(event), 200, { 'content-encoding': 'gzip' })],
      ['empty', stream('')],
      ['an event over maxBytes', stream(event), event.length - 10],
      [
        "over ARRIVED_REPLY_MAX_BYTES (under the body queue's high-water mark, so it arrives whole)",
        stream(`data: "${'x'.repeat(ARRIVED_REPLY_MAX_BYTES)}"\n\n`),
        4 * ARRIVED_REPLY_MAX_BYTES,
      ],
    ];
    for (const [what, handler, maxBytes] of others) {
      const { exchange, seen: other } = await atArrival(handler, maxBytes);
      expect(other, what).toBeDefined();
      expect(other?.arrived, what).toBeUndefined();
      await readReply(exchange, { ...plain, maxMessageBytes: 8 * ARRIVED_REPLY_MAX_BYTES }).catch(() => undefined);
    }
  });
});
