// In-process: a stdin line over LARGE_LINE_BYTES reaches the server as the bytes it came in, and a bad one is answered as a short one is.

import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startInProcessBridge, type InProcessBridge } from '../../helpers/in-process-bridge.js';
import { LARGE_LINE_BYTES } from '../../../src/stdio/line-reader.js';

interface Posted {
  headers: IncomingHttpHeaders;
  raw: Buffer;
}

/** A loopback MCP endpoint (2025-06-18) that keeps every POST body as its raw bytes and answers each request with the size it got. */
async function startRecordingServer(): Promise<{
  url: string;
  posted: Posted[];
  whenPosted(count: number): Promise<void>;
  close(): Promise<void>;
  server: Server;
}> {
  const posted: Posted[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      if (req.method !== 'POST') {
        res.writeHead(405, { allow: 'POST' }).end();
        return;
      }
      posted.push({ headers: req.headers, raw });
      for (const waiter of waiters.filter((w) => posted.length >= w.count)) waiter.resolve();
      const message = JSON.parse(raw.toString('utf8')) as { id?: string | number; method?: string };
      if (message.id === undefined || message.method === undefined) {
        res.writeHead(202).end();
        return;
      }
      const result =
        message.method === 'initialize'
          ? { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'recording', version: '1' } }
          : { bytes: raw.length };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    posted,
    // Bodies are recorded when they have fully arrived: a large one posted first can finish after a small one.
    whenPosted: (count) => (posted.length >= count ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ count, resolve }))),
    server,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Writes `bytes` to stdin in uneven pieces, the way a pipe may cut them. */
function sendInPieces(bridge: InProcessBridge, bytes: Buffer): void {
  const sizes = [1, 7, 65_536, 3, 100_000];
  for (let at = 0, i = 0; at < bytes.length; i++) {
    const size = sizes[i % sizes.length]!;
    bridge.sendRaw(bytes.subarray(at, at + size));
    at += size;
  }
}

/** A string of `chars` characters mixing ASCII, 2-, 3- and 4-byte UTF-8 and escapes. */
function mixedText(chars: number): string {
  const unit = 'aé世🎉\\"\t\u0001/';
  return unit.repeat(Math.ceil(chars / unit.length)).slice(0, chars);
}

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } },
};

