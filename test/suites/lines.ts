// Shared suite: every stdin line that is not one JSON-RPC 2.0 message gets exactly the reply it should, and costs nothing else.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OVERSIZED_HEAD_BYTES } from '../../src/stdio/head-id.js';
import { startFaultServer, type FaultServer } from '../helpers/fault-server.js';
import { expectCleanEnd, type BridgeMode, type RunningBridge } from '../helpers/bridge-mode.js';

/** The --max-line-bytes every bridge here runs with. */
const MAX_LINE_BYTES = 4096;
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;

/** A valid request sent after each bad line: it must still be forwarded and answered. */
const probe = { jsonrpc: '2.0', id: 'probe', method: 'tools/call', params: { name: 'echo', arguments: { text: 'still here' } } };

/** A request whose serialised line is exactly `bytes` long. */
function requestOfBytes(id: string, bytes: number): string {
  const empty = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text: '' } } });
  return JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x'.repeat(bytes - empty.length) } } });
}

function errorLine(id: string | number | null, code: number) {
  return { jsonrpc: '2.0', id, error: expect.objectContaining({ code, message: expect.any(String) }) };
}

interface BadLine {
  title: string;
  line: string;
  /** The ids of the error replies, in order; each is -32600 unless `code` says otherwise. */
  ids: (string | number | null)[];
  code?: number;
}

const badLines: BadLine[] = [
  { title: 'a line that is not JSON', line: 'hello bridge', ids: [null], code: PARSE_ERROR },
  { title: 'a JSON text cut short', line: '{"jsonrpc":"2.0","id":1,"method":', ids: [null], code: PARSE_ERROR },
  {
    title: 'a JSON array whose elements have usable ids',
    line: JSON.stringify([
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      { jsonrpc: '2.0', id: 'two', method: 'ping' },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2.5, method: 'ping' },
      { id: 3 },
    ]),
    ids: [1, 'two', 3],
  },
  { title: 'an empty JSON array', line: '[]', ids: [null] },
  {
    title: 'a JSON array without usable ids',
    line: '[1,"x",null,{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":null,"method":"ping"}]',
    ids: [null],
  },
  { title: 'a JSON number', line: '42', ids: [null] },
  { title: 'a JSON string', line: '"tools/list"', ids: [null] },
  { title: 'JSON null', line: 'null', ids: [null] },
  { title: 'a message with jsonrpc "1.0"', line: '{"jsonrpc":"1.0","id":7,"method":"ping"}', ids: [7] },
  { title: 'a message without jsonrpc', line: '{"id":"no-version","method":"ping"}', ids: ['no-version'] },
  { title: 'a message with jsonrpc as a number', line: '{"jsonrpc":2.0,"id":8,"method":"ping"}', ids: [8] },
  { title: 'a request with id null', line: '{"jsonrpc":"2.0","id":null,"method":"ping"}', ids: [null] },
  { title: 'a request with a fractional id', line: '{"jsonrpc":"2.0","id":1.5,"method":"ping"}', ids: [null] },
  { title: 'a request with an object id', line: '{"jsonrpc":"2.0","id":{"n":1},"method":"ping"}', ids: [null] },
  { title: 'a request with a boolean id', line: '{"jsonrpc":"2.0","id":true,"method":"ping"}', ids: [null] },
  { title: 'a request whose method is a number', line: '{"jsonrpc":"2.0","id":0,"method":42}', ids: [0] },
  { title: 'a request whose method is null', line: '{"jsonrpc":"2.0","id":"m","method":null}', ids: ['m'] },
  { title: 'a request whose params are an array', line: '{"jsonrpc":"2.0","id":-5,"method":"ping","params":[1,2]}', ids: [-5] },
  { title: 'a request whose params are a string', line: '{"jsonrpc":"2.0","id":"p","method":"ping","params":"x"}', ids: ['p'] },
  { title: 'a request whose params are null', line: '{"jsonrpc":"2.0","id":"pn","method":"ping","params":null}', ids: ['pn'] },
  { title: 'a message that is neither request, notification nor response', line: '{"jsonrpc":"2.0","id":"what"}', ids: ['what'] },
  { title: 'a line one byte over --max-line-bytes', line: requestOfBytes('too-long', MAX_LINE_BYTES + 1), ids: ['too-long'] },
  // A raw NUL (any control character) may not stand in a JSON string (RFC 8259 §7): not JSON, so no id is read.
  {
    title: 'a request with a raw NUL in a string',
    line: '{"jsonrpc":"2.0","id":"nul","method":"ping","params":{"s":"a\u0000b"}}',
    ids: [null],
    code: PARSE_ERROR,
  },
  { title: 'a request followed by a NUL', line: '{"jsonrpc":"2.0","id":"nul","method":"ping"}\u0000', ids: [null], code: PARSE_ERROR },
];

