import { describe, expect, it } from 'vitest';
import pino from 'pino';
import { Writable } from 'node:stream';
import { InFlight } from '../../../src/pipeline/in-flight.js';
import { MAX_LOGGED_ID_CHARS, type JsonObject } from '../../../src/core/json-rpc.js';
import { Router } from '../../../src/pipeline/router.js';
import type { EraProtocol } from '../../../src/eras/era.js';

/** A logger whose lines the test reads back. */
function recordingLogger() {
  const lines: { level: number; msg: string; id?: unknown }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(JSON.parse(chunk.toString()) as { level: number; msg: string });
      callback();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), lines };
}

function setUp() {
  const written: { message: JsonObject; serialised: string | Buffer | undefined }[] = [];
  const write = (message: JsonObject, serialised?: string | Buffer) => (written.push({ message, serialised }), Promise.resolve(true));
  const inFlight = new InFlight({ write, requestTimeoutMs: 0 });
  const { logger, lines } = recordingLogger();
  const router = new Router({ inFlight, write, logger });
  const flushLog = () => new Promise((resolve) => setImmediate(resolve));
  return { written, inFlight, router, lines, flushLog };
}

describe('Router.route', () => {
  it('settles another outstanding request with a response that arrives on a different stream, in the server’s own bytes', async () => {
    const { written, inFlight, router } = setUp();
    const owner = inFlight.begin('listen', 'subscriptions/listen', 'modern', { deadline: false })!;
    const other = inFlight.begin(7, 'tools/call', 'modern', { deadline: false })!;
    const serialised = '{"jsonrpc":"2.0","id":7,"result":{"ok":true}}';
    await router.route(JSON.parse(serialised), serialised, owner);
    expect(other.done).toBe(true);
    expect(written).toEqual([{ message: { jsonrpc: '2.0', id: 7, result: { ok: true } }, serialised }]);
    expect(owner.done).toBe(false);
  });

  it('answers another outstanding request with REMOTE_BAD_REPLY when its response has both result and error (JSON-RPC 2.0 §5)', async () => {
    const { written, inFlight, router } = setUp();
    const other = inFlight.begin(8, 'tools/call', 'modern', { deadline: false })!;
    await router.route({ jsonrpc: '2.0', id: 8, result: {}, error: { code: 1, message: 'both' } }, undefined);
    expect(other.done).toBe(true);
    expect(written).toHaveLength(1);
    expect(written[0]!.message).toMatchObject({ id: 8, error: { code: -31006 } });
    expect(JSON.stringify(written[0]!.message)).toContain('both a result and an error');
  });

  it('drops and logs a response for no outstanding request, and one for a request already answered', async () => {
    const { written, inFlight, router, lines, flushLog } = setUp();
    await router.route({ jsonrpc: '2.0', id: 'ghost', result: {} }, undefined);
    const answered = inFlight.begin(9, 'tools/call', 'modern', { deadline: false })!;
    await answered.settle({ jsonrpc: '2.0', id: 9, result: {} });
    await router.route({ jsonrpc: '2.0', id: 9, result: { again: true } }, undefined);
    await router.route({ jsonrpc: '2.0', id: 'ghost', result: {}, error: { code: 1, message: 'x' } }, undefined);
    await flushLog();
    expect(written).toHaveLength(1); // only the settle above
    expect(lines.filter((line) => line.msg.includes('no outstanding request')).map((line) => line.id)).toEqual(['ghost', 9, 'ghost']);
  });

  it('logs a megabyte id of a response for no outstanding request by its length, never whole', async () => {
    const { router, lines, flushLog } = setUp();
    const id = `${'g'.repeat(MAX_LOGGED_ID_CHARS)}${'h'.repeat(1 << 20)}`;
    await router.route({ jsonrpc: '2.0', id, result: {} }, undefined);
    await flushLog();
    expect(lines.map((line) => line.id)).toEqual([`(${id.length} characters)`]);
  });

  it('skips and logs what is not a JSON-RPC message', async () => {
    const { written, router, lines, flushLog } = setUp();
    await router.route({ hello: 'world' }, undefined);
    await router.route('text', undefined);
    await flushLog();
    expect(written).toEqual([]);
    expect(lines.filter((line) => line.msg.includes('not a JSON-RPC message'))).toHaveLength(2);
  });

  it('writes server requests and notifications as they arrive, but nothing more once the owner is done', async () => {
    const { written, inFlight, router } = setUp();
    const owner = inFlight.begin(1, 'tools/call', 'modern', { deadline: false })!;
    const progress = { jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 1 } };
    await router.route(progress, undefined, owner);
    await router.route({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } }, undefined);
    inFlight.cancel(1);
    await router.route(progress, undefined, owner);
    expect(written.map((entry) => entry.message)).toEqual([progress, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } }]);
  });
});

describe('Router.deliver', () => {
  const era = (change: boolean): EraProtocol => ({
    name: 'modern',
    headersFor: () => ({}),
    ready: () => Promise.resolve(),
    isExpired: () => false,
    heal: () => Promise.resolve(),
    onAccepted: () => undefined,
    onResponse: (_method, message) => (change ? { ...message, changed: true } : message),
  });

  it('writes the server’s own bytes when the era left the message as it was', async () => {
    const { written, inFlight, router } = setUp();
    const pending = inFlight.begin(1, 'tools/list', 'modern', { deadline: false })!;
    const message = { jsonrpc: '2.0', id: 1, result: { tools: [] } };
    await router.answer(pending, message, JSON.stringify(message), (shown) => era(false).onResponse('tools/list', shown, undefined));
    expect(written[0]!.serialised).toBe(JSON.stringify(message));
  });

  it('re-serialises when the era changed the message', async () => {
    const { written, inFlight, router } = setUp();
    const pending = inFlight.begin(1, 'tools/list', 'modern', { deadline: false })!;
    const message = { jsonrpc: '2.0', id: 1, result: { tools: [] } };
    await router.answer(pending, message, JSON.stringify(message), (shown) => era(true).onResponse('tools/list', shown, undefined));
    expect(written[0]).toEqual({ message: { ...message, changed: true }, serialised: undefined });
  });
});