describe('a large stdin line', () => {
  let server: Awaited<ReturnType<typeof startRecordingServer>>;
  let bridge: InProcessBridge;

  beforeEach(async () => {
    server = await startRecordingServer();
  });

  afterEach(async () => {
    bridge.kill();
    await bridge.exited;
    await server.close();
  });

  async function startInitialized(args: string[] = []): Promise<void> {
    bridge = startInProcessBridge(['--url', server.url, ...args]);
    bridge.send(INITIALIZE);
    await bridge.reply(0);
    bridge.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  }

  it('reaches the server byte for byte as it came on stdin (whitespace, escapes, multi-byte characters), without its CR, with its Content-Length', async () => {
    await startInitialized();
    const text = ` { "jsonrpc" : "2.0", "id":"big", "method":"tools/call","params":{"name":"upload","arguments":{"blob":${JSON.stringify(mixedText(LARGE_LINE_BYTES))},"note":"\\u00e9"}} }\t`;
    const line = Buffer.from(text);
    expect(line.length).toBeGreaterThan(2 * LARGE_LINE_BYTES);
    sendInPieces(bridge, Buffer.concat([line, Buffer.from('\r\n')]));
    const reply = await bridge.reply('big');
    expect(reply.result).toEqual({ bytes: line.length });
    const post = server.posted.at(-1)!;
    expect(post.raw.equals(line)).toBe(true);
    expect(post.headers['content-length']).toBe(String(line.length));
    expect(post.headers['content-type']).toBe('application/json');
  });

  it('as a notification or as the answer to a server request, reaches the server as it came', async () => {
    await startInitialized();
    const notification = Buffer.from(
      JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: mixedText(LARGE_LINE_BYTES) } }),
    );
    const answer = Buffer.from(
      JSON.stringify({ jsonrpc: '2.0', id: 'server-asked', result: { content: { type: 'text', text: mixedText(LARGE_LINE_BYTES) } } }),
    );
    sendInPieces(bridge, Buffer.concat([notification, Buffer.from('\n'), answer, Buffer.from('\n')]));
    bridge.send({ jsonrpc: '2.0', id: 'after', method: 'ping' });
    await bridge.reply('after');
    // initialize, notifications/initialized, the two large lines and the ping: the two large bodies
    // are still arriving while the ping is answered on a connection of its own.
    await server.whenPosted(5);
    const raws = server.posted.map((post) => post.raw);
    expect(raws.some((raw) => raw.equals(notification))).toBe(true);
    expect(raws.some((raw) => raw.equals(answer))).toBe(true);
  });

  it('sent before the protocol era is known is read whole for the translator and still posted as it came', async () => {
    bridge = startInProcessBridge(['--url', server.url]);
    const line = Buffer.from(
      JSON.stringify({ jsonrpc: '2.0', id: 'early', method: 'tools/call', params: { name: 't', arguments: { blob: mixedText(LARGE_LINE_BYTES) } } }),
    );
    sendInPieces(bridge, Buffer.concat([line, Buffer.from('\n')]));
    expect((await bridge.reply('early')).result).toEqual({ bytes: line.length });
    expect(server.posted.at(-1)!.raw.equals(line)).toBe(true);
  });

  it('calling a tool the filter hides is answered by the bridge and never posted', async () => {
    await startInitialized(['--deny-tools', 'secret_*']);
    bridge.send({ jsonrpc: '2.0', id: 'hidden', method: 'tools/call', params: { name: 'secret_upload', arguments: { blob: 'x'.repeat(LARGE_LINE_BYTES) } } });
    const reply = await bridge.reply('hidden');
    expect(reply.error.data.bridgeCode).toBe('TOOL_FILTERED');
    bridge.send({ jsonrpc: '2.0', id: 'after', method: 'ping' });
    await bridge.reply('after');
    expect(server.posted.some((post) => post.raw.length > LARGE_LINE_BYTES)).toBe(false);
  });

  describe('that is not one JSON-RPC message', () => {
    const pad = 'z'.repeat(LARGE_LINE_BYTES);
    const cases: { title: string; line: Buffer; ids: (string | number | null)[]; code: number; bridgeCode: string; message: RegExp }[] = [
      {
        title: 'not JSON',
        line: Buffer.from(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"${pad}"}`),
        ids: [null],
        code: -32700,
        bridgeCode: 'PARSE_ERROR',
        message: /not valid JSON/,
      },
      {
        title: 'not UTF-8',
        line: Buffer.concat([Buffer.from(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"${pad}`), Buffer.from([0xff]), Buffer.from('"}}')]),
        ids: [1],
        code: -32700,
        bridgeCode: 'PARSE_ERROR',
        message: /not valid UTF-8/,
      },
      {
        title: 'not UTF-8 in its id',
        line: Buffer.concat([Buffer.from(`{"jsonrpc":"2.0","method":"m","params":{"s":"${pad}"},"id":"a`), Buffer.from([0xff]), Buffer.from('"}')]),
        ids: [null],
        code: -32700,
        bridgeCode: 'PARSE_ERROR',
        message: /not valid UTF-8/,
      },
      {
        title: 'a batch',
        line: Buffer.from(
          JSON.stringify([
            { jsonrpc: '2.0', id: 'a', method: 'm', params: { s: pad } },
            { jsonrpc: '2.0', id: 'b', method: 'm' },
          ]),
        ),
        ids: ['a', 'b'],
        code: -32600,
        bridgeCode: 'INVALID_REQUEST',
        message: /batches/,
      },
      {
        title: 'params that are a string',
        line: Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 'p', method: 'm', params: pad })),
        ids: ['p'],
        code: -32600,
        bridgeCode: 'INVALID_REQUEST',
        message: /params must be an object/,
      },
      {
        title: 'without jsonrpc',
        line: Buffer.from(JSON.stringify({ id: 'v', method: 'm', params: { s: pad } })),
        ids: ['v'],
        code: -32600,
        bridgeCode: 'INVALID_REQUEST',
        message: /jsonrpc must be "2.0"/,
      },
    ];
    for (const { title, line, ids, code, bridgeCode, message } of cases) {
      it(`(${title}) is answered as a short one is and never posted`, async () => {
        await startInitialized();
        const before = server.posted.length;
        sendInPieces(bridge, Buffer.concat([line, Buffer.from('\n')]));
        bridge.send({ jsonrpc: '2.0', id: 'probe', method: 'ping' });
        await bridge.reply('probe');
        const errors = bridge.lines.map((text) => JSON.parse(text)).filter((reply) => reply.error !== undefined);
        expect(errors.map((reply) => reply.id)).toEqual(ids);
        for (const reply of errors) expect(reply.error).toMatchObject({ code, message: expect.stringMatching(message), data: { bridgeCode } });
        const postedIds = server.posted.slice(before).map((post) => (JSON.parse(post.raw.toString()) as { id?: unknown }).id);
        expect(postedIds.filter((id) => id !== undefined)).toEqual(['probe']);
      });
    }

    it('(whitespace only) is skipped without a reply, as a blank short line is', async () => {
      await startInitialized();
      bridge.sendRaw(`${' '.repeat(LARGE_LINE_BYTES + 1)}\n`);
      bridge.send({ jsonrpc: '2.0', id: 'probe', method: 'ping' });
      await bridge.reply('probe');
      expect(bridge.lines.map((text) => JSON.parse(text).id)).toEqual([0, 'probe']);
    });
  });
});
