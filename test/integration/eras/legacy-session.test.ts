import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createConfig } from '../../../src/config/config.js';
import { Endpoint } from '../../../src/http/endpoint.js';
import type { JsonObject } from '../../../src/core/json-rpc.js';
import { HEAL_PAUSE_MS, LegacySession, MAX_HEALS_WITHOUT_PROGRESS, saysSessionUnknown } from '../../../src/eras/legacy-session.js';
import type { Reply } from '../../../src/http/reply-reader.js';
import { BodyQueue } from '../../../src/http/body-queue.js';
import type { Dispatcher } from '../../../src/http/undici-parts.js';
import { startFaultServer, type FaultServer } from '../../helpers/fault-server.js';
import { RECONNECT_DELAY_MIN_MS } from '../../../src/http/reconnect-backoff.js';
import { fixedCredential } from '../../../src/credentials/create-credential.js';
import { createDispatcher } from '../../../src/http/dispatcher.js';
import { type HttpExchange } from '../../../src/http/send.js';

const INITIALIZE_PARAMS = { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'unit', version: '1' } };

/** The exchange an initialize response came on: only its headers matter to the session. */
function exchangeWithHeaders(headers: Record<string, string>): HttpExchange {
  const body = new BodyQueue();
  body.end();
  return { status: 200, headers, body };
}

const initializeResponse = (protocolVersion: unknown): JsonObject => ({ jsonrpc: '2.0', id: 1, result: { protocolVersion, capabilities: {} } });
const httpError = (status: number, text = ''): Reply => ({ kind: 'http-error', status, text, parsed: undefined });

/** A logger whose lines the test reads back, and can wait for. */
function recordingLogger() {
  const lines: { msg: string; protocolVersion?: unknown; body?: string }[] = [];
  const waiters: { msg: string; resolve: () => void }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      const line = JSON.parse(chunk.toString()) as { msg: string };
      lines.push(line);
      for (const waiter of waiters.filter((w) => w.msg === line.msg)) waiter.resolve();
      callback();
    },
  });
  const logged = (msg: string) => (lines.some((line) => line.msg === msg) ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ msg, resolve })));
  return { logger: pino({ level: 'debug' }, sink), lines, logged };
}

describe('saysSessionUnknown', () => {
  it.each([
    ['{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: No valid session ID provided"}}', true],
    ['{"error":{"message":"Session not found"}}', true],
    ['{"error":{"message":"session expired"}}', true],
    ['{"error":{"message":"Invalid params"}}', false],
    ['{"error":{"message":"session is fine"}}', false],
    ['{"error":{"code":1}}', false],
    ['Session not found', false], // not JSON: nothing to go by
  ])('%s → %s', (body, expected) => {
    expect(saysSessionUnknown(body)).toBe(expected);
  });
});