/** A line from text pieces and raw byte pieces (numbers): the bytes are sent as they are. */
const bytesOf = (...pieces: (string | number[])[]) =>
  Buffer.concat(pieces.map((piece) => (typeof piece === 'string' ? Buffer.from(piece, 'utf8') : Buffer.from(piece))));
const BROKEN = [0xc3, 0x28]; // a two-byte lead followed by "(": not UTF-8
const REPLACEMENT = [0xef, 0xbf, 0xbd]; // U+FFFD sent as its own UTF-8 bytes

interface NotUtf8Line {
  title: string;
  line: Buffer;
  /** The id the -32700 reply carries. */
  id: string | number | null;
}

const notUtf8Lines: NotUtf8Line[] = [
  { title: 'a number id beside a broken string', line: bytesOf('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"s":"', BROKEN, '"}}'), id: 7 },
  {
    title: 'a string id, the broken byte after it',
    line: bytesOf('{"jsonrpc":"2.0","id":"req-1","method":"ping","params":{"s":"', [0xff], '"}}'),
    id: 'req-1',
  },
  { title: 'an id written with an escape', line: bytesOf('{"jsonrpc":"2.0","id":"caf\\u00e9","method":"ping","params":{"', BROKEN, '":1}}'), id: 'café' },
  {
    title: 'an id holding U+FFFD as its own bytes',
    line: bytesOf('{"jsonrpc":"2.0","id":"a', REPLACEMENT, 'b","method":"ping","params":{"s":"', [0xfe], '"}}'),
    id: 'a\ufffdb',
  },
  { title: 'a broken byte inside the id', line: bytesOf('{"jsonrpc":"2.0","id":"a', [0xff], 'b","method":"ping"}'), id: null },
  {
    title: 'an id given twice (the last counts, as JSON.parse reads it)',
    line: bytesOf('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"', BROKEN, '"},"id":2}'),
    id: 2,
  },
  { title: 'an id given twice, the last one broken', line: bytesOf('{"jsonrpc":"2.0","id":1,"method":"ping","id":"', BROKEN, '"}'), id: null },
  { title: 'an id that is not usable', line: bytesOf('{"jsonrpc":"2.0","id":1.5,"method":"ping","params":{"s":"', BROKEN, '"}}'), id: null },
  { title: 'a line that is not JSON either', line: bytesOf('{"jsonrpc":"2.0","id":3,"method":"ping","params":{"s":"', BROKEN, '"}'), id: null },
];

