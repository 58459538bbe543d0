// Shared suite, remote faults: every request still gets exactly one reply, stdout stays JSON-RPC, the bridge lives on.

import type { ServerResponse } from 'node:http';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BridgeMode, RunningBridge } from '../helpers/bridge-mode.js';
import {
  freePort,
  result,
  sendJson,
  sendSse,
  sseEvent,
  startMcpServer,
  stdoutProblems,
  type McpServer,
  type RouteContext,
} from '../helpers/hardening-servers.js';

const call = (id: string, name = id, extra: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: {}, ...extra },
});
const okText = (name: string) => ({ content: [{ type: 'text', text: `ok ${name}` }] });
const toolName = ({ message }: RouteContext): string => (typeof message?.params?.name === 'string' ? message.params.name : '');

/** Sends every request at once, then `ok`; resolves with each reply by id once all are in. */
async function runAll(bridge: RunningBridge, ids: string[]): Promise<Map<string, any>> {
  for (const id of ids) bridge.send(call(id));
  const replies = new Map<string, any>();
  await Promise.all(ids.map(async (id) => replies.set(id, await bridge.reply(id, 15_000))));
  bridge.send(call('ok'));
  replies.set('ok', await bridge.reply('ok'));
  return replies;
}

/** The invariants every fault scenario ends with. */
function expectHealthy(bridge: RunningBridge, ids: string[], replies: Map<string, any>): void {
  expect(stdoutProblems(bridge.lines, [...ids, 'ok'])).toEqual([]);
  expect(bridge.running()).toBe(true);
  expect(replies.get('ok')).toMatchObject({ id: 'ok', result: okText('ok') });
}