describe('LegacySession', () => {
  let server: FaultServer;
  let dispatcher: Dispatcher;
  let session: LegacySession;
  let lines: { msg: string; protocolVersion?: unknown; body?: string }[];
  let logged: (msg: string) => Promise<void>;
  let serverMessages: JsonObject[];

  beforeEach(async () => {
    server = await startFaultServer({ sessionId: 'session-2' });
    const config = createConfig({ options: { url: server.url }, env: {}, readTextFile: () => '' });
    dispatcher = createDispatcher({ connectTimeoutMs: config.connectTimeoutMs, env: {} });
    const recording = recordingLogger();
    lines = recording.lines;
    logged = recording.logged;
    serverMessages = [];
    session = new LegacySession({
      endpoint: new Endpoint(config, dispatcher, {}, fixedCredential(config)),
      logger: recording.logger,
      maxMessageBytes: 1024 * 1024,
      redact: (text) => text,
      onServerMessage: (message) => (serverMessages.push(message), Promise.resolve()),
    });
  });
  afterEach(async () => {
    await session.close(1000);
    await dispatcher.close();
    await server.close();
  });

  it('holds later messages back while an initialize is in flight, and releases them when it ends', async () => {
    expect(session.ready(), 'nothing to wait for before an initialize').toBeUndefined();
    session.beginInitialize(INITIALIZE_PARAMS);
    let released = false;
    const waiting = session.ready()!.then(() => (released = true));
    await Promise.resolve();
    expect(released).toBe(false);
    session.beginInitialize(INITIALIZE_PARAMS); // a second initialize releases the first's waiters
    await waiting;
    session.endInitialize();
    session.endInitialize();
    expect(session.ready(), 'nothing to wait for once the initialize ended').toBeUndefined();
  });

  it('adopts the session id and version of an initialize response, and sends them on everything but initialize', () => {
    const message = initializeResponse('2025-06-18');
    expect(session.onResponse('initialize', message, exchangeWithHeaders({ 'mcp-session-id': 'session-1' }))).toBe(message);
    expect(session.established).toBe(true);
    expect(session.sessionId).toBe('session-1');
    expect(session.headersFor({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, 'tools/list')).toEqual({
      'mcp-method': 'tools/list',
      'mcp-session-id': 'session-1',
      'mcp-protocol-version': '2025-06-18',
    });
    expect(session.headersFor({ jsonrpc: '2.0', id: 3, method: 'initialize', params: INITIALIZE_PARAMS }, 'initialize')).toEqual({
      'mcp-method': 'initialize',
    });
  });

  it('does not echo a session id that is not visible ASCII (transports §Session Management 1)', () => {
    session.onResponse('initialize', initializeResponse('2025-06-18'), exchangeWithHeaders({ 'mcp-session-id': 'has space' }));
    expect(session.sessionId).toBeUndefined();
    expect(session.protocolVersion).toBe('2025-06-18');
    expect(session.headers()).toEqual({ 'mcp-protocol-version': '2025-06-18' });
  });

  it.each([
    ['a number', 20250618],
    ['a value with a newline', '2025-06-18\r\nx-injected: 1'],
    ['an empty string', ''],
  ])('answers initialize with REMOTE_BAD_REPLY when the protocolVersion is %s, and adopts nothing', async (_, version) => {
    const reply = session.onResponse('initialize', initializeResponse(version), exchangeWithHeaders({ 'mcp-session-id': 'session-1' }));
    expect(reply).toMatchObject({ id: 1, error: { code: -31006 } });
    expect(session.established).toBe(false);
    expect(session.sessionId).toBeUndefined();
    await logged('the server named a protocol version that cannot be sent as a header');
  });

  it('leaves responses to other methods, errors and initialize without an exchange untouched', () => {
    const error = { jsonrpc: '2.0', id: 1, error: { code: -32600, message: 'no' } };
    expect(session.onResponse('initialize', error, exchangeWithHeaders({}))).toBe(error);
    const replay = initializeResponse('2025-06-18');
    expect(session.onResponse('initialize', replay, undefined)).toBe(replay);
    expect(session.established).toBe(false);
  });

  it('counts a 404, or a 400 saying the session is unknown, as expiry only when a session id was sent', () => {
    const sent = { 'mcp-session-id': 'session-1' };
    expect(session.isExpired(httpError(404), sent)).toBe(true);
    expect(session.isExpired(httpError(400, '{"error":{"message":"Session not found"}}'), sent)).toBe(true);
    expect(session.isExpired(httpError(400, '{"error":{"message":"Invalid params"}}'), sent)).toBe(false);
    expect(session.isExpired(httpError(500), sent)).toBe(false);
    expect(session.isExpired(httpError(404), {})).toBe(false);
    expect(session.isExpired({ kind: 'accepted', status: 202 }, sent)).toBe(false);
  });

  it('cannot heal a session without an initialize to replay', async () => {
    session.onResponse('initialize', initializeResponse('2025-06-18'), exchangeWithHeaders({ 'mcp-session-id': 'session-1' }));
    await expect(session.heal({ 'mcp-session-id': 'session-1' })).rejects.toMatchObject({
      code: 'SESSION_LOST',
      message: expect.stringContaining('no initialize to replay'),
    });
  });

  it('does nothing to heal a request sent with a session that was already replaced, or with none', async () => {
    session.onResponse('initialize', initializeResponse('2025-06-18'), exchangeWithHeaders({ 'mcp-session-id': 'session-1' }));
    await expect(session.heal({ 'mcp-session-id': 'older' })).resolves.toBeUndefined();
    await expect(session.heal({})).resolves.toBeUndefined();
    expect(server.requests).toEqual([]);
  });

  it('heals by replaying initialize, adopts the new session, sends initialized, and DELETEs the old one', async () => {
    session.beginInitialize(INITIALIZE_PARAMS);
    session.onResponse('initialize', initializeResponse('2025-06-18'), exchangeWithHeaders({ 'mcp-session-id': 'session-1' }));
    session.endInitialize();
    const concurrent = [session.heal({ 'mcp-session-id': 'session-1' }), session.heal({ 'mcp-session-id': 'session-1' })];
    await Promise.all(concurrent);
    expect(session.sessionId).toBe('session-2');
    const deleted = await server.received((request) => request.method === 'DELETE');
    expect(deleted[0]!.headers['mcp-session-id']).toBe('session-1');
    const posts = server.requests.filter((request) => request.method === 'POST');
    expect(posts.map((request) => request.rpcMethod)).toEqual(['initialize', 'notifications/initialized']); // one heal for both callers
    expect(posts[0]!.body.params).toEqual(INITIALIZE_PARAMS);
    expect(posts[0]!.headers['mcp-session-id']).toBeUndefined();
    expect(posts[1]!.headers['mcp-session-id']).toBe('session-2');
    const listen = await server.received((request) => request.method === 'GET');
    expect(listen[0]!.headers['mcp-session-id']).toBe('session-2');
  });

  it('fails the heal with SESSION_LOST when the server refuses the new initialize', async () => {
    session.beginInitialize(INITIALIZE_PARAMS);
    session.onResponse('initialize', initializeResponse('2025-06-18'), exchangeWithHeaders({ 'mcp-session-id': 'session-1' }));
    server.next('initialize', (request) => ({ kind: 'json', body: { jsonrpc: '2.0', id: request.id, error: { code: -32602, message: 'unsupported' } } }));
    await expect(session.heal({ 'mcp-session-id': 'session-1' })).rejects.toMatchObject({
      code: 'SESSION_LOST',
      message: 'the server refused the new initialize',
      context: { serverError: { code: -32602 } },
    });
    expect(session.sessionId).toBe('session-1');
  });

  it('fails the heal with SESSION_LOST naming the cause when the new initialize gets an HTTP error', async () => {
    session.beginInitialize(INITIALIZE_PARAMS);
    session.onResponse('initialize', initializeResponse('2025-06-18'), exchangeWithHeaders({ 'mcp-session-id': 'session-1' }));
    server.next('initialize', () => ({ kind: 'status', status: 503, body: 'restarting', contentType: 'text/plain' }));
    await expect(session.heal({ 'mcp-session-id': 'session-1' })).rejects.toMatchObject({
      code: 'SESSION_LOST',
      message: expect.stringContaining('re-initializing failed'),
      context: { status: 503, hint: expect.stringContaining('restarting') },
    });
  });

  it('opens the listen stream after notifications/initialized, hands its messages on, and stops on a 405 next time', async () => {
    session.onResponse('initialize', initializeResponse('2025-06-18'), exchangeWithHeaders({ 'mcp-session-id': 'session-1' }));
    server.next('GET', () => ({
      kind: 'sse',
      steps: ['data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n', 'data: not json\n\n', 'retry: 1\n\n'],
    }));
    session.onAccepted('notifications/message');
    session.onAccepted('notifications/initialized');
    const gets = await server.received((request) => request.method === 'GET', 2);
    expect(gets[0]!.headers['mcp-session-id']).toBe('session-1');
    expect(serverMessages).toEqual([{ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }]);
    await logged('the server offers no listen stream'); // the second GET got the default 405
    expect(lines.some((line) => line.msg === 'listen stream event is not JSON; skipped')).toBe(true);
  });

  it('heals the session when the listen GET says it is gone (404), then listens on the new one', async () => {
    session.beginInitialize(INITIALIZE_PARAMS);
    session.onResponse('initialize', initializeResponse('2025-06-18'), exchangeWithHeaders({ 'mcp-session-id': 'session-1' }));
    session.endInitialize();
    server.next('GET', () => ({ kind: 'status', status: 404, body: '' }));
    session.onAccepted('notifications/initialized');
    const gets = await server.received((request) => request.method === 'GET', 2);
    expect(gets.map((request) => request.headers['mcp-session-id'])).toEqual(['session-1', 'session-2']);
    expect(server.requests.filter((request) => request.method === 'POST').map((request) => request.rpcMethod)).toEqual([
      'initialize',
      'notifications/initialized',
    ]);
    expect(session.sessionId).toBe('session-2');
  });

  it('logs a listen GET refused with another status, with an excerpt of the body, and tries again later', async () => {
    session.onResponse('initialize', initializeResponse('2025-06-18'), exchangeWithHeaders({ 'mcp-session-id': 'session-1' }));
    server.next('GET', () => ({ kind: 'status', status: 503, body: 'listen is unavailable', contentType: 'text/plain' }));
    session.onAccepted('notifications/initialized');
    await logged('listen stream refused');
    expect(lines.find((line) => line.msg === 'listen stream refused')).toMatchObject({ body: 'listen is unavailable' });
    await server.received((request) => request.method === 'GET', 2); // after the backoff, the default 405 ends it
    await logged('the server offers no listen stream');
  });

  it('waits before a second heal in a row that made no progress', async () => {
    session.beginInitialize(INITIALIZE_PARAMS);
    session.onResponse('initialize', initializeResponse('2025-06-18'), exchangeWithHeaders({ 'mcp-session-id': 'session-1' }));
    await session.heal({ 'mcp-session-id': 'session-1' });
    const started = performance.now();
    await session.heal({ 'mcp-session-id': 'session-2' });
    expect(performance.now() - started).toBeGreaterThanOrEqual(RECONNECT_DELAY_MIN_MS - 5);
    expect(server.requests.filter((request) => request.rpcMethod === 'initialize')).toHaveLength(2);
  });

  it(`stops healing after ${MAX_HEALS_WITHOUT_PROGRESS} heals without progress, for HEAL_PAUSE_MS, then tries once more`, async () => {
    let now = 0;
    const waits: number[] = [];
    const sessionConfig = createConfig({ options: { url: server.url }, env: {}, readTextFile: () => '' });
    const clocked = new LegacySession({
      endpoint: new Endpoint(sessionConfig, dispatcher, {}, fixedCredential(sessionConfig)),
      logger: pino({ level: 'silent' }),
      maxMessageBytes: 1024 * 1024,
      redact: (text) => text,
      onServerMessage: () => Promise.resolve(),
      clock: { now: () => now, sleep: (ms) => (waits.push(ms), (now += ms), Promise.resolve()) },
    });
    clocked.beginInitialize(INITIALIZE_PARAMS);
    clocked.onResponse('initialize', initializeResponse('2025-06-18'), exchangeWithHeaders({ 'mcp-session-id': 'session-1' }));
    // The fault server names every new session session-2; each heal below is for the session in use.
    for (let heal = 0; heal < MAX_HEALS_WITHOUT_PROGRESS; heal++) await clocked.heal({ 'mcp-session-id': clocked.sessionId! });
    expect(waits).toHaveLength(MAX_HEALS_WITHOUT_PROGRESS - 1);
    // A reply that says the session is gone again is no progress.
    clocked.onResponse(
      'tools/call',
      { jsonrpc: '2.0', id: 5, error: { code: -32001, message: 'Session not found' } },
      { ...exchangeWithHeaders({}), status: 404 },
    );
    await expect(clocked.heal({ 'mcp-session-id': clocked.sessionId! })).rejects.toMatchObject({ code: 'SESSION_LOST' });
    now += HEAL_PAUSE_MS;
    await clocked.heal({ 'mcp-session-id': clocked.sessionId! });
    expect(server.requests.filter((request) => request.rpcMethod === 'initialize')).toHaveLength(MAX_HEALS_WITHOUT_PROGRESS + 1);
    // Any other answer is progress: the count starts over, with no wait before the next heal.
    clocked.onResponse('tools/call', { jsonrpc: '2.0', id: 6, result: {} }, exchangeWithHeaders({}));
    waits.length = 0;
    await clocked.heal({ 'mcp-session-id': clocked.sessionId! });
    expect(waits).toEqual([]);
    await clocked.close(1000);
  });

  it('ends the session with DELETE on close, and opens no listen stream afterwards', async () => {
    session.onResponse('initialize', initializeResponse('2025-06-18'), exchangeWithHeaders({ 'mcp-session-id': 'session-1' }));
    await session.close(1000);
    expect(server.requests.map((request) => [request.method, request.headers['mcp-session-id']])).toEqual([['DELETE', 'session-1']]);
    expect(session.sessionId).toBeUndefined();
    session.onAccepted('notifications/initialized');
    await session.close(1000);
    expect(server.requests).toHaveLength(1);
  });
});