/** Defines the suite against bridges started by `mode`. */
export function defineLinesSuite(mode: BridgeMode): void {
  // Every test in this file: a fresh fault server and a bridge with a small line limit.
  let server: FaultServer;
  let bridge: RunningBridge;

  beforeEach(async () => {
    server = await startFaultServer();
    bridge = mode.start(['--url', server.url, '--max-line-bytes', String(MAX_LINE_BYTES)]);
  });

  afterEach(async () => {
    bridge.kill();
    await server.close();
  });

  describe('a bad stdin line', () => {
    for (const { title, line, ids, code = INVALID_REQUEST } of badLines) {
      it(`answers ${title} with ${ids.length === 1 ? 'one error reply' : `${ids.length} error replies`}, posts nothing, and forwards the next request`, async () => {
        bridge.send(line);
        bridge.send(probe);
        const answer = await bridge.reply('probe');
        expect(answer.result).toEqual({ echo: probe.params });

        bridge.end();
        await expectCleanEnd(bridge, 'input-ended');
        expect(bridge.lines.map((text) => JSON.parse(text))).toEqual([...ids.map((id) => errorLine(id, code)), answer]);
        // Only the probe reached the server: a rejected line is never posted.
        expect(server.requests.map((request) => request.body)).toEqual([probe]);
      });
    }
  });

  describe('a stdin line that is not UTF-8', () => {
    for (const { title, line, id } of notUtf8Lines) {
      it(`answers ${title} with -32700 under id ${JSON.stringify(id)}, posts nothing, and forwards the next request`, async () => {
        bridge.sendRaw(Buffer.concat([line, Buffer.from('\n')]));
        bridge.send(probe);
        const answer = await bridge.reply('probe');
        bridge.end();
        await expectCleanEnd(bridge, 'input-ended');
        const [reply, ...rest] = bridge.lines.map((text) => JSON.parse(text));
        expect(reply).toEqual(errorLine(id, PARSE_ERROR));
        expect(reply.error.message).toMatch(/not valid UTF-8/);
        expect(rest).toEqual([answer]);
        expect(server.requests.map((request) => request.body)).toEqual([probe]);
      });
    }
  });

  describe('stdin framing', () => {
    /** Ends stdin and returns every stdout line, parsed, once the bridge has exited. */
    async function allReplies(): Promise<any[]> {
      bridge.end();
      await expectCleanEnd(bridge, 'input-ended');
      return bridge.lines.map((text) => JSON.parse(text));
    }

    it('skips blank and whitespace-only lines without a reply', async () => {
      bridge.sendRaw('\n\n   \n\t\r\n');
      bridge.send(probe);
      const answer = await bridge.reply('probe');
      expect(await allReplies()).toEqual([answer]);
    });

    it('accepts a line ended by CRLF', async () => {
      bridge.sendRaw(`${JSON.stringify(probe)}\r\n`);
      expect((await bridge.reply('probe')).result).toEqual({ echo: probe.params });
      expect(server.requests.map((request) => request.body)).toEqual([probe]);
    });

    it('ignores a UTF-8 byte order mark at the very start of stdin', async () => {
      bridge.sendRaw(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`${JSON.stringify(probe)}\n`)]));
      expect((await bridge.reply('probe')).result).toEqual({ echo: probe.params });
      expect(await allReplies()).toHaveLength(1);
    });

    it('ignores a byte order mark at the start of a later line too, and answers that line under its id', async () => {
      bridge.send({ jsonrpc: '2.0', id: 'first', method: 'ping' });
      await bridge.reply('first');
      bridge.sendRaw(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`${JSON.stringify(probe)}\n`)]));
      expect((await bridge.reply('probe')).result).toEqual({ echo: probe.params });
      expect(await allReplies()).toHaveLength(2);
      expect(server.requests.map((request) => request.body)).toEqual([{ jsonrpc: '2.0', id: 'first', method: 'ping' }, probe]);
    });

    it('decodes a character whose UTF-8 bytes arrive in two separate reads', async () => {
      const first = { jsonrpc: '2.0', id: 'first', method: 'ping' };
      const split = { jsonrpc: '2.0', id: 'split', method: 'tools/call', params: { name: 'echo', arguments: { text: 'Grüße 🌍' } } };
      const bytes = Buffer.from(`${JSON.stringify(split)}\n`, 'utf8');
      const cut = bytes.indexOf(Buffer.from('ü', 'utf8')) + 1; // between the two bytes of "ü"
      // One write holds a whole line and the first half of "ü"; the answer to that line proves the
      // bridge has read it, so the rest can only arrive in a later read.
      bridge.sendRaw(Buffer.concat([Buffer.from(`${JSON.stringify(first)}\n`), bytes.subarray(0, cut)]));
      await bridge.reply('first');
      bridge.sendRaw(bytes.subarray(cut));
      expect((await bridge.reply('split')).result).toEqual({ echo: split.params });
    });

    it('forwards a line of exactly --max-line-bytes', async () => {
      const line = requestOfBytes('at-limit', MAX_LINE_BYTES);
      expect(Buffer.byteLength(line)).toBe(MAX_LINE_BYTES);
      bridge.send(line);
      expect((await bridge.reply('at-limit')).result).toBeDefined();
    });

    it('answers each oversized line once and keeps forwarding the lines around it', async () => {
      bridge.send({ jsonrpc: '2.0', id: 'before', method: 'ping' });
      bridge.send(requestOfBytes('big-1', MAX_LINE_BYTES * 3));
      bridge.send(requestOfBytes('big-2', MAX_LINE_BYTES + 1));
      bridge.send({ jsonrpc: '2.0', id: 'after', method: 'ping' });
      await Promise.all([bridge.reply('before'), bridge.reply('after')]);
      // Each under its id, read from the line's first bytes: the client waits for that id.
      expect(await bridge.reply('big-1')).toEqual(errorLine('big-1', INVALID_REQUEST));
      expect(await bridge.reply('big-2')).toEqual(errorLine('big-2', INVALID_REQUEST));
      const replies = await allReplies();
      expect(replies.filter((reply) => reply.error?.data?.bridgeCode === 'LINE_TOO_LONG')).toHaveLength(2);
      expect(server.requests.map((request) => request.id).sort()).toEqual(['after', 'before']);
    });

    it('answers an oversized line under its numeric id, and with id null when the id stands only past the bytes kept to find it', async () => {
      bridge.send(requestOfBytes('x', MAX_LINE_BYTES * 2).replace('"id":"x"', '"id":7'));
      expect(await bridge.reply(7)).toMatchObject({ error: { code: INVALID_REQUEST, data: { bridgeCode: 'LINE_TOO_LONG' } } });
      const late = JSON.stringify({
        jsonrpc: '2.0',
        method: 'tools/call',
        params: { name: 'echo', arguments: { text: 'y'.repeat(OVERSIZED_HEAD_BYTES + MAX_LINE_BYTES) } },
        id: 'late',
      });
      bridge.send(late);
      bridge.send({ jsonrpc: '2.0', id: 'after-late', method: 'ping' });
      await bridge.reply('after-late');
      const replies = await allReplies();
      expect(replies.filter((reply) => reply.id === null)).toEqual([errorLine(null, INVALID_REQUEST)]);
    });
  });
}