/** Defines the suite against bridges started by `mode`. */
export function defineFaultsSuite(mode: BridgeMode): void {
  const bridges: RunningBridge[] = [];
  const servers: McpServer[] = [];
  const bridgeFor = (server: McpServer, ...args: string[]) => {
    const bridge = mode.start(['--url', server.url.href, ...args]);
    bridges.push(bridge);
    return bridge;
  };
  afterAll(async () => {
    for (const bridge of bridges) bridge.kill();
    await Promise.all(servers.map((server) => server.close()));
  });

  describe('HTTP error statuses', () => {
    const STATUSES = [400, 401, 403, 404, 405, 406, 409, 413, 415, 429, 431, 500, 502, 503, 504];
    const BODIES = {
      html: (res: ServerResponse, status: number, headers: Record<string, string>) =>
        res.writeHead(status, { 'content-type': 'text/html', ...headers }).end('<html><body><h1>Bad things</h1></body></html>'),
      empty: (res: ServerResponse, status: number, headers: Record<string, string>) => res.writeHead(status, { 'content-length': '0', ...headers }).end(),
      text: (res: ServerResponse, status: number, headers: Record<string, string>) =>
        res.writeHead(status, { 'content-type': 'text/plain', ...headers }).end('upstream said no'),
      jsonrpc: (res: ServerResponse, status: number, headers: Record<string, string>, id: string) =>
        sendJson(res, status, { jsonrpc: '2.0', id, error: { code: -32603, message: `failed with ${status}` } }, headers),
    };
    type BodyKind = keyof typeof BODIES;
    const CHALLENGES: Record<number, string> = {
      401: 'Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"',
      403: 'Bearer error="insufficient_scope", scope="tasks:write", resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"',
    };
    const rows = STATUSES.flatMap((status) => (Object.keys(BODIES) as BodyKind[]).map((kind) => ({ status, kind, id: `status-${status}-${kind}` })));
    let server: McpServer;
    let bridge: RunningBridge;
    let replies: Map<string, any>;

    beforeAll(async () => {
      server = await startMcpServer({
        route: (context) => {
          const row = rows.find((r) => r.id === toolName(context));
          if (row === undefined) return false;
          const headers: Record<string, string> = CHALLENGES[row.status] === undefined ? {} : { 'www-authenticate': CHALLENGES[row.status]! };
          BODIES[row.kind](context.res, row.status, headers, row.id);
          return true;
        },
      });
      servers.push(server);
      bridge = bridgeFor(server);
      replies = await runAll(
        bridge,
        rows.map((r) => r.id),
      );
    });

    it('answers each request exactly once, writes only JSON-RPC lines and serves the next request', () => {
      expectHealthy(
        bridge,
        rows.map((r) => r.id),
        replies,
      );
    });

    it.each(rows)('never retries a $status answer without Retry-After ($kind body)', ({ id }) => {
      expect(server.postsFor(id)).toHaveLength(1);
    });

    // A JSON-RPC error for this id is the server's own answer, passed through unchanged.
    it.each(rows.filter((r) => r.kind === 'jsonrpc'))('forwards the JSON-RPC error body of a $status unchanged', ({ id, status }) => {
      expect(replies.get(id)).toEqual({ jsonrpc: '2.0', id, error: { code: -32603, message: `failed with ${status}` } });
    });

    it.each(rows.filter((r) => r.kind !== 'jsonrpc'))('turns a $status with a $kind body into an error naming the status', ({ id, status }) => {
      const { error } = replies.get(id);
      expect(error.code).toBe(status === 401 || status === 403 ? -31002 : -31001);
      expect(error.data).toMatchObject({ status, bridgeCode: status === 401 || status === 403 ? 'REMOTE_AUTH' : 'REMOTE_HTTP_STATUS' });
      expect(error.data.hint).toEqual(expect.any(String));
    });

    // Authorization §Error Handling: the challenge is what tells the client how to re-authorize.
    it.each(rows.filter((r) => CHALLENGES[r.status] !== undefined && r.kind !== 'jsonrpc'))(
      'surfaces WWW-Authenticate of a $status ($kind body) in the error data',
      ({ id, status }) => {
        expect(replies.get(id).error.data.wwwAuthenticate).toBe(CHALLENGES[status]);
      },
    );

    it.each([413, 431])('names the size problem in the hint of a %i', (status) => {
      expect(replies.get(`status-${status}-html`).error.data.hint).toMatch(/too large/);
    });
  });

  describe('malformed replies, wire faults and event streams', () => {
    const progress = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'p-1', progress: 1, total: 2 } };
    const ok = (id: string) => result(id, okText(id));
    const encoded = (encoding: string, compress: (b: Buffer) => Buffer) => (res: ServerResponse, id: string) => {
      const body = compress(Buffer.from(JSON.stringify(ok(id))));
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': encoding, 'content-length': body.length }).end(body);
    };
    const redirect = (status: number) => (res: ServerResponse) =>
      res.writeHead(status, { location: 'http://127.0.0.1:1/elsewhere', 'content-length': '0' }).end();
    const bridgeCode = (code: string) => (reply: any) => expect(reply.error.data.bridgeCode).toBe(code);
    const answered = (reply: any) => expect(reply.result).toEqual(okText(reply.id));
    type Scenario = { serve: (res: ServerResponse, id: string, server: McpServer) => unknown; expect: (reply: any, server: McpServer) => void };
    const SCENARIOS: Record<string, Scenario> = {
      'json-that-is-html': { serve: (res) => sendJson(res, 200, '<html>proxy error</html>'), expect: bridgeCode('REMOTE_BAD_REPLY') },
      'json-array': { serve: (res, id) => sendJson(res, 200, [ok(id)]), expect: bridgeCode('REMOTE_BAD_REPLY') },
      'response-for-another-id': { serve: (res) => sendJson(res, 200, ok('not-yours')), expect: bridgeCode('REMOTE_BAD_REPLY') },
      'text-html-200': { serve: (res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<p>hi</p>'), expect: bridgeCode('REMOTE_BAD_REPLY') },
      'no-content-type-200': { serve: (res, id) => res.writeHead(200).end(JSON.stringify(ok(id))), expect: bridgeCode('REMOTE_BAD_REPLY') },
      'gzip-unasked': { serve: encoded('gzip', gzipSync), expect: answered },
      'deflate-unasked': { serve: encoded('deflate', deflateSync), expect: answered },
      'br-unasked': { serve: encoded('br', brotliCompressSync), expect: answered },
      'accepted-202': { serve: (res) => res.writeHead(202).end(), expect: bridgeCode('REMOTE_BAD_REPLY') },
      ...Object.fromEntries(
        [301, 302, 303, 307, 308].map((status) => [
          `redirect-${status}`,
          {
            serve: redirect(status),
            expect: (reply: any) =>
              expect(reply.error.data).toMatchObject({ bridgeCode: 'REDIRECT_REFUSED', status, location: 'http://127.0.0.1:1/elsewhere' }),
          },
        ]),
      ),
      'reset-before-headers': { serve: (res) => res.socket!.resetAndDestroy(), expect: bridgeCode('REMOTE_CONNECTION_LOST') },
      'closed-mid-body': {
        serve: (res) => {
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' }).write('{"jsonrpc":"2.0",');
          setImmediate(() => res.destroy());
        },
        expect: bridgeCode('REMOTE_CONNECTION_LOST'),
      },
      'stalled-body': {
        serve: (res) => void res.writeHead(200, { 'content-type': 'application/json' }).write('{"jsonrpc":'),
        expect: bridgeCode('REQUEST_TIMEOUT'),
      },
      'sse-one-byte-chunks': { serve: (res, id) => sendSse(res, `: hello\n\n${sseEvent(progress)}${sseEvent(ok(id))}`, { chunkBytes: 1 }), expect: answered },
      'sse-split-data-lines': {
        serve: (res, id) => sendSse(res, `data: {"jsonrpc":"2.0",\ndata: "id":"${id}",\ndata: "result":${JSON.stringify(okText(id))}}\n\n`),
        expect: answered,
      },
      'sse-comments-and-priming': {
        serve: (res, id) => sendSse(res, `: keep-alive\n\nid: prime-1\ndata:\n\nevent: ping\ndata: x\n\n:\n${sseEvent(ok(id), 'id: 2\n')}`),
        expect: answered,
      },
      'sse-progress-then-end': {
        serve: (res) => sendSse(res, sseEvent(progress)),
        expect: bridgeCode('REMOTE_STREAM_ENDED'),
      },
      'sse-event-over-limit': {
        serve: (res, id) => sendSse(res, sseEvent(result(id, { blob: 'x'.repeat(2 * 1024 * 1024) }))),
        expect: bridgeCode('REPLY_TOO_LARGE'),
      },
      'json-over-limit': { serve: (res, id) => sendJson(res, 200, result(id, { blob: 'x'.repeat(2 * 1024 * 1024) })), expect: bridgeCode('REPLY_TOO_LARGE') },
      'rate-limited-once': {
        serve: (res, id, server) =>
          server.postsFor(id).length === 1 ? res.writeHead(429, { 'retry-after': '0' }).end('slow down') : sendJson(res, 200, ok(id)),
        expect: (reply, server) => (answered(reply), expect(server.postsFor(reply.id)).toHaveLength(2)),
      },
      'unavailable-until-a-past-date': {
        serve: (res, id, server) =>
          server.postsFor(id).length === 1
            ? res.writeHead(503, { 'retry-after': new Date(Date.now() - 5000).toUTCString() }).end()
            : sendJson(res, 200, ok(id)),
        expect: (reply, server) => (answered(reply), expect(server.postsFor(reply.id)).toHaveLength(2)),
      },
      'rate-limited-forever': {
        serve: (res) => res.writeHead(429, { 'retry-after': '0' }).end(),
        // Bounded count: the first try and three retries, then the 429 is the answer.
        expect: (reply, server) => (expect(reply.error.data).toMatchObject({ status: 429 }), expect(server.postsFor(reply.id)).toHaveLength(4)),
      },
      'retry-after-an-hour': {
        serve: (res) => res.writeHead(503, { 'retry-after': '3600' }).end(),
        expect: (reply, server) => (expect(reply.error.data).toMatchObject({ status: 503 }), expect(server.postsFor(reply.id)).toHaveLength(1)),
      },
      'retry-after-past-the-deadline': {
        serve: (res) => res.writeHead(503, { 'retry-after': '20' }).end(),
        // The wait would end after the request deadline: the 503 is the answer now, not a timeout later.
        expect: (reply, server) => (
          expect(reply.error.data).toMatchObject({ bridgeCode: 'REMOTE_HTTP_STATUS', status: 503 }),
          expect(server.postsFor(reply.id)).toHaveLength(1)
        ),
      },
    };
    const ids = Object.keys(SCENARIOS);
    let server: McpServer;
    let bridge: RunningBridge;
    let replies: Map<string, any>;

    beforeAll(async () => {
      server = await startMcpServer({
        route: async (context) => {
          const scenario = SCENARIOS[toolName(context)];
          if (scenario === undefined) return false;
          await scenario.serve(context.res, context.message.id, server);
          return true;
        },
      });
      servers.push(server);
      bridge = bridgeFor(server, '--request-timeout', '4000', '--max-message-bytes', String(1024 * 1024));
      replies = await runAll(bridge, ids);
    });

    it('answers each request exactly once, writes only JSON-RPC lines and serves the next request', () => {
      expectHealthy(bridge, ids, replies);
    });

    it.each(ids)('handles %s', (id) => {
      SCENARIOS[id]!.expect(replies.get(id), server);
    });

    it.each(['reset-before-headers', 'closed-mid-body', 'stalled-body', 'sse-progress-then-end'])(
      'never sends %s again: the request may have been delivered',
      (id) => {
        expect(server.postsFor(id)).toHaveLength(1);
      },
    );

    it('forwards the progress a stream carried before it ended without the response', () => {
      const progressAt = bridge.lines.findIndex((line) => line.includes('"notifications/progress"'));
      const replyAt = bridge.lines.findIndex((line) => line.includes('"id":"sse-progress-then-end"'));
      expect(progressAt).toBeGreaterThanOrEqual(0);
      expect(progressAt).toBeLessThan(replyAt);
    });
  });

  describe('connection-level faults', () => {
    it('answers a request the server accepted but never read with a timeout, then serves the next one', async () => {
      const server = await startMcpServer({ keepAlive: false });
      servers.push(server);
      server.connectionFaults.push((socket) => socket.pause());
      const bridge = bridgeFor(server, '--request-timeout', '1500');
      const replies = await runAll(bridge, ['silent']);
      expect(replies.get('silent').error.data.bridgeCode).toBe('REQUEST_TIMEOUT');
      expectHealthy(bridge, ['silent'], replies);
    });

    it('does not retry a connection reset right after it was accepted: the request may have left', async () => {
      const server = await startMcpServer({ keepAlive: false });
      servers.push(server);
      server.connectionFaults.push((socket) => socket.resetAndDestroy());
      const bridge = bridgeFor(server);
      const replies = await runAll(bridge, ['reset-on-accept']);
      expect(replies.get('reset-on-accept').error.data.bridgeCode).toBe('REMOTE_CONNECTION_LOST');
      expect(server.connections).toBe(2); // one for the reset request, one for `ok`
      expectHealthy(bridge, ['reset-on-accept'], replies);
    });

    it('answers a refused connection with a hint once its retries are spent', async () => {
      const bridge = mode.start(['--url', `http://127.0.0.1:${await freePort()}/mcp`]);
      bridges.push(bridge);
      bridge.send(call('refused'));
      const reply = await bridge.reply('refused');
      expect(reply.error.data).toMatchObject({ bridgeCode: 'REMOTE_UNREACHABLE', hint: expect.stringMatching(/--url/) });
      expect(stdoutProblems(bridge.lines, ['refused'])).toEqual([]);
      expect(bridge.running()).toBe(true);
    });

    it('retries a refused connection, which provably never reached the server, and succeeds once it listens', async () => {
      const port = await freePort();
      const bridge = mode.start(['--url', `http://127.0.0.1:${port}/mcp`, '--log-level', 'debug']);
      bridges.push(bridge);
      bridge.send(call('late-server'));
      await bridge.waitForLog(/connection failed before sending; retrying/);
      const server = await startMcpServer({ port });
      servers.push(server);
      const replies = new Map([['late-server', await bridge.reply('late-server')]]);
      bridge.send(call('ok'));
      replies.set('ok', await bridge.reply('ok'));
      expect(replies.get('late-server')).toMatchObject({ result: okText('late-server') });
      expect(server.postsFor('late-server')).toHaveLength(1);
      expectHealthy(bridge, ['late-server'], replies);
    });

    it('survives the server going away after the handshake and coming back on the same port', async () => {
      const first = await startMcpServer({ sessions: true, keepAlive: false });
      const bridge = bridgeFor(first, '--log-level', 'debug');
      bridge.send({
        jsonrpc: '2.0',
        id: 'init',
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      });
      await bridge.reply('init');
      bridge.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      await first.waitForRequest((r) => r.message?.method === 'notifications/initialized');
      await first.close();
      bridge.send(call('while-away'));
      await bridge.waitForLog(/connection failed before sending; retrying/);
      // The new process knows no session: its 404 makes the bridge initialize again (transports §Session Management).
      const second = await startMcpServer({ sessions: true, keepAlive: false, port: first.port });
      servers.push(second);
      const replies = new Map([['while-away', await bridge.reply('while-away')]]);
      bridge.send(call('ok'));
      replies.set('ok', await bridge.reply('ok'));
      expect(replies.get('while-away')).toMatchObject({ result: okText('while-away') });
      expect(second.requests.some((r) => r.message?.method === 'initialize')).toBe(true);
      expectHealthy(bridge, ['init', 'while-away'], replies);
    });
  });

  describe('a 20 MB event', () => {
    it('arrives whole on one stdout line', async () => {
      const blob = 'y'.repeat(20 * 1024 * 1024);
      const server = await startMcpServer({
        route: ({ res, message }) => (message?.params?.name === 'big' ? (void sendSse(res, sseEvent(result(message.id, { blob }))), true) : false),
      });
      servers.push(server);
      const bridge = bridgeFor(server);
      bridge.send(call('big'));
      await bridge.waitForLineCount(1, 20_000);
      const reply = JSON.parse(bridge.lines[0]!);
      expect(reply.id).toBe('big');
      expect(reply.result.blob.length).toBe(blob.length);
      bridge.send(call('ok'));
      await bridge.waitForLineCount(2);
      expect(JSON.parse(bridge.lines[1]!)).toMatchObject({ id: 'ok', result: okText('ok') });
    });
  });
}
